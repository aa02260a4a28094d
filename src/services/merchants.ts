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
import { insertMerchantStatement, updateMerchant, type Merchant, type MerchantChanges } from '../storage/merchants';

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
}

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
  changes: MerchantChanges,
  clock: Clock,
): Promise<Merchant | null> {
  const merchant = await updateMerchant(env.DB, merchantId, changes, isoTimestamp(clock()));
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
 * Each raw key's SHA-256, for keys that authenticated in this isolate: a warm request then skips
 * the digest. Only keys that matched a caller are kept, so random keys cannot churn it; a hash
 * outlives its key's revocation harmlessly, as the caller is still looked up by hash below.
 */
const knownKeyHashes = new MemoryCache<string>(1_000);

/** The caller behind a raw API key, or null when the key is unknown or revoked. */
export async function authenticateKey(env: Env, rawKey: string): Promise<Caller | null> {
  const known = knownKeyHashes.get(rawKey);
  const keyHash = known ?? (await sha256Hex(rawKey));
  const caller = await callerByKeyHash(env, keyHash);
  if (caller && known === undefined) knownKeyHashes.set(rawKey, keyHash);
  return caller;
}

async function callerByKeyHash(env: Env, keyHash: string): Promise<Caller | null> {
  const remembered = recentCallers.get(keyHash);
  if (remembered) return remembered;
  const cached = await getCachedCaller(env.BIN_CACHE, keyHash);
  if (cached) return recentCallers.set(keyHash, cached);
  const caller = await findCallerByKeyHash(env.DB, keyHash);
  if (caller) {
    await putCachedCaller(env.BIN_CACHE, keyHash, caller);
    recentCallers.set(keyHash, caller);
  }
  return caller;
}

async function forgetCallers(env: Env, keyHashes: string[]): Promise<void> {
  for (const hash of keyHashes) recentCallers.delete(hash);
  await dropCachedCallers(env.BIN_CACHE, keyHashes);
}
