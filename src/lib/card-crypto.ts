/**
 * Card data at rest: AES-256-GCM under the CARD_DATA_KEY secret (base64 of 32 bytes), a fresh
 * 96-bit IV per value. Sealed form: "v1.<iv base64url>.<ciphertext+tag base64url>". Optional
 * associated data binds a ciphertext to its owner (e.g. the merchant id), so a blob copied to
 * another merchant's record does not decrypt.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const keys = new Map<string, Promise<CryptoKey>>();

function importKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    const raw = Uint8Array.from(atob(secret), (c) => c.charCodeAt(0));
    if (raw.length !== 32) throw new Error('CARD_DATA_KEY must be base64 of exactly 32 bytes');
    key = crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
    keys.set(secret, key);
  }
  return key;
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

export async function seal(secret: string, plaintext: string, associatedData = ''): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: encoder.encode(associatedData) },
    await importKey(secret),
    encoder.encode(plaintext),
  );
  return `v1.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(ciphertext))}`;
}

/** The plaintext, or null when the value is malformed, tampered with, or sealed for other associated data. */
export async function open(secret: string, sealed: string, associatedData = ''): Promise<string | null> {
  const [version, iv, ciphertext] = sealed.split('.');
  if (version !== 'v1' || !iv || !ciphertext) return null;
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64Url(iv), additionalData: encoder.encode(associatedData) },
      await importKey(secret),
      fromBase64Url(ciphertext),
    );
    return decoder.decode(plaintext);
  } catch {
    return null;
  }
}
