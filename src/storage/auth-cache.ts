/**
 * KV cache of "key hash → caller" in the BIN_CACHE namespace (`auth:{sha256 of the key}`), so that
 * an authenticated request on the hot path (BIN lookup) reads no D1.
 *
 * Entries have no expiry and are written only by the events that change a caller: a key created
 * (written), a merchant changed (rewritten), a key revoked (deleted). Readers never write: an entry
 * every isolate reads, rewritten by each isolate that found it expired, is a write storm that KV
 * answers with 429s (one write per key per second). Those event writes must land (a revoked key's
 * entry must go), so they wait out a 429 and try again; a read that fails is a miss.
 */
import type { Caller } from '../env';
import { bestEffort, writeThroughThrottle, type Wait } from '../lib/kv-writes';

const PREFIX = 'auth:';

export async function getCachedCaller(kv: KVNamespace, keyHash: string): Promise<Caller | null> {
  const cached = await bestEffort(kv.get<Caller>(PREFIX + keyHash, 'json'), 'auth', null);
  // An entry written before a setting joined the caller is a miss (it reads D1 instead).
  return cached && typeof cached.maxCreditAmount === 'number' ? cached : null;
}

export async function putCachedCaller(kv: KVNamespace, keyHash: string, caller: Caller, wait?: Wait): Promise<void> {
  await writeThroughThrottle(() => kv.put(PREFIX + keyHash, JSON.stringify(caller)), wait);
}

export async function dropCachedCaller(kv: KVNamespace, keyHash: string, wait?: Wait): Promise<void> {
  await writeThroughThrottle(() => kv.delete(PREFIX + keyHash), wait);
}
