/**
 * KV cache (BIN_CACHE namespace) in front of the BIN data. Keys:
 *   bins:version                     the data version; no expiry, written only when an import or a
 *                                    rule change bumps it (services/bin-lookup/data-version.ts)
 *   bin:v{version}:{digits ≤ 11}     the longest-prefix BIN record, or a cached miss
 *   range:v{version}:{digits ≤ 11}   account ranges overlapping those digits (enhanced lookup)
 * Keys never hold more than 11 digits of a card number (PCI allows the first 8 at most in clear
 * for display; 11 digits still leave 5+ unknown digits plus the check digit).
 * A cached value is wrapped as {"v": ...} so that a cached miss (null) differs from no entry.
 *
 * Answers are cached best-effort: a read that fails is a miss, a write that fails (KV allows one
 * write a second per key, and every isolate that misses a popular BIN after an import writes it)
 * is logged and forgotten, never the request's failure. Only the version's write is strict: it is
 * the one event every reader waits for.
 */
import { bestEffort, writeThroughThrottle, type Wait } from '../lib/kv-writes';
import type { AccountRange, BinRecord } from './bins';

const VERSION_KEY = 'bins:version';

/** The version KV holds, or null when it holds none (or cannot be read: the caller asks D1). */
export async function getCachedVersion(kv: KVNamespace): Promise<number | null> {
  const text = await bestEffort(kv.get(VERSION_KEY), 'bins_version', null);
  const version = text === null ? NaN : Number(text);
  return Number.isSafeInteger(version) ? version : null;
}

/**
 * Writes the version, without expiry: it changes only when the data does, so no reader ever
 * rewrites it. A write KV refuses for its per-key limit (another bump this second) is tried again.
 */
export async function putCachedVersion(kv: KVNamespace, version: number, wait?: Wait): Promise<void> {
  await writeThroughThrottle(() => kv.put(VERSION_KEY, String(version)), wait);
}

export const binKey = (version: number, digits: string) => `bin:v${version}:${digits}`;
export const rangeKey = (version: number, digits: string) => `range:v${version}:${digits}`;

interface Wrapped<T> {
  v: T;
}

/** The cached value, or undefined when there is no entry or KV could not be read (a cached miss comes back as null). */
async function getWrapped<T>(kv: KVNamespace, key: string, cache: string): Promise<T | undefined> {
  const entry = await bestEffort(kv.get<Wrapped<T>>(key, 'json'), cache, null);
  return entry === null ? undefined : entry.v;
}

/** Never rejects: a cache write KV refuses (or fails) is logged and skipped. */
async function putWrapped<T>(kv: KVNamespace, key: string, value: T, ttlSeconds: number, cache: string): Promise<void> {
  await bestEffort(kv.put(key, JSON.stringify({ v: value } satisfies Wrapped<T>), { expirationTtl: Math.max(60, ttlSeconds) }), cache, undefined);
}

export const getCachedBin = (kv: KVNamespace, key: string) => getWrapped<BinRecord | null>(kv, key, 'bin');
export const putCachedBin = (kv: KVNamespace, key: string, record: BinRecord | null, ttl: number) => putWrapped(kv, key, record, ttl, 'bin');
export const getCachedRanges = (kv: KVNamespace, key: string) => getWrapped<AccountRange[]>(kv, key, 'range');
export const putCachedRanges = (kv: KVNamespace, key: string, ranges: AccountRange[], ttl: number) => putWrapped(kv, key, ranges, ttl, 'range');
