/** D1 access for `merchant_api_shards`: how many ledger sub-shards a merchant's API days have (services/transactions/api-shards.ts). */
import type { ApiShardSchedule } from '../schemas/rate-tier';

interface ScheduleRow {
  api_shards: number;
  api_shards_from: string;
  api_shards_before: number;
}

export function scheduleOfRow(row: { [K in keyof ScheduleRow]?: ScheduleRow[K] | null } | null | undefined): ApiShardSchedule | undefined {
  if (!row || row.api_shards == null || row.api_shards_from == null || row.api_shards_before == null) return undefined;
  return { count: row.api_shards, from: row.api_shards_from, before: row.api_shards_before };
}

/** The merchant's schedule; undefined when it never had one (one shard a day). */
export async function readApiShards(db: D1Database, merchantId: string): Promise<ApiShardSchedule | undefined> {
  const row = await db
    .prepare('SELECT api_shards, api_shards_from, api_shards_before FROM merchant_api_shards WHERE merchant_id = ?1')
    .bind(merchantId)
    .first<ScheduleRow>();
  return scheduleOfRow(row);
}

/**
 * Sets the schedule, only if the row still holds `expected` (undefined: no row), so that two tier
 * changes at once cannot both compute from the same old schedule: the one that finds it changed
 * writes nothing (its statement's `changes` is 0).
 */
export function setApiShardsStatement(db: D1Database, merchantId: string, schedule: ApiShardSchedule, expected: ApiShardSchedule | undefined, updatedAt: string): D1PreparedStatement {
  if (expected === undefined) {
    return db
      .prepare(
        `INSERT INTO merchant_api_shards (merchant_id, api_shards, api_shards_from, api_shards_before, updated_at)
         SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM merchants WHERE id = ?1)
         ON CONFLICT (merchant_id) DO NOTHING`,
      )
      .bind(merchantId, schedule.count, schedule.from, schedule.before, updatedAt);
  }
  return db
    .prepare(
      `UPDATE merchant_api_shards SET api_shards = ?2, api_shards_from = ?3, api_shards_before = ?4, updated_at = ?5
       WHERE merchant_id = ?1 AND api_shards = ?6 AND api_shards_from = ?7 AND api_shards_before = ?8`,
    )
    .bind(merchantId, schedule.count, schedule.from, schedule.before, updatedAt, expected.count, expected.from, expected.before);
}
