/**
 * Search cursors are signed: `{payload}.{signature}`, the payload being what `encodeCursor` writes
 * (where the last page ended, the window, the first page's count, the filters' hash) and the
 * signature an HMAC-SHA256 over the merchant's id and that payload, under a key derived from
 * CARD_DATA_KEY for this purpose alone (lib/derived-keys.ts). A cursor whose any part was changed,
 * or that another merchant's search issued, fails the check and is refused (400): the count and the
 * window a page answers are only ever ones this service computed for this merchant.
 */
import { derivedHmacKey } from '../../lib/derived-keys';
import { decodeCursor, encodeCursor, type SearchCursor } from './request';

const PURPOSE = 'binbatch search cursor v1';
const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  try {
    return Uint8Array.from(atob(text.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function signed(merchantId: string, payload: string): Uint8Array {
  return encoder.encode(`${merchantId}\u0000${payload}`);
}

export async function signCursor(cardDataKey: string, merchantId: string, cursor: SearchCursor): Promise<string> {
  const payload = encodeCursor(cursor);
  const key = await derivedHmacKey(cardDataKey, PURPOSE);
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed(merchantId, payload)));
  return `${payload}.${base64url(signature)}`;
}

/** The cursor, when this service issued it to this merchant unchanged; null otherwise. */
export async function openCursor(cardDataKey: string, merchantId: string, text: string): Promise<SearchCursor | null> {
  const [payload, signatureText, ...rest] = text.split('.');
  if (payload === undefined || signatureText === undefined || rest.length > 0) return null;
  const signature = fromBase64url(signatureText);
  if (signature === null) return null;
  const key = await derivedHmacKey(cardDataKey, PURPOSE);
  // verify compares in constant time.
  if (!(await crypto.subtle.verify('HMAC', key, signature, signed(merchantId, payload)))) return null;
  return decodeCursor(payload);
}
