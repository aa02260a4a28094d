/**
 * The lookup data version (BINs, account ranges, surcharge rules). Read from KV on the hot path so
 * a warm lookup touches no D1; D1 holds the truth and KV's copy expires after 60 s, so every
 * location picks up a bump within a minute (at once where the bump was written).
 */
import type { Env } from '../../env';
import { getCachedVersion, putCachedVersion } from '../../storage/bin-cache';
import { bumpDataVersion, readDataVersion } from '../../storage/bins';

/**
 * The version is also kept in the isolate for a few seconds: a batch chunk looks up hundreds of
 * cards in one invocation, and KV allows 1,000 operations per invocation.
 */
const MEMO_MS = 5_000;
let memo: { version: number; until: number } | undefined;

function remember(version: number): number {
  memo = { version, until: Date.now() + MEMO_MS };
  return version;
}

export async function currentDataVersion(env: Env): Promise<number> {
  if (memo && Date.now() < memo.until) return memo.version;
  const cached = await getCachedVersion(env.BIN_CACHE);
  if (cached !== null) return remember(cached);
  const version = await readDataVersion(env.DB);
  await putCachedVersion(env.BIN_CACHE, version);
  return remember(version);
}

/** Marks all cached lookup answers stale: call after any change to the lookup data. */
export async function bumpLookupDataVersion(env: Env, now: Date): Promise<number> {
  const version = await bumpDataVersion(env.DB, now.toISOString());
  await putCachedVersion(env.BIN_CACHE, version);
  return remember(version);
}

/** BIN_CACHE_TTL_SECONDS as a number (KV's minimum of 60 s applies). */
export function cacheTtlSeconds(env: Env): number {
  const ttl = Number(env.BIN_CACHE_TTL_SECONDS);
  return Number.isFinite(ttl) && ttl >= 60 ? Math.floor(ttl) : 86_400;
}
