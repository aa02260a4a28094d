/**
 * A merchant's API day in sub-shards (docs/capacity.md, "An API day in sub-shards"). One UTC day of a
 * merchant's POST /api/transaction requests is spread over 1 to MAX_API_SHARDS ledger shards:
 * sub-shard 0 is `{merchant}/api/{day}` (the one shard every day had before sub-shards), sub-shard k
 * is `{merchant}/api/{day}/{k}`, and an id of sub-shard k ends `s{k}` (ledger.ts), so an id still
 * names its shard with no lookup.
 *
 * A key's sub-shard comes from the same SHA-256 digest as its id, so a key replayed on the same day
 * lands in the same sub-shard; it is the digest's first 5 bits scaled to the count, so ids sorted
 * by text are sorted by sub-shard too (a lifecycle file sorted by transaction_id names few shards
 * per chunk: services/batches/file-checks.ts).
 *
 * How many sub-shards a day has comes from the merchant's rate tier (TIER_API_SHARDS), and must be
 * the same for every caller that looks that day up, for as long as its keys can be replayed: a
 * change takes effect from the first UTC day that starts at least SHARD_CHANGE_NOTICE_MS after it
 * (every cached caller has learnt it by then: services/merchants.ts, cached callers are rewritten at
 * once and KV spreads them within 60 s), and the merchant's schedule keeps the count before and
 * from that day, which covers every day a lookup needs (today, yesterday for the idempotency
 * window, tomorrow for the midnight recheck).
 */
import type { ApiShardSchedule } from '../../schemas/rate-tier';
import type { RateTier } from '../../schemas/rate-tier';

/** The most sub-shards a day has (ids carry one digit, s1 to s7). */
export const MAX_API_SHARDS = 8;

/**
 * Sub-shards per tier, sized in docs/capacity.md: a `max` merchant at 10 million a day and 1,000 a
 * second puts 1.25 million a day and 125 a second on each of 8; `high` (250 a second) 125 a second
 * on each of 2; `standard` (50 a second) one shard.
 */
export const TIER_API_SHARDS: Record<RateTier, number> = { standard: 1, high: 2, max: MAX_API_SHARDS };

/** How long before its first day a change of count is made at the latest (the longest a cached caller is stale, 70 s, with room). */
export const SHARD_CHANGE_NOTICE_MS = 3_600_000;

const DAY_MS = 86_400_000;

export type { ApiShardSchedule };

/** A merchant that never changed tier (or a caller cached before sub-shards): one shard a day. */
export const ONE_API_SHARD: ApiShardSchedule = { count: 1, from: '2026-01-01', before: 1 };

/** How many sub-shards `day` (YYYY-MM-DD) has. */
export function shardsOn(schedule: ApiShardSchedule | undefined, day: string): number {
  const { count, from, before } = schedule ?? ONE_API_SHARD;
  const n = day >= from ? count : before;
  return Number.isInteger(n) && n >= 1 && n <= MAX_API_SHARDS ? n : 1;
}

/** The sub-shard of a key whose digest's first byte is `firstByte`, of a day with `count` sub-shards. */
export function subShardOf(firstByte: number, count: number): number {
  return Math.floor(((firstByte & 31) * count) / 32);
}

function utcDayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The first UTC day that starts at least SHARD_CHANGE_NOTICE_MS after `now`. */
export function firstDayAfterNotice(now: Date): string {
  return utcDayOf(Math.ceil((now.getTime() + SHARD_CHANGE_NOTICE_MS) / DAY_MS) * DAY_MS);
}

/** A new merchant has no day yet: its tier's count holds from the start. */
export function newMerchantSchedule(tier: RateTier, now: Date): ApiShardSchedule {
  const count = TIER_API_SHARDS[tier];
  return { count, from: utcDayOf(now.getTime()), before: count };
}

export type ScheduleChange =
  | { ok: true; schedule: ApiShardSchedule; changed: boolean }
  /** The last change is still in play (it took effect today, or takes effect within the notice): a new count from `retryFrom` on. */
  | { ok: false; retryFrom: string };

/**
 * The schedule after a tier change at `now`. Every day a lookup can still need (yesterday on) must
 * keep its count: the new `before` is the count those days had. When they had two (the last change
 * took effect today, or takes effect within the notice), the count cannot change until the day
 * after that change's first day; the tier itself (its rate limit) still changes at once.
 */
export function scheduleAfter(current: ApiShardSchedule, tier: RateTier, now: Date): ScheduleChange {
  const wanted = TIER_API_SHARDS[tier];
  const from = firstDayAfterNotice(now);
  const yesterday = utcDayOf(now.getTime() - DAY_MS);
  // A change not yet in play (its day starts after the notice) is replaced: nobody has used it.
  if (Date.parse(`${current.from}T00:00:00.000Z`) >= now.getTime() + SHARD_CHANGE_NOTICE_MS) {
    if (wanted === current.before) return { ok: true, schedule: { count: current.before, from: current.from, before: current.before }, changed: wanted !== current.count };
    return { ok: true, schedule: { count: wanted, from, before: current.before }, changed: true };
  }
  // Every day from yesterday on has `current.count`.
  if (current.from <= yesterday) {
    if (wanted === current.count) return { ok: true, schedule: current, changed: false };
    return { ok: true, schedule: { count: wanted, from, before: current.count }, changed: true };
  }
  // The last change is in play: yesterday and today (or today and tomorrow) differ.
  if (wanted === current.count) return { ok: true, schedule: current, changed: false };
  return { ok: false, retryFrom: utcDayOf(Date.parse(`${current.from}T00:00:00.000Z`) + DAY_MS) };
}

/** What the admin API answers: the count of today's API day, and the count of the schedule's last change from its day on. */
export function apiShardsView(schedule: ApiShardSchedule | undefined, now: Date): { today: number; count: number; from: string } {
  const current = schedule ?? ONE_API_SHARD;
  return { today: shardsOn(current, utcDayOf(now.getTime())), count: shardsOn(current, current.from), from: current.from };
}
