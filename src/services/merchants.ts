/** Merchants and their API keys: creation, revocation, and turning a raw key into a caller. */
import type { Caller, Env, KeyType } from '../env';
import { randomId, randomSecret, sha256Hex } from '../lib/crypto';
import { MemoryCache } from '../lib/memory-cache';
import type { Clock } from '../lib/time';
import { isoTimestamp } from '../lib/time';
import {
  findCallerByKeyHash,
  insertApiKeyStatement,
  listActiveKeyHashes,
  revokeApiKey,
  type ApiKeyRecord,
} from '../storage/api-keys';
import { dropCachedCallers, getCachedCaller, putCachedCaller } from '../storage/auth-cache';
import {
  insertMerchantStatement,
  merchantFromUpdate,
  updateMerchantStatement,
  type Merchant,
  type MerchantChanges,
} from '../storage/merchants';
import { replaceTokenizerOriginsStatements } from '../storage/tokenizer-origins';

/** Key prefixes tell the type at a glance, as gateways in this family do. */
export const KEY_PREFIX: Record<KeyType, string> = { secret: 'api_', public: 'pub_' };

export interface NewKey {
  record: ApiKeyRecord;
  /** The raw key: returned to the operator once, never stored. */
  key: string;
}

export async function newApiKey(merchantId: string, type: KeyType, now: Date): Promise<NewKey> {
  const key = KEY_PREFIX[type] + randomSecret(24); // 192 random bits
  return {
    key,
    record: {
      id: randomId(20, 'key_'),
      merchant_id: merchantId,
      type,
      key_hash: await sha256Hex(key),
      key_prefix: key.slice(0, 8),
      created_at: isoTimestamp(now),
    },
  };
}

export interface NewMerchantInput {
  name: string;
  enhanced_bin_lookup?: boolean | undefined;
  surcharge_rate_bps?: number | undefined;
  max_credit_amount?: number | undefined;
}

/**
 * An unreferenced credit (money sent to a card without an earlier sale) is capped per merchant:
 * 1,000.00 in the currency's minor units unless the admin API sets another max_credit_amount.
 */
export const DEFAULT_MAX_CREDIT_AMOUNT = 100_000;

export async function createMerchant(
  db: D1Database,
  input: NewMerchantInput,
  clock: Clock,
): Promise<{ merchant: Merchant; secretKey: string; publicKey: string }> {
  const now = clock();
  const merchant: Merchant = {
    id: randomId(20),
    name: input.name,
    enhanced_bin_lookup: input.enhanced_bin_lookup ?? false,
    surcharge_rate_bps: input.surcharge_rate_bps ?? 0,
    max_credit_amount: input.max_credit_amount ?? DEFAULT_MAX_CREDIT_AMOUNT,
    created_at: isoTimestamp(now),
    updated_at: isoTimestamp(now),
  };
  const secret = await newApiKey(merchant.id, 'secret', now);
  const publicKey = await newApiKey(merchant.id, 'public', now);
  await db.batch([
    insertMerchantStatement(db, merchant),
    insertApiKeyStatement(db, secret.record),
    insertApiKeyStatement(db, publicKey.record),
  ]);
  return { merchant, secretKey: secret.key, publicKey: publicKey.key };
}

export async function createKey(db: D1Database, merchantId: string, type: KeyType, clock: Clock): Promise<NewKey> {
  const key = await newApiKey(merchantId, type, clock());
  await insertApiKeyStatement(db, key.record).run();
  return key;
}

/** Revokes a key; false when there is no active key with that id. */
export async function revokeKey(env: Env, keyId: string, clock: Clock): Promise<boolean> {
  const keyHash = await revokeApiKey(env.DB, keyId, isoTimestamp(clock()));
  if (keyHash === null) return false;
  await forgetCallers(env, [keyHash]);
  return true;
}

export async function changeMerchant(
  env: Env,
  merchantId: string,
  changes: MerchantChanges & { tokenizer_origins?: string[] | undefined },
  clock: Clock,
): Promise<Merchant | null> {
  const { tokenizer_origins: origins, ...fields } = changes;
  // One transaction: the merchant row and its tokenizer origins change together or not at all.
  const [updated] = await env.DB.batch([
    updateMerchantStatement(env.DB, merchantId, fields, isoTimestamp(clock())),
    ...(origins ? replaceTokenizerOriginsStatements(env.DB, merchantId, origins) : []),
  ]);
  const merchant = updated ? merchantFromUpdate(updated) : null;
  // Cached callers carry the merchant's flags: drop them so the change applies at once.
  if (merchant) await forgetCallers(env, await listActiveKeyHashes(env.DB, merchantId));
  return merchant;
}

/**
 * Callers recently authenticated in this isolate, for a few seconds: a warm request then reads no
 * KV for its key. Revocation and merchant changes drop the entry here and in KV; elsewhere they
 * apply within this TTL (KV's own propagation takes up to 60 s anyway).
 */
const AUTH_MEMORY_TTL_MS = 10_000;
const recentCallers = new MemoryCache<Caller>(1_000, AUTH_MEMORY_TTL_MS);

/**
 * Bumped each time this isolate forgets callers. An authentication that read a caller before a
 * bump does not keep what it read: a revocation that lands while a request is authenticating
 * must not be undone by that request writing the old caller back into a cache afterwards.
 */
let cacheEpoch = 0;

/**
 * Each raw key's SHA-256, for keys that authenticated in this isolate: a warm request then skips
 * the digest. Only keys that matched a caller are kept, so random keys cannot churn it; a hash
 * outlives its key's revocation harmlessly, as the caller is still looked up by hash below.
 */
const knownKeyHashes = new MemoryCache<string>(1_000);

/** The caller behind a raw API key, or null when the key is unknown or revoked. */
export async function authenticateKey(env: Env, rawKey: string): Promise<Caller | null> {
  const known = knownKeyHashes.get(rawKey);
  const keyHash = known ?? (await sha256Hex(rawKey));
  const caller = await authenticateKeyHash(env, keyHash);
  if (caller && known === undefined) knownKeyHashes.set(rawKey, keyHash);
  return caller;
}

/** The same, from the key's hash: a console session keeps only the hash, and is refused once the key is revoked. */
export async function authenticateKeyHash(env: Env, keyHash: string): Promise<Caller | null> {
  const remembered = recentCallers.get(keyHash);
  if (remembered) return remembered;
  const epoch = cacheEpoch;
  const cached = await getCachedCaller(env.BIN_CACHE, keyHash);
  // Forgotten meanwhile: what KV answered may be the entry the change just deleted; ask D1.
  if (cached && epoch === cacheEpoch) return recentCallers.set(keyHash, cached);
  const caller = await findCallerByKeyHash(env.DB, keyHash);
  if (caller === null) return null;
  await putCachedCaller(env.BIN_CACHE, keyHash, caller);
  if (epoch === cacheEpoch) recentCallers.set(keyHash, caller);
  // A change committed after the read above deleted the cache entries before the writes just
  // made (possibly in another isolate, which no epoch here sees): read again and take the writes
  // back if the key changed meanwhile. A miss costs two D1 reads, once per key per minute or so.
  const current = await findCallerByKeyHash(env.DB, keyHash);
  if (JSON.stringify(current) !== JSON.stringify(caller)) {
    await forgetCallers(env, [keyHash]);
    return current;
  }
  return caller;
}

async function forgetCallers(env: Env, keyHashes: string[]): Promise<void> {
  cacheEpoch++;
  for (const hash of keyHashes) recentCallers.delete(hash);
  await dropCachedCallers(env.BIN_CACHE, keyHashes);
}
