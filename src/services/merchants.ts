/** Merchants and their API keys: creation, revocation, and turning a raw key into a caller. */
import type { Caller, Env, KeyType } from '../env';
import { randomId, randomSecret, sha256Hex } from '../lib/crypto';
import { realWait, type Wait } from '../lib/kv-writes';
import { HALF, KV } from '../lib/platform-limits';
import { MemoryCache } from '../lib/memory-cache';
import type { Clock } from '../lib/time';
import { isoTimestamp } from '../lib/time';
import {
  findCallerByKeyHash,
  findCallersByKeyHashes,
  insertApiKeyStatement,
  listActiveKeyHashes,
  revokeApiKey,
  type ApiKeyRecord,
} from '../storage/api-keys';
import { dropCachedCaller, getCachedCaller, putCachedCaller } from '../storage/auth-cache';
import {
  insertMerchantStatement,
  merchantFromUpdate,
  updateMerchantStatement,
  type Merchant,
  type MerchantChanges,
} from '../storage/merchants';
import { setRateTierStatement } from '../storage/rate-tiers';
import { readApiShards, setApiShardsStatement } from '../storage/api-shards';
import { AppError } from '../errors';
import { newMerchantSchedule, scheduleAfter, ONE_API_SHARD } from './transactions/api-shards';
import { replaceTokenizerOriginsStatements } from '../storage/tokenizer-origins';
import type { RateTier } from './limits/rate-tiers';

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
  /** Its rate tier (services/limits/rate-tiers.ts); none: the default. */
  rate_tier?: RateTier | undefined;
}

/**
 * An unreferenced credit (money sent to a card without an earlier sale) is capped per merchant:
 * 1,000.00 in the currency's minor units unless the admin API sets another max_credit_amount.
 */
export const DEFAULT_MAX_CREDIT_AMOUNT = 100_000;

export async function createMerchant(
  env: Env,
  input: NewMerchantInput,
  clock: Clock,
): Promise<{ merchant: Merchant; secretKey: string; publicKey: string }> {
  const db = env.DB;
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
  const schedule = input.rate_tier ? newMerchantSchedule(input.rate_tier, now) : undefined;
  await db.batch([
    insertMerchantStatement(db, merchant),
    insertApiKeyStatement(db, secret.record),
    insertApiKeyStatement(db, publicKey.record),
    // No day of its own yet, no caller cached: its tier's sub-shard count holds from today.
    ...(schedule ? [setApiShardsStatement(db, merchant.id, schedule, undefined, merchant.created_at)] : []),
    ...(input.rate_tier ? [setRateTierStatement(db, merchant.id, input.rate_tier, merchant.created_at, schedule)] : []),
  ]);
  await syncCachedCallers(env, [secret.record.key_hash, publicKey.record.key_hash]);
  return { merchant, secretKey: secret.key, publicKey: publicKey.key };
}

export async function createKey(env: Env, merchantId: string, type: KeyType, clock: Clock): Promise<NewKey> {
  const key = await newApiKey(merchantId, type, clock());
  await insertApiKeyStatement(env.DB, key.record).run();
  await syncCachedCallers(env, [key.record.key_hash]);
  return key;
}

/**
 * Revokes a key; false when there is no active key with that id. Its cache entry is dropped; if
 * that fails the call throws (the key is revoked in D1 already), and calling it again for the
 * revoked key drops the entry (and answers false).
 */
export async function revokeKey(env: Env, keyId: string, clock: Clock, wait: Wait = realWait): Promise<boolean> {
  const revocation = await revokeApiKey(env.DB, keyId, isoTimestamp(clock()));
  if (revocation === null) return false;
  await syncCachedCallers(env, [revocation.keyHash], wait);
  return revocation.revoked;
}

export async function changeMerchant(
  env: Env,
  merchantId: string,
  changes: MerchantChanges & { tokenizer_origins?: string[] | undefined; rate_tier?: RateTier | undefined },
  clock: Clock,
): Promise<Merchant | null> {
  const { tokenizer_origins: origins, rate_tier: tier, ...fields } = changes;
  const now = clock();
  const at = isoTimestamp(now);
  // The tier sets the API days' sub-shard count too, from a day every cached caller knows it by.
  const current = tier ? await readApiShards(env.DB, merchantId) : undefined;
  const shards = tier ? scheduleAfter(current ?? ONE_API_SHARD, tier, now) : null;
  if (shards && !shards.ok) {
    throw new AppError('conflict', `rate_tier: the merchant's API sub-shard count changes on ${(current ?? ONE_API_SHARD).from}, and the days a lookup needs must keep one count; a tier with another count can be set from ${shards.retryFrom}T00:00:00Z (docs/limits.md, "Rate tiers")`);
  }
  const shardWrite = shards?.ok && shards.changed ? [setApiShardsStatement(env.DB, merchantId, shards.schedule, current, at)] : [];
  // The tier is written only beside the schedule it was computed for (the one written just before
  // it, or the one read), so two changes at once never keep one's tier and the other's count.
  const scheduleAfterChange = shards?.ok && shards.changed ? shards.schedule : current;
  // One transaction: the merchant row, its tokenizer origins and its tier change together or not at all.
  const [updated, ...rest] = await env.DB.batch([
    updateMerchantStatement(env.DB, merchantId, fields, at),
    ...(origins ? replaceTokenizerOriginsStatements(env.DB, merchantId, origins) : []),
    ...shardWrite,
    ...(tier ? [setRateTierStatement(env.DB, merchantId, tier, at, scheduleAfterChange)] : []),
  ]);
  const merchant = updated ? merchantFromUpdate(updated) : null;
  if (merchant && tier && (rest.at(-1)?.meta.changes ?? 0) === 0) {
    // Another change of the tier landed between the read and this write: neither the tier nor its
    // schedule was kept (the merchant's other fields were).
    await syncCachedCallers(env, await listActiveKeyHashes(env.DB, merchantId));
    throw new AppError('conflict', 'rate_tier: the merchant\'s tier changed at the same time; its other changes were saved; send rate_tier again');
  }
  // Cached callers carry the merchant's flags: rewritten, so the change applies within KV's propagation.
  if (merchant) await syncCachedCallers(env, await listActiveKeyHashes(env.DB, merchantId));
  return merchant;
}

/**
 * Callers recently authenticated in this isolate, for a few seconds: a warm request then reads no
 * KV for its key. Revocation and merchant changes drop the entry here and rewrite KV's; elsewhere
 * they apply within this TTL plus KV's own propagation (up to 60 s).
 */
const AUTH_MEMORY_TTL_MS = 10_000;
const recentCallers = new MemoryCache<Caller>(1_000, AUTH_MEMORY_TTL_MS);

/**
 * Bumped each time this isolate forgets callers. An authentication that read a caller before a
 * bump does not keep what it read: a revocation that lands while a request is authenticating
 * must not be undone by that request remembering the old caller afterwards.
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

/**
 * The same, from the key's hash: a console session keeps only the hash, and is refused once the key
 * is revoked. The isolate's memory, then KV, then D1; a reader never writes KV (storage/auth-cache.ts).
 */
export async function authenticateKeyHash(env: Env, keyHash: string): Promise<Caller | null> {
  const remembered = recentCallers.get(keyHash);
  if (remembered) return remembered;
  const epoch = cacheEpoch;
  const cached = await getCachedCaller(env.BIN_CACHE, keyHash);
  // Forgotten meanwhile: what KV answered may be the entry the change just replaced; ask D1.
  if (cached && epoch === cacheEpoch) return recentCallers.set(keyHash, cached);
  // No entry: a key from before entries were written by events, a location the write has not
  // reached yet, or an unknown key. D1 answers, and the isolate keeps a caller for AUTH_MEMORY_TTL_MS.
  const caller = await findCallerByKeyHash(env.DB, keyHash);
  if (caller && epoch === cacheEpoch) recentCallers.set(keyHash, caller);
  return caller;
}

/** Rounds of "write what D1 says, read D1 again" before a sync gives up. */
const SYNC_ROUNDS = 3;

/** Keys one sync may write: every round writes each once, within half of KV's operations per invocation. */
const MAX_KEYS_SYNCED = Math.floor((KV.operationsPerInvocation * HALF) / SYNC_ROUNDS);

/**
 * Makes the KV entries of these keys say what D1 says (the caller, or nothing for a revoked key),
 * and forgets them in this isolate. Two events on one key close together (a merchant change and a
 * revocation) may write in either order, so D1 is read again after the writes and they are made
 * again if it changed meanwhile: the last sync to finish wrote the latest state. Throws when KV
 * kept refusing (the admin call answers 500 and is safe to repeat).
 *
 * KV operations: one per key per round, at most SYNC_ROUNDS rounds, against KV's 1,000 per
 * invocation (platform-limits.ts): a merchant has a few keys; one with more than MAX_KEYS_SYNCED
 * (166) active keys is refused here rather than failing half way.
 */
async function syncCachedCallers(env: Env, keyHashes: readonly string[], wait: Wait = realWait): Promise<void> {
  if (keyHashes.length === 0) return;
  if (keyHashes.length > MAX_KEYS_SYNCED) {
    throw new Error(`the merchant has ${keyHashes.length} active keys; revoke unused ones (at most ${MAX_KEYS_SYNCED} are kept in the auth cache at once)`);
  }
  let callers = await findCallersByKeyHashes(env.DB, keyHashes);
  for (let round = 1; ; round++) {
    forgetInIsolate(keyHashes);
    await Promise.all(
      keyHashes.map((hash) => {
        const caller = callers.get(hash);
        return caller ? putCachedCaller(env.BIN_CACHE, hash, caller, wait) : dropCachedCaller(env.BIN_CACHE, hash, wait);
      }),
    );
    const latest = await findCallersByKeyHashes(env.DB, keyHashes);
    if (sameCallers(callers, latest, keyHashes)) return forgetInIsolate(keyHashes);
    if (round >= SYNC_ROUNDS) throw new Error('the auth cache could not be brought in line with D1; repeat the call');
    callers = latest;
  }
}

function sameCallers(a: Map<string, Caller>, b: Map<string, Caller>, keyHashes: readonly string[]): boolean {
  return keyHashes.every((hash) => JSON.stringify(a.get(hash) ?? null) === JSON.stringify(b.get(hash) ?? null));
}

function forgetInIsolate(keyHashes: readonly string[]): void {
  cacheEpoch++;
  for (const hash of keyHashes) recentCallers.delete(hash);
}
