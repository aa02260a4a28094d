/** D1 access for `merchant_receipt_settings`: what a merchant's receipts show besides its name (docs/receipts.md). */

export interface ReceiptSettings {
  city: string | null;
  region: string | null;
  country: string | null;
  website: string | null;
  support_email: string | null;
  support_phone: string | null;
  refund_policy: string | null;
}

export const RECEIPT_SETTING_FIELDS = ['city', 'region', 'country', 'website', 'support_email', 'support_phone', 'refund_policy'] as const satisfies readonly (keyof ReceiptSettings)[];

export const EMPTY_RECEIPT_SETTINGS: ReceiptSettings = {
  city: null,
  region: null,
  country: null,
  website: null,
  support_email: null,
  support_phone: null,
  refund_policy: null,
};

type SettingsRow = ReceiptSettings & { merchant_id: string; updated_at: string };

function toSettings(row: SettingsRow | null): ReceiptSettings {
  if (!row) return { ...EMPTY_RECEIPT_SETTINGS };
  const settings = { ...EMPTY_RECEIPT_SETTINGS };
  for (const field of RECEIPT_SETTING_FIELDS) settings[field] = row[field];
  return settings;
}

export async function findReceiptSettings(db: D1Database, merchantId: string): Promise<ReceiptSettings> {
  return toSettings(await db.prepare('SELECT * FROM merchant_receipt_settings WHERE merchant_id = ?1').bind(merchantId).first<SettingsRow>());
}

/**
 * A merchant's name, receipt settings and receipt limits (NULL: the default), in one query (the
 * sender's read, once per run); null for an unknown merchant.
 */
export async function findReceiptMerchant(
  db: D1Database,
  merchantId: string,
): Promise<{ name: string; settings: ReceiptSettings; limits: { daily: number | null; per_minute: number | null; per_recipient: number | null } } | null> {
  const row = await db
    .prepare(
      `SELECT m.name AS name, s.*, l.daily AS limit_daily, l.per_minute AS limit_per_minute, l.per_recipient AS limit_per_recipient
       FROM merchants m LEFT JOIN merchant_receipt_settings s ON s.merchant_id = m.id LEFT JOIN merchant_receipt_limits l ON l.merchant_id = m.id
       WHERE m.id = ?1`,
    )
    .bind(merchantId)
    .first<SettingsRow & { name: string; limit_daily: number | null; limit_per_minute: number | null; limit_per_recipient: number | null }>();
  if (!row) return null;
  return {
    name: row.name,
    settings: row.merchant_id === null ? { ...EMPTY_RECEIPT_SETTINGS } : toSettings(row),
    limits: { daily: row.limit_daily, per_minute: row.limit_per_minute, per_recipient: row.limit_per_recipient },
  };
}

/**
 * The settings as a statement (for a `db.batch` with the merchant's other changes): the fields given
 * replace the stored ones, null clears one, a field left out keeps its value.
 */
export function upsertReceiptSettingsStatement(db: D1Database, merchantId: string, changes: Partial<ReceiptSettings>, updatedAt: string): D1PreparedStatement {
  // ?N: the value, ?N+1: whether it was given (a given null clears the field).
  const given = (field: keyof ReceiptSettings) => (field in changes ? 1 : 0);
  const value = (field: keyof ReceiptSettings) => changes[field] ?? null;
  return db
    .prepare(
      `INSERT INTO merchant_receipt_settings (merchant_id, city, region, country, website, support_email, support_phone, refund_policy, updated_at)
       VALUES (?1, ?2, ?4, ?6, ?8, ?10, ?12, ?14, ?16)
       ON CONFLICT (merchant_id) DO UPDATE SET
         city = CASE WHEN ?3 = 1 THEN ?2 ELSE city END,
         region = CASE WHEN ?5 = 1 THEN ?4 ELSE region END,
         country = CASE WHEN ?7 = 1 THEN ?6 ELSE country END,
         website = CASE WHEN ?9 = 1 THEN ?8 ELSE website END,
         support_email = CASE WHEN ?11 = 1 THEN ?10 ELSE support_email END,
         support_phone = CASE WHEN ?13 = 1 THEN ?12 ELSE support_phone END,
         refund_policy = CASE WHEN ?15 = 1 THEN ?14 ELSE refund_policy END,
         updated_at = ?16`,
    )
    .bind(
      merchantId,
      value('city'),
      given('city'),
      value('region'),
      given('region'),
      value('country'),
      given('country'),
      value('website'),
      given('website'),
      value('support_email'),
      given('support_email'),
      value('support_phone'),
      given('support_phone'),
      value('refund_policy'),
      given('refund_policy'),
      updatedAt,
    );
}
