/**
 * BIN lookup: card digits → card metadata. The longest stored prefix wins; merchants with the
 * enhanced lookup also get account ranges, which win field by field; when nothing is stored the
 * brand comes from the IIN ranges. D1 answers are cached in KV under the data version.
 */
import type { Env } from '../../env';
import { detectBrand } from '../../lib/card-brand';
import { MemoryCache } from '../../lib/memory-cache';
import { binKey, getCachedBin, getCachedRanges, putCachedBin, putCachedRanges, rangeKey } from '../../storage/bin-cache';
import {
  findLongestBin,
  findLongestBins,
  findRangesOverlapping,
  findRangesOverlappingMany,
  type AccountRange,
  type BinFields,
  type BinRecord,
} from '../../storage/bins';
import { cacheTtlSeconds, currentDataVersion } from './data-version';

export interface CardMetadata {
  bin: string;
  card_brand?: string;
  issuing_bank?: string;
  card_type?: string;
  card_level_generic?: string;
  country?: string;
  payment_method_type: 'card';
  prepaid?: boolean;
  commercial?: boolean;
  currency?: string;
  /** length of the stored prefix that matched (6, 8, ...), 0 when unknown */
  matched_length: number;
}

export const MIN_PREFIX = 6;
/** Longest stored prefix, and the most digits a cache key ever holds. */
export const MAX_PREFIX = 11;

/** Candidate prefixes of the digits, longest first: "41111111" → 41111111, 4111111, 411111. */
export function prefixesOf(digits: string): string[] {
  const prefixes: string[] = [];
  for (let length = Math.min(MAX_PREFIX, digits.length); length >= MIN_PREFIX; length--) prefixes.push(digits.slice(0, length));
  return prefixes;
}

/**
 * The BIN to answer with. Up to 8 digits are echoed as sent; of a longer input (a full card
 * number) only the first 8 digits when an 8+ digit record matched, else the first 6, as PCI DSS
 * allows to be shown.
 */
export function displayBin(digits: string, matchedLength: number): string {
  if (digits.length <= 8) return digits;
  return digits.slice(0, matchedLength >= 8 ? 8 : 6);
}

/** Pads digits to 19: with 0s for a lower bound, 9s for an upper one. */
export function padTo19(digits: string, fill: '0' | '9'): string {
  return digits.padEnd(19, fill);
}

export async function lookupCard(env: Env, digits: string, options: { enhanced: boolean }): Promise<CardMetadata> {
  const version = await currentDataVersion(env);
  const ttl = cacheTtlSeconds(env);
  const keyDigits = digits.slice(0, MAX_PREFIX);

  const [record, ranges] = await Promise.all([
    cachedBin(env, version, keyDigits, ttl),
    options.enhanced ? cachedRanges(env, version, keyDigits, ttl) : Promise.resolve([]),
  ]);
  const range = options.enhanced ? narrowestRangeHolding(ranges, digits) : undefined;

  return metadataOf(digits, record, range);
}

/**
 * Card metadata for many cards at once (a batch chunk), the same answers as `lookupCard` card by
 * card, straight from D1 in two round trips at most: one query for every card's BIN record and,
 * with the enhanced lookup, one batch of range queries (one per distinct 11-digit block). KV is
 * not used: a chunk of distinct cards would cost a KV read and write per card, and KV allows
 * 1,000 operations per invocation.
 */
export async function lookupCards(
  env: Env,
  digitsList: readonly string[],
  options: { enhanced: boolean },
): Promise<CardMetadata[]> {
  const keys = digitsList.map((digits) => digits.slice(0, MAX_PREFIX));
  const blocks = options.enhanced ? [...new Set(keys)] : [];
  const [records, rangeLists] = await Promise.all([
    findLongestBins(env.DB, keys.map((key) => prefixesOf(key))),
    findRangesOverlappingMany(
      env.DB,
      blocks.map((key) => ({ bin6: key.slice(0, MIN_PREFIX), low: padTo19(key, '0'), high: padTo19(key, '9') })),
    ),
  ]);
  const ranges = new Map(blocks.map((key, i) => [key, rangeLists[i] ?? []]));
  return digitsList.map((digits, i) => {
    const range = options.enhanced ? narrowestRangeHolding(ranges.get(keys[i] ?? '') ?? [], digits) : undefined;
    return metadataOf(digits, records[i] ?? null, range);
  });
}

function metadataOf(digits: string, record: BinRecord | null, range: AccountRange | undefined): CardMetadata {
  let matchedLength = record?.prefix.length ?? 0;
  let fields: Partial<BinFields> = record ?? {};
  if (range) {
    matchedLength = Math.max(matchedLength, sharedPrefixLength(range.low, range.high), MIN_PREFIX);
    fields = mergeFields(fields, range);
  }

  const metadata: CardMetadata = {
    bin: displayBin(digits, matchedLength),
    payment_method_type: 'card',
    matched_length: matchedLength,
  };
  const brand = fields.card_brand ?? detectBrand(digits);
  if (brand) metadata.card_brand = brand;
  if (fields.issuing_bank) metadata.issuing_bank = fields.issuing_bank;
  if (fields.card_type) metadata.card_type = fields.card_type;
  if (fields.card_level_generic) metadata.card_level_generic = fields.card_level_generic;
  if (fields.country) metadata.country = fields.country;
  if (typeof fields.prepaid === 'boolean') metadata.prepaid = fields.prepaid;
  if (typeof fields.commercial === 'boolean') metadata.commercial = fields.commercial;
  if (fields.currency) metadata.currency = fields.currency;
  return metadata;
}

/**
 * Records recently answered in this isolate, under the same versioned keys as KV. Saves KV
 * operations (1,000 per invocation) when a batch looks up the same BINs again and again.
 */
const recent = new MemoryCache<BinRecord | null>(2_000);

async function cachedBin(env: Env, version: number, keyDigits: string, ttl: number): Promise<BinRecord | null> {
  const key = binKey(version, keyDigits);
  const remembered = recent.get(key);
  if (remembered !== undefined) return remembered;
  const cached = await getCachedBin(env.BIN_CACHE, key);
  if (cached !== undefined) return recent.set(key, cached);
  const record = await findLongestBin(env.DB, prefixesOf(keyDigits));
  await putCachedBin(env.BIN_CACHE, key, record, ttl);
  return recent.set(key, record);
}

/** Ranges overlapping the 11-digit block of the digits: the exact match is picked in memory,
 * so the full card number never becomes part of a cache key. */
async function cachedRanges(env: Env, version: number, keyDigits: string, ttl: number): Promise<AccountRange[]> {
  const key = rangeKey(version, keyDigits);
  const cached = await getCachedRanges(env.BIN_CACHE, key);
  if (cached !== undefined) return cached;
  const ranges = await findRangesOverlapping(env.DB, keyDigits.slice(0, MIN_PREFIX), padTo19(keyDigits, '0'), padTo19(keyDigits, '9'));
  await putCachedRanges(env.BIN_CACHE, key, ranges, ttl);
  return ranges;
}

/** The narrowest range that holds every card number starting with these digits. */
export function narrowestRangeHolding(ranges: readonly AccountRange[], digits: string): AccountRange | undefined {
  const low = padTo19(digits, '0');
  const high = padTo19(digits, '9');
  let best: AccountRange | undefined;
  for (const range of ranges) {
    if (range.low > low || range.high < high) continue;
    if (!best || BigInt(range.high) - BigInt(range.low) < BigInt(best.high) - BigInt(best.low)) best = range;
  }
  return best;
}

function sharedPrefixLength(a: string, b: string): number {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

/** The range's known fields replace the BIN record's; its unknown ones leave them as they are. */
function mergeFields(base: Partial<BinFields>, range: AccountRange): Partial<BinFields> {
  const merged: Partial<BinFields> = { ...base };
  for (const key of ['card_brand', 'issuing_bank', 'card_type', 'card_level_generic', 'country', 'currency'] as const) {
    const value = range[key];
    if (value !== null) merged[key] = value;
  }
  if (range.prepaid !== null) merged.prepaid = range.prepaid;
  if (range.commercial !== null) merged.commercial = range.commercial;
  return merged;
}
