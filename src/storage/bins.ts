/**
 * D1 access for the BIN data: `bins` (prefixes), `bin_account_ranges` (enhanced lookup) and
 * `bin_data_version`. Bulk writes pass a chunk of records as one JSON parameter, expanded by
 * json_each: one bound parameter per statement however many rows, far under D1's limit of 100.
 */

/** The card metadata a BIN record or account range carries; null = unknown. */
export interface BinFields {
  card_brand: string | null;
  issuing_bank: string | null;
  card_type: string | null;
  card_level_generic: string | null;
  country: string | null;
  prepaid: boolean | null;
  commercial: boolean | null;
  currency: string | null;
}

export interface BinRecord extends BinFields {
  prefix: string;
  payment_method_type: string;
}

export interface AccountRange extends BinFields {
  /** 19 digits, padded with 0s. */
  low: string;
  /** 19 digits, padded with 9s. */
  high: string;
}

interface BinFieldsRow {
  card_brand: string | null;
  issuing_bank: string | null;
  card_type: string | null;
  card_level_generic: string | null;
  country: string | null;
  prepaid: number | null;
  commercial: number | null;
  currency: string | null;
}

interface BinRow extends BinFieldsRow {
  prefix: string;
  payment_method_type: string;
}

interface AccountRangeRow extends BinFieldsRow {
  low: string;
  high: string;
}

const flag = (value: number | null): boolean | null => (value === null ? null : value === 1);

function toFields(row: BinFieldsRow): BinFields {
  return {
    card_brand: row.card_brand,
    issuing_bank: row.issuing_bank,
    card_type: row.card_type,
    card_level_generic: row.card_level_generic,
    country: row.country,
    prepaid: flag(row.prepaid),
    commercial: flag(row.commercial),
    currency: row.currency,
  };
}

function toBinRecord(row: BinRow): BinRecord {
  return { prefix: row.prefix, payment_method_type: row.payment_method_type, ...toFields(row) };
}

function toAccountRange(row: AccountRangeRow): AccountRange {
  return { low: row.low, high: row.high, ...toFields(row) };
}

/** Rows per JSON parameter: keeps each statement's parameter well under D1's 1 MB value limit. */
export const ROWS_PER_STATEMENT = 500;

const FIELD_COLUMNS = [
  'card_brand',
  'issuing_bank',
  'card_type',
  'card_level_generic',
  'country',
  'prepaid',
  'commercial',
  'currency',
] as const;

/** json_extract of each field; booleans travel as 1/0 so SQLite stores integers. */
const FIELD_SELECT = FIELD_COLUMNS.map((column) => `json_extract(value, '$.${column}')`).join(', ');
/**
 * An upsert replaces the whole record: a row is one source's statement about a prefix, and mixing
 * fields of two sources (one bank's name, another's country) would answer something neither said.
 */
const FIELD_UPDATE = FIELD_COLUMNS.map((column) => `${column} = excluded.${column}`).join(', ');

function jsonFields(fields: BinFields): Record<string, string | number | null> {
  return {
    card_brand: fields.card_brand,
    issuing_bank: fields.issuing_bank,
    card_type: fields.card_type,
    card_level_generic: fields.card_level_generic,
    country: fields.country,
    prepaid: fields.prepaid === null ? null : fields.prepaid ? 1 : 0,
    commercial: fields.commercial === null ? null : fields.commercial ? 1 : 0,
    currency: fields.currency,
  };
}

function chunked<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/** Upserts of BIN records, ROWS_PER_STATEMENT per statement, for one db.batch. */
export function upsertBinsStatements(db: D1Database, records: readonly BinRecord[], updatedAt: string): D1PreparedStatement[] {
  const statement = db.prepare(
    `INSERT INTO bins (prefix, payment_method_type, ${FIELD_COLUMNS.join(', ')}, updated_at)
     SELECT json_extract(value, '$.prefix'), json_extract(value, '$.payment_method_type'), ${FIELD_SELECT}, ?2
     FROM json_each(?1) WHERE true
     ON CONFLICT (prefix) DO UPDATE SET payment_method_type = excluded.payment_method_type, ${FIELD_UPDATE},
       updated_at = excluded.updated_at`,
  );
  return chunked(records, ROWS_PER_STATEMENT).map((chunk) =>
    statement.bind(
      JSON.stringify(chunk.map((record) => ({ prefix: record.prefix, payment_method_type: record.payment_method_type, ...jsonFields(record) }))),
      updatedAt,
    ),
  );
}

/** Upserts of account ranges, ROWS_PER_STATEMENT per statement, for one db.batch. */
export function upsertRangesStatements(db: D1Database, ranges: readonly AccountRange[], updatedAt: string): D1PreparedStatement[] {
  const statement = db.prepare(
    `INSERT INTO bin_account_ranges (low, high, bin6, ${FIELD_COLUMNS.join(', ')}, updated_at)
     SELECT json_extract(value, '$.low'), json_extract(value, '$.high'), substr(json_extract(value, '$.low'), 1, 6),
       ${FIELD_SELECT}, ?2
     FROM json_each(?1) WHERE true
     ON CONFLICT (low, high) DO UPDATE SET ${FIELD_UPDATE}, updated_at = excluded.updated_at`,
  );
  return chunked(ranges, ROWS_PER_STATEMENT).map((chunk) =>
    statement.bind(JSON.stringify(chunk.map((range) => ({ low: range.low, high: range.high, ...jsonFields(range) }))), updatedAt),
  );
}

/** The record with the longest of these prefixes, or null when none is stored. */
export async function findLongestBin(db: D1Database, prefixes: readonly string[]): Promise<BinRecord | null> {
  if (prefixes.length === 0) return null;
  const placeholders = prefixes.map((_, i) => `?${i + 1}`).join(', ');
  const row = await db
    .prepare(`SELECT * FROM bins WHERE prefix IN (${placeholders}) ORDER BY length(prefix) DESC LIMIT 1`)
    .bind(...prefixes)
    .first<BinRow>();
  return row ? toBinRecord(row) : null;
}

/**
 * For each list of candidate prefixes (longest first), its longest stored prefix: one query for
 * all the lists, the candidates travelling as one JSON parameter.
 */
export async function findLongestBins(
  db: D1Database,
  prefixLists: readonly (readonly string[])[],
): Promise<(BinRecord | null)[]> {
  const candidates = [...new Set(prefixLists.flat())];
  if (candidates.length === 0) return prefixLists.map(() => null);
  const { results } = await db
    .prepare('SELECT * FROM bins WHERE prefix IN (SELECT value FROM json_each(?1))')
    .bind(JSON.stringify(candidates))
    .all<BinRow>();
  const byPrefix = new Map(results.map((row) => [row.prefix, toBinRecord(row)]));
  return prefixLists.map((prefixes) => {
    for (const prefix of prefixes) {
      const record = byPrefix.get(prefix);
      if (record) return record;
    }
    return null;
  });
}

/** Account ranges of one 6-digit BIN that overlap [low, high] (19-digit bounds). */
export async function findRangesOverlapping(db: D1Database, bin6: string, low: string, high: string): Promise<AccountRange[]> {
  const { results } = await db
    .prepare('SELECT * FROM bin_account_ranges WHERE bin6 = ?1 AND low <= ?3 AND high >= ?2 ORDER BY low')
    .bind(bin6, low, high)
    .all<AccountRangeRow>();
  return results.map(toAccountRange);
}

/**
 * `findRangesOverlapping` for many blocks at once, in one statement: the blocks travel as one JSON
 * parameter. (One statement per block, in a batch, made a chunk of 500 cards ~350 statements, and
 * the enhanced lookup ran a batch file far slower than the plain one.)
 */
export async function findRangesOverlappingMany(
  db: D1Database,
  blocks: readonly { bin6: string; low: string; high: string }[],
): Promise<AccountRange[][]> {
  if (blocks.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT blocks.key AS block, ranges.* FROM json_each(?1) AS blocks
       JOIN bin_account_ranges AS ranges
         ON ranges.bin6 = json_extract(blocks.value, '$[0]')
        AND ranges.low <= json_extract(blocks.value, '$[2]')
        AND ranges.high >= json_extract(blocks.value, '$[1]')
       ORDER BY blocks.key, ranges.low`,
    )
    .bind(JSON.stringify(blocks.map((b) => [b.bin6, b.low, b.high])))
    .all<AccountRangeRow & { block: number }>();
  const found: AccountRange[][] = blocks.map(() => []);
  for (const row of results) found[row.block]?.push(toAccountRange(row));
  return found;
}

export async function countBins(db: D1Database): Promise<number> {
  const row = await db.prepare('SELECT COUNT(*) AS n FROM bins').first<{ n: number }>();
  return row?.n ?? 0;
}

export async function readDataVersion(db: D1Database): Promise<number> {
  const row = await db.prepare('SELECT version FROM bin_data_version WHERE id = 1').first<{ version: number }>();
  return row?.version ?? 1;
}

/** Bumps the data version and answers the new one (the row is seeded by schema.sql). */
export async function bumpDataVersion(db: D1Database, updatedAt: string): Promise<number> {
  const row = await db
    .prepare(
      `INSERT INTO bin_data_version (id, version, updated_at) VALUES (1, 2, ?1)
       ON CONFLICT (id) DO UPDATE SET version = version + 1, updated_at = excluded.updated_at
       RETURNING version`,
    )
    .bind(updatedAt)
    .first<{ version: number }>();
  if (!row) throw new Error('bin_data_version: bump returned no row');
  return row.version;
}
