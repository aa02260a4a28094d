/**
 * The webhook signature (docs/webhooks.md), as Stripe's: HMAC-SHA256 keyed with the endpoint's
 * whole `whsec_…` secret over "<unix seconds>.<raw body>", hex, one `v1=` per active secret:
 *
 *   Binbatch-Signature: t=1767225600,v1=5f1c…,v1=a9e0…
 *
 * The timestamp is signed too, so a receiver can refuse an old delivery replayed at it.
 *
 * Beside it, FluidPay's form, which their SDKs' verifier checks (docs/webhooks.md, "FluidPay's
 * verifier"): `Signature: base64url(HMAC-SHA256(secret, raw body))`, unpadded, with the current
 * secret, and `Signature-Previous` with the previous one while a rotation's overlap lasts.
 */
import { toHex } from './crypto';

const encoder = new TextEncoder();

async function hmacSha256(key: string, message: string): Promise<Uint8Array> {
  const cryptoKey = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', cryptoKey, encoder.encode(message)));
}

export async function hmacSha256Hex(key: string, message: string): Promise<string> {
  return toHex(await hmacSha256(key, message));
}

/** FluidPay's `Signature` header for `body` under `secret`: HMAC-SHA256 of the raw body, unpadded base64url. */
export async function fluidPaySignature(secret: string, body: string): Promise<string> {
  const mac = await hmacSha256(secret, body);
  return btoa(String.fromCharCode(...mac)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** FluidPay's headers: `Signature` (current secret) and, during a rotation's overlap, `Signature-Previous`. */
export async function fluidPaySignatureHeaders(secrets: readonly string[], body: string): Promise<Record<string, string>> {
  const [current, previous] = secrets;
  const headers: Record<string, string> = {};
  if (current !== undefined) headers.Signature = await fluidPaySignature(current, body);
  if (previous !== undefined) headers['Signature-Previous'] = await fluidPaySignature(previous, body);
  return headers;
}

/** The header value for `body` sent at `timestamp` (unix seconds), signed with every secret given. */
export async function signatureHeader(secrets: readonly string[], timestamp: number, body: string): Promise<string> {
  const signatures = await Promise.all(secrets.map((secret) => hmacSha256Hex(secret, `${timestamp}.${body}`)));
  return [`t=${timestamp}`, ...signatures.map((signature) => `v1=${signature}`)].join(',');
}
