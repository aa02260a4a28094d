/**
 * The lookup data version (BINs, account ranges, surcharge rules): every cached answer's key carries
 * it, so a bump makes them all stale at once. D1 holds the truth; KV holds a copy that a warm lookup
 * reads (so it touches no D1), kept in the isolate for a few seconds.
 *
 * Who writes the copy: only the event that changes the version (an import, a rule change), never a
 * reader. The copy has no expiry: one that expired would be rewritten by every isolate that missed
 * it in the same second, and KV refuses a second write to a key within a second (429), so every
 * minute some lookups would fail or, caught, pile up refused writes. A reader that finds no copy
 * (a new namespace, or a location the first write has not reached) reads D1 and keeps that in the
 * isolate for a minute, the time KV itself takes to carry a write everywhere (docs/limits.md,
 * "Caches and KV").
 */
import type { Env } from '../../env';
import { realWait, type Wait } from '../../lib/kv-writes';
import { KV } from '../../lib/platform-limits';
import { getCachedVersion, putCachedVersion } from '../../storage/bin-cache';
import { bumpDataVersion, readDataVersion } from '../../storage/bins';

/**
 * How long the isolate keeps the version: a batch chunk looks up hundreds of cards in one
 * invocation, and KV allows 1,000 operations per invocation. Read from D1 (KV had none), a minute:
 * no reader writes KV, so D1 would otherwise be asked every few seconds by every isolate.
 */
const MEMO_MS = 5_000;
const MEMO_FROM_D1_MS = KV.propagationSeconds * 1_000;
let memo: { version: number; until: number } | undefined;

function remember(version: number, forMs: number = MEMO_MS): number {
  memo = { version, until: Date.now() + forMs };
  return version;
}

export async function currentDataVersion(env: Env): Promise<number> {
  if (memo && Date.now() < memo.until) return memo.version;
  const cached = await getCachedVersion(env.BIN_CACHE);
  if (cached !== null) return remember(cached);
  return remember(await readDataVersion(env.DB), MEMO_FROM_D1_MS);
}

/** Marks all cached lookup answers stale: call after any change to the lookup data. */
export async function bumpLookupDataVersion(env: Env, now: Date, wait: Wait = realWait): Promise<number> {
  const version = await bumpDataVersion(env.DB, now.toISOString());
  remember(version);
  return remember(await publishDataVersion(env, wait));
}

/** Rounds of "write D1's version, read it again" before giving up (each a write a second apart at most). */
const PUBLISH_ROUNDS = 3;

/**
 * Writes D1's version into KV until KV holds the latest: two bumps close together may write in
 * either order, so each writer reads D1 again after its write and writes once more if a newer
 * version came meanwhile (the last writer to finish then wrote the latest). Answers the version
 * written; throws when KV kept refusing (the import answers 500 and is safe to run again).
 */
async function publishDataVersion(env: Env, wait: Wait): Promise<number> {
  let version = await readDataVersion(env.DB);
  for (let round = 1; ; round++) {
    await putCachedVersion(env.BIN_CACHE, version, wait);
    const latest = await readDataVersion(env.DB);
    if (latest === version) return version;
    if (round >= PUBLISH_ROUNDS) throw new Error(`the lookup data version ${latest} could not be written to KV`);
    version = latest;
  }
}

/** BIN_CACHE_TTL_SECONDS as a number (KV's minimum of 60 s applies). */
export function cacheTtlSeconds(env: Env): number {
  const ttl = Number(env.BIN_CACHE_TTL_SECONDS);
  return Number.isFinite(ttl) && ttl >= 60 ? Math.floor(ttl) : 86_400;
}
