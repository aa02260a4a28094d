/** D1 access for `tokenizer_origins`: the web origins allowed to frame a merchant's hosted tokenizer. */

export async function listTokenizerOrigins(db: D1Database, merchantId: string): Promise<string[]> {
  const { results } = await db
    .prepare('SELECT origin FROM tokenizer_origins WHERE merchant_id = ?1 ORDER BY position')
    .bind(merchantId)
    .all<{ origin: string }>();
  return results.map((row) => row.origin);
}

export async function hasTokenizerOrigin(db: D1Database, merchantId: string, origin: string): Promise<boolean> {
  const row = await db
    .prepare('SELECT 1 AS found FROM tokenizer_origins WHERE merchant_id = ?1 AND origin = ?2')
    .bind(merchantId, origin)
    .first<{ found: number }>();
  return row !== null;
}

/**
 * Statements replacing a merchant's whole list, for one `db.batch` (one transaction). Each insert
 * is guarded by the merchant's existence, so a batch for an unknown merchant changes nothing and
 * never trips the foreign key.
 */
export function replaceTokenizerOriginsStatements(db: D1Database, merchantId: string, origins: readonly string[]): D1PreparedStatement[] {
  return [
    db.prepare('DELETE FROM tokenizer_origins WHERE merchant_id = ?1').bind(merchantId),
    ...origins.map((origin, position) =>
      db
        .prepare(
          `INSERT INTO tokenizer_origins (merchant_id, position, origin)
           SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM merchants WHERE id = ?1)`,
        )
        .bind(merchantId, position, origin),
    ),
  ];
}
