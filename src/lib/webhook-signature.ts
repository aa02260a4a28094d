/**
 * The webhook signature (docs/webhooks.md), as Stripe's: HMAC-SHA256 keyed with the endpoint's
 * whole `whsec_…` secret over "<unix seconds>.<raw body>", hex, one `v1=` per active secret:
 *
 *   Binbatch-Signature: t=1767225600,v1=5f1c…,v1=a9e0…
 *
 * The timestamp is signed too, so a receiver can refuse an old delivery replayed at it.
 */
import { toHex } from './crypto';

const encoder = new TextEncoder();

export async function hmacSha256Hex(key: string, message: string): Promise<string> {
  const cryptoKey = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(new Uint8Array(await crypto.subtle.sign('HMAC', cryptoKey, encoder.encode(message))));
}

/** The header value for `body` sent at `timestamp` (unix seconds), signed with every secret given. */
export async function signatureHeader(secrets: readonly string[], timestamp: number, body: string): Promise<string> {
  const signatures = await Promise.all(secrets.map((secret) => hmacSha256Hex(secret, `${timestamp}.${body}`)));
  return [`t=${timestamp}`, ...signatures.map((signature) => `v1=${signature}`)].join(',');
}
