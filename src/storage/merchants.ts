/** D1 access for the `merchants` table. */

export interface Merchant {
  id: string;
  name: string;
  enhanced_bin_lookup: boolean;
  surcharge_rate_bps: number;
  max_credit_amount: number;
  created_at: string;
  updated_at: string;
}

interface MerchantRow {
  id: string;
  name: string;
  enhanced_bin_lookup: number;
  surcharge_rate_bps: number;
  max_credit_amount: number;
  created_at: string;
  updated_at: string;
}

function toMerchant(row: MerchantRow): Merchant {
  return {
    id: row.id,
    name: row.name,
    enhanced_bin_lookup: row.enhanced_bin_lookup === 1,
    surcharge_rate_bps: row.surcharge_rate_bps,
    max_credit_amount: row.max_credit_amount,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function insertMerchantStatement(db: D1Database, merchant: Merchant): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO merchants (id, name, enhanced_bin_lookup, surcharge_rate_bps, created_at, updated_at, max_credit_amount)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
    )
    .bind(
      merchant.id,
      merchant.name,
      merchant.enhanced_bin_lookup ? 1 : 0,
      merchant.surcharge_rate_bps,
      merchant.created_at,
      merchant.updated_at,
      merchant.max_credit_amount,
    );
}

export async function findMerchant(db: D1Database, id: string): Promise<Merchant | null> {
  const row = await db.prepare('SELECT * FROM merchants WHERE id = ?1').bind(id).first<MerchantRow>();
  return row ? toMerchant(row) : null;
}

export interface MerchantChanges {
  name?: string | undefined;
  enhanced_bin_lookup?: boolean | undefined;
  surcharge_rate_bps?: number | undefined;
  max_credit_amount?: number | undefined;
}

/** The update as a statement, for a `db.batch` with other writes; `merchantFromUpdate` reads its result. */
export function updateMerchantStatement(db: D1Database, id: string, changes: MerchantChanges, updatedAt: string): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE merchants SET
         name = COALESCE(?2, name),
         enhanced_bin_lookup = COALESCE(?3, enhanced_bin_lookup),
         surcharge_rate_bps = COALESCE(?4, surcharge_rate_bps),
         updated_at = ?5,
         max_credit_amount = COALESCE(?6, max_credit_amount)
       WHERE id = ?1 RETURNING *`,
    )
    .bind(
      id,
      changes.name ?? null,
      changes.enhanced_bin_lookup === undefined ? null : changes.enhanced_bin_lookup ? 1 : 0,
      changes.surcharge_rate_bps ?? null,
      updatedAt,
      changes.max_credit_amount ?? null,
    );
}

export function merchantFromUpdate(result: D1Result): Merchant | null {
  const row = result.results[0] as MerchantRow | undefined;
  return row ? toMerchant(row) : null;
}
