/**
 * Stream tokens: a short-lived capability to read one batch's live progress stream, for a browser
 * (`EventSource` cannot send an Authorization header, and a secret key must never be put in a URL).
 *
 *   bst_<expiry, unix seconds>_<base64url HMAC-SHA256("stream:v2:<merchant>:<batch>:<expiry>:<key id>")>
 *
 * Stateless: the HMAC key is derived from CARD_DATA_KEY, nothing is stored, and the token names
 * neither the merchant nor the batch nor the key (the URL it is used on names the batch; the batch
 * names the merchant). It grants nothing but reading that batch's record until it expires, and
 * only while the secret key that minted it is active: the reader checks it against the merchant's
 * active keys, so revoking the key ends the token at once.
 */
import { derivedHmacKey } from './derived-keys';

const PURPOSE = 'binbatch stream token v1';
const encoder = new TextEncoder();

function message(merchantId: string, batchId: string, expires: number, keyId: string): Uint8Array {
  return encoder.encode(`stream:v2:${merchantId}:${batchId}:${expires}:${keyId}`);
}

function toBase64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** A token for this merchant's batch, minted with the secret key `keyId`, valid until `expires`. */
export async function mintStreamToken(masterKey: string, merchantId: string, batchId: string, expires: number, keyId: string): Promise<string> {
  const key = await derivedHmacKey(masterKey, PURPOSE);
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, message(merchantId, batchId, expires, keyId)));
  return `bst_${expires}_${toBase64Url(signature)}`;
}

/**
 * True when the token was minted for this merchant's batch by one of `activeKeyIds` (the
 * merchant's secret keys not revoked) and has not expired at `nowSeconds`.
 */
export async function verifyStreamToken(
  masterKey: string,
  token: string,
  merchantId: string,
  batchId: string,
  nowSeconds: number,
  activeKeyIds: readonly string[],
): Promise<boolean> {
  const match = /^bst_([0-9]{1,12})_([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match?.[1] || !match[2]) return false;
  const expires = Number(match[1]);
  if (expires <= nowSeconds) return false;
  const signature = fromBase64Url(match[2]);
  if (!signature) return false;
  const key = await derivedHmacKey(masterKey, PURPOSE);
  for (const keyId of activeKeyIds) {
    // crypto.subtle.verify compares in constant time.
    if (await crypto.subtle.verify('HMAC', key, signature, message(merchantId, batchId, expires, keyId))) return true;
  }
  return false;
}
