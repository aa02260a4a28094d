/** D1 access for `merchant_rate_tiers`: a merchant's rate tier (docs/limits.md, "Rate tiers"). */
import type { ApiShardSchedule, RateTier } from '../schemas/rate-tier';

/**
 * Sets the tier (for a db.batch beside the merchant's own writes, before its cached callers are
 * rewritten), only if the merchant's sub-shard schedule is `schedule` (undefined: it has none),
 * the one this tier's change computed or wrote in the same batch. Two changes of tier at once can
 * then never keep one change's tier beside the other's sub-shard count: the one that finds the
 * schedule moved writes no tier (its statement's `changes` is 0).
 */
export function setRateTierStatement(db: D1Database, merchantId: string, tier: RateTier, updatedAt: string, schedule: ApiShardSchedule | undefined): D1PreparedStatement {
  const scheduleHolds = schedule
    ? 'EXISTS (SELECT 1 FROM merchant_api_shards WHERE merchant_id = ?1 AND api_shards = ?4 AND api_shards_from = ?5 AND api_shards_before = ?6)'
    : 'NOT EXISTS (SELECT 1 FROM merchant_api_shards WHERE merchant_id = ?1)';
  const statement = db.prepare(
    `INSERT INTO merchant_rate_tiers (merchant_id, rate_tier, updated_at)
     SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM merchants WHERE id = ?1) AND ${scheduleHolds}
     ON CONFLICT (merchant_id) DO UPDATE SET rate_tier = excluded.rate_tier, updated_at = excluded.updated_at`,
  );
  return schedule ? statement.bind(merchantId, tier, updatedAt, schedule.count, schedule.from, schedule.before) : statement.bind(merchantId, tier, updatedAt);
}

export async function readRateTier(db: D1Database, merchantId: string): Promise<RateTier | null> {
  const row = await db.prepare('SELECT rate_tier FROM merchant_rate_tiers WHERE merchant_id = ?1').bind(merchantId).first<{ rate_tier: RateTier }>();
  return row?.rate_tier ?? null;
}
