/**
 * KV cache of "key hash → caller" in the BIN_CACHE namespace, so that an authenticated request
 * on the hot path (BIN lookup) reads no D1. Entries are deleted when a key is revoked or its
 * merchant changes; the TTL bounds staleness on other edge locations (KV propagates within ~60 s).
 */
import type { Caller } from '../env';

const PREFIX = 'auth:';
export const AUTH_CACHE_TTL_SECONDS = 60; // KV's minimum TTL

export async function getCachedCaller(kv: KVNamespace, keyHash: string): Promise<Caller | null> {
  const cached = await kv.get<Caller>(PREFIX + keyHash, 'json');
  // An entry written before a setting joined the caller is a miss (at most the TTL after a deploy).
  return cached && typeof cached.maxCreditAmount === 'number' ? cached : null;
}

export async function putCachedCaller(kv: KVNamespace, keyHash: string, caller: Caller): Promise<void> {
  await kv.put(PREFIX + keyHash, JSON.stringify(caller), { expirationTtl: AUTH_CACHE_TTL_SECONDS });
}

export async function dropCachedCallers(kv: KVNamespace, keyHashes: string[]): Promise<void> {
  await Promise.all(keyHashes.map((hash) => kv.delete(PREFIX + hash)));
}
