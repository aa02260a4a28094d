/**
 * Keys derived (HKDF-SHA256) from one master secret, one per purpose. Key separation without
 * another secret to provision: a value sealed or signed for one purpose is useless for another,
 * and the master key (CARD_DATA_KEY) itself is never used for anything but card data.
 */
const encoder = new TextEncoder();
const derived = new Map<string, Promise<Uint8Array>>();

function derive(masterBase64: string, purpose: string): Promise<Uint8Array> {
  const cacheKey = `${purpose}\u0000${masterBase64}`;
  let bytes = derived.get(cacheKey);
  if (!bytes) {
    bytes = (async () => {
      const raw = Uint8Array.from(atob(masterBase64), (c) => c.charCodeAt(0));
      const base = await crypto.subtle.importKey('raw', raw, 'HKDF', false, ['deriveBits']);
      const bits = await crypto.subtle.deriveBits(
        { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: encoder.encode(purpose) },
        base,
        256,
      );
      return new Uint8Array(bits);
    })();
    derived.set(cacheKey, bytes);
  }
  return bytes;
}

/** 32 derived bytes as base64: the form `seal`/`open` (lib/card-crypto) take their key in. */
export async function derivedKeyBase64(masterBase64: string, purpose: string): Promise<string> {
  return btoa(String.fromCharCode(...(await derive(masterBase64, purpose))));
}

/** An HMAC-SHA256 signing key derived for `purpose`. */
export async function derivedHmacKey(masterBase64: string, purpose: string): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', await derive(masterBase64, purpose), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}
