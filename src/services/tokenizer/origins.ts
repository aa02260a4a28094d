/**
 * Who may use a merchant's hosted tokenizer from a browser: the web origins the merchant listed
 * (`tokenizer_origins`). The frame page is served only to those origins (CSP frame-ancestors) and
 * the token endpoint refuses a browser request made for any other parent page.
 */
import type { Env } from '../../env';
import { hasTokenizerOrigin, listTokenizerOrigins } from '../../storage/tokenizer-origins';
import { authenticateKey } from '../merchants';

export function tokenizerOrigins(db: D1Database, merchantId: string): Promise<string[]> {
  return listTokenizerOrigins(db, merchantId);
}

export function isTokenizerOriginAllowed(db: D1Database, merchantId: string, origin: string): Promise<boolean> {
  return hasTokenizerOrigin(db, merchantId, origin);
}

export type FramePolicy =
  | { ok: true; merchantId: string; origins: string[] }
  | { ok: false; reason: 'not_a_public_key' | 'unknown_key' | 'no_origins' };

/**
 * The pages allowed to frame the tokenizer for this public key. Only a public key is accepted:
 * the frame's URL is visible to the page around it, and a secret key there would be leaked.
 */
export async function framePolicy(env: Env, publicKey: string): Promise<FramePolicy> {
  if (!publicKey.startsWith('pub_')) return { ok: false, reason: 'not_a_public_key' };
  const caller = await authenticateKey(env, publicKey);
  if (caller === null) return { ok: false, reason: 'unknown_key' };
  if (caller.keyType !== 'public') return { ok: false, reason: 'not_a_public_key' };
  const origins = await listTokenizerOrigins(env.DB, caller.merchantId);
  if (origins.length === 0) return { ok: false, reason: 'no_origins' };
  return { ok: true, merchantId: caller.merchantId, origins };
}
