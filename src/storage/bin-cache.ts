/**
 * KV cache (BIN_CACHE namespace) in front of the BIN data. Keys:
 *   bins:version                     the data version, 60 s TTL (re-read from D1 after that)
 *   bin:v{version}:{digits ≤ 11}     the longest-prefix BIN record, or a cached miss
 *   range:v{version}:{digits ≤ 11}   account ranges overlapping those digits (enhanced lookup)
 *   surcharge:v{version}:{CC}:{REG}  the surcharge rules of one region
 * Keys never hold more than 11 digits of a card number (PCI allows the first 8 at most in clear
 * for display; 11 digits still leave 5+ unknown digits plus the check digit).
 * A cached value is wrapped as {"v": ...} so that a cached miss (null) differs from no entry.
 */
import type { AccountRange, BinRecord } from './bins';
import type { SurchargeRule } from './surcharge-rules';

const VERSION_KEY = 'bins:version';
/** KV's minimum TTL; bounds how long another location may keep serving the previous version. */
export const VERSION_TTL_SECONDS = 60;

export async function getCachedVersion(kv: KVNamespace): Promise<number | null> {
  const text = await kv.get(VERSION_KEY);
  const version = text === null ? NaN : Number(text);
  return Number.isSafeInteger(version) ? version : null;
}

export async function putCachedVersion(kv: KVNamespace, version: number): Promise<void> {
  await kv.put(VERSION_KEY, String(version), { expirationTtl: VERSION_TTL_SECONDS });
}

export const binKey = (version: number, digits: string) => `bin:v${version}:${digits}`;
export const rangeKey = (version: number, digits: string) => `range:v${version}:${digits}`;
export const surchargeKey = (version: number, country: string, region: string) => `surcharge:v${version}:${country}:${region}`;

interface Wrapped<T> {
  v: T;
}

/** The cached value, or undefined when there is no entry (a cached miss comes back as null). */
async function getWrapped<T>(kv: KVNamespace, key: string): Promise<T | undefined> {
  const entry = await kv.get<Wrapped<T>>(key, 'json');
  return entry === null ? undefined : entry.v;
}

async function putWrapped<T>(kv: KVNamespace, key: string, value: T, ttlSeconds: number): Promise<void> {
  await kv.put(key, JSON.stringify({ v: value } satisfies Wrapped<T>), { expirationTtl: Math.max(60, ttlSeconds) });
}

export const getCachedBin = (kv: KVNamespace, key: string) => getWrapped<BinRecord | null>(kv, key);
export const putCachedBin = (kv: KVNamespace, key: string, record: BinRecord | null, ttl: number) => putWrapped(kv, key, record, ttl);
export const getCachedRanges = (kv: KVNamespace, key: string) => getWrapped<AccountRange[]>(kv, key);
export const putCachedRanges = (kv: KVNamespace, key: string, ranges: AccountRange[], ttl: number) => putWrapped(kv, key, ranges, ttl);
export const getCachedRules = (kv: KVNamespace, key: string) => getWrapped<SurchargeRule[]>(kv, key);
export const putCachedRules = (kv: KVNamespace, key: string, rules: SurchargeRule[], ttl: number) => putWrapped(kv, key, rules, ttl);
