/**
 * A merchant's rate tier, as the admin API takes and answers it (docs/limits.md, "Rate tiers"); what
 * each tier allows is services/limits/rate-tiers.ts.
 */
export const RATE_TIERS = ['standard', 'high', 'max'] as const;
export type RateTier = (typeof RATE_TIERS)[number];
export const DEFAULT_RATE_TIER: RateTier = 'standard';

/**
 * A merchant's API sub-shard count by day (services/transactions/api-shards.ts): `before` for days
 * before `from`, `count` from `from` (a UTC day) on. Stored with the tier, carried on the caller.
 */
export interface ApiShardSchedule {
  count: number;
  from: string;
  before: number;
}
