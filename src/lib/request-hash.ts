/**
 * Fingerprints of requests for idempotency: HMAC-SHA256 of the canonical request under a key
 * derived (HKDF) from CARD_DATA_KEY. Keyed, because the request holds a card number: a plain
 * hash of a card number can be reversed by trying the few million numbers that share its BIN
 * and last four (PCI DSS 3.5.1 asks for keyed hashes). The CVC is left out: sensitive
 * authentication data may not be kept after authorisation in any form, hashed or not (PCI DSS
 * 3.3.1), so a retry that differs only in its CVC is the same request. A fingerprint is kept only
 * for the idempotency window (see src/services/transactions/idempotency.ts).
 */
import { toHex } from './crypto';

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = (async () => {
      const raw = Uint8Array.from(atob(secret), (c) => c.charCodeAt(0));
      const base = await crypto.subtle.importKey('raw', raw, 'HKDF', false, ['deriveKey']);
      return crypto.subtle.deriveKey(
        { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: encoder.encode('binbatch request fingerprint v1') },
        base,
        { name: 'HMAC', hash: 'SHA-256', length: 256 },
        false,
        ['sign'],
      );
    })();
    keys.set(secret, key);
  }
  return key;
}

/** Fields never part of a fingerprint: the card verification code. */
const SENSITIVE_AUTHENTICATION_FIELDS: ReadonlySet<string> = new Set(['cc_cvc']);

/** Canonical form: the fields sorted by name, as JSON, sensitive authentication data left out. */
export function canonicalRequest(fields: Record<string, string | undefined>): string {
  const entries = Object.entries(fields)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && !SENSITIVE_AUTHENTICATION_FIELDS.has(entry[0]))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

export async function requestFingerprint(secret: string, fields: Record<string, string | undefined>): Promise<string> {
  const signature = await crypto.subtle.sign('HMAC', await hmacKey(secret), encoder.encode(canonicalRequest(fields)));
  return toHex(new Uint8Array(signature));
}
