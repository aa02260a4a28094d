/**
 * D1 access for `merchant_receipt_limits`: the receipt budgets an operator set for a merchant (the
 * admin API's `receipt_limits`; docs/receipts.md, "Budgets"). A column left NULL takes the default
 * (services/receipts/budget.ts). One row per merchant, written only by the admin API.
 */

export interface StoredReceiptLimits {
  daily: number | null;
  per_minute: number | null;
  per_recipient: number | null;
}

export const RECEIPT_LIMIT_FIELDS = ['daily', 'per_minute', 'per_recipient'] as const satisfies readonly (keyof StoredReceiptLimits)[];

export async function findReceiptLimits(db: D1Database, merchantId: string): Promise<StoredReceiptLimits> {
  const row = await db.prepare('SELECT daily, per_minute, per_recipient FROM merchant_receipt_limits WHERE merchant_id = ?1').bind(merchantId).first<StoredReceiptLimits>();
  return row ?? { daily: null, per_minute: null, per_recipient: null };
}

/** The fields given replace the stored ones (null: back to the default); a field left out keeps its value. */
export async function upsertReceiptLimits(db: D1Database, merchantId: string, changes: Partial<StoredReceiptLimits>, updatedAt: string): Promise<void> {
  const given = (field: keyof StoredReceiptLimits) => (field in changes ? 1 : 0);
  const value = (field: keyof StoredReceiptLimits) => changes[field] ?? null;
  await db
    .prepare(
      `INSERT INTO merchant_receipt_limits (merchant_id, daily, per_minute, per_recipient, updated_at) VALUES (?1, ?2, ?4, ?6, ?8)
       ON CONFLICT (merchant_id) DO UPDATE SET
         daily = CASE WHEN ?3 = 1 THEN ?2 ELSE daily END,
         per_minute = CASE WHEN ?5 = 1 THEN ?4 ELSE per_minute END,
         per_recipient = CASE WHEN ?7 = 1 THEN ?6 ELSE per_recipient END,
         updated_at = ?8`,
    )
    .bind(merchantId, value('daily'), given('daily'), value('per_minute'), given('per_minute'), value('per_recipient'), given('per_recipient'), updatedAt)
    .run();
}
