/** D1 access for `merchant_rate_tiers`: a merchant's rate tier (docs/limits.md, "Rate tiers"). */
import type { RateTier } from '../schemas/rate-tier';

/** Sets the tier (for a db.batch beside the merchant's own writes, before its cached callers are rewritten). */
export function setRateTierStatement(db: D1Database, merchantId: string, tier: RateTier, updatedAt: string): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO merchant_rate_tiers (merchant_id, rate_tier, updated_at)
       SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM merchants WHERE id = ?1)
       ON CONFLICT (merchant_id) DO UPDATE SET rate_tier = excluded.rate_tier, updated_at = excluded.updated_at`,
    )
    .bind(merchantId, tier, updatedAt);
}

export async function readRateTier(db: D1Database, merchantId: string): Promise<RateTier | null> {
  const row = await db.prepare('SELECT rate_tier FROM merchant_rate_tiers WHERE merchant_id = ?1').bind(merchantId).first<{ rate_tier: RateTier }>();
  return row?.rate_tier ?? null;
}
