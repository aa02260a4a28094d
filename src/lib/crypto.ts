const encoder = new TextEncoder();

/** Lower-case hex SHA-256 of a string (API keys and the admin token are compared this way). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(text));
  return toHex(new Uint8Array(digest));
}

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0');
  return out;
}

/** Compares two secrets in constant time (hashing first makes the lengths equal). */
export async function secretsEqual(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([
    crypto.subtle.digest('SHA-256', encoder.encode(given)),
    crypto.subtle.digest('SHA-256', encoder.encode(expected)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b);
}

const ID_ALPHABET = '0123456789abcdefghijklmnopqrstuv'; // base32, lower case: safe in URLs and CSVs

/** A random identifier: `length` base32 characters (5 bits each), optionally prefixed. */
export function randomId(length = 20, prefix = ''): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let id = prefix;
  for (const byte of bytes) id += ID_ALPHABET[byte & 31];
  return id;
}

/** A random URL-safe secret of `bytes` random bytes (base64url, no padding). */
export function randomSecret(bytes = 24): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
