/** A ledger shard's `pages` table (storage/ledger-shard/schema.ts): the completed records, many per row. */
import { Buffer } from 'node:buffer';
import { DURABLE_OBJECTS, HALF } from '../../lib/platform-limits';
import { hasTables } from './schema';
import { packRecord, withoutHash, type PackedRecord, type StoredTransaction } from './records';

/**
 * A page row's records (and a claim row's, claims.ts) hold at most half of Durable Object SQLite's
 * 2 MB per row, counted in UTF-8 bytes (a character outside ASCII takes 2 to 4).
 */
export const MAX_ROW_JSON_BYTES = DURABLE_OBJECTS.rowBytes * HALF;

/**
 * UTF-8 length of a string, without encoding it: the runtime's native count (a loop here cost a
 * chunk's bulk writes about as much as the writes' JSON). A lone surrogate counts as the 3 bytes of
 * the replacement character it is written as.
 */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Packed records cut into JSON arrays of at most MAX_ROW_JSON_BYTES each, with their keys. */
export function jsonPieces(records: readonly StoredTransaction[]): PagePiece[] {
  const pieces: PagePiece[] = [];
  let keys: string[] = [];
  let json: string[] = [];
  let size = 2;
  const flush = () => {
    if (json.length === 0) return;
    pieces.push({ keys, json: `[${json.join(',')}]` });
    keys = [];
    json = [];
    size = 2;
  };
  for (const record of records) {
    const text = JSON.stringify(packRecord(record));
    const bytes = utf8Bytes(text) + 1;
    if (size + bytes > MAX_ROW_JSON_BYTES) flush();
    keys.push(String(record.record.idempotency_key));
    json.push(text);
    size += bytes;
  }
  flush();
  return pieces;
}

/**
 * Pages looked up by name (`exact`) or as the page at or below a value (`floor`); the answer holds
 * the records and open claims under `keys` (idempotency keys) and the records with `ids`.
 */
export interface ShardQuery {
  keys?: readonly string[];
  ids?: readonly string[];
  exact: readonly string[];
  floor: readonly string[];
  /** Answer the records as they are now (captured, settled, refunded, expired), not as processed. */
  current?: { expiredBefore: string };
}

/** A page row to write: the keys it holds, and its records as JSON (compressed or not by the caller). */
export interface PagePiece {
  keys: string[];
  json: string;
}

export type PageFormat = 'json' | 'gzip';

/** A page row as stored: its records are JSON text, or gzip bytes of it. */
export type PageRow = {
  page: string;
  seq: number;
  format: PageFormat;
  records: string | ArrayBuffer;
  /** The UTC day its money settled on (the settlement's batch_date), and when; null until then. */
  settled_on?: string | null;
  settled_at?: string | null;
};

/** Completed records cut into page rows of at most MAX_ROW_JSON_BYTES of JSON each. */
export function pagePieces(records: readonly StoredTransaction[]): PagePiece[] {
  return jsonPieces(records);
}

/** Appends page rows to a page. */
export function insertPageRows(
  sql: SqlStorage,
  page: string,
  rows: readonly { keys: string[]; format: PageFormat; records: string | Uint8Array; at: string | null; unsettled: boolean }[],
): void {
  let seq = sql.exec<{ next: number }>('SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM pages WHERE page = ?', page).one().next;
  for (const row of rows) {
    sql.exec(
      'INSERT INTO pages (page, seq, keys, format, records, at, unsettled) VALUES (?, ?, ?, ?, ?, ?, ?)',
      page,
      seq++,
      JSON.stringify(row.keys),
      row.format,
      row.records,
      row.at,
      row.unsettled ? 1 : 0,
    );
  }
}

/** The keys recorded in a page (a claim's check; nothing is decompressed). */
export function recordedKeys(sql: SqlStorage, page: string): Set<string> {
  const rows = sql.exec<{ keys: string }>('SELECT keys FROM pages WHERE page = ?', page).toArray();
  return new Set(rows.flatMap((row) => JSON.parse(row.keys) as string[]));
}

/**
 * The rows of pages: `exact` pages by name, and for each `floor` value the page with the greatest
 * name not above it (a batch row's line finds its chunk's page this way).
 */
export function readPageRows(sql: SqlStorage, pages: { exact: readonly string[]; floor: readonly string[] }): PageRow[] {
  if (!hasTables(sql)) return [];
  const names = new Set([...pages.exact, ...floorPages(sql, pages.floor).values()]);
  if (names.size === 0) return [];
  return sql
    .exec<PageRow>('SELECT page, seq, format, records, settled_on, settled_at FROM pages WHERE page IN (SELECT value FROM json_each(?)) ORDER BY page, seq', JSON.stringify([...names]))
    .toArray();
}

/**
 * The page each `floor` value finds (the page with the greatest name not above it), for many values
 * in two statements: the page the lowest value finds, then the names from it to the highest value,
 * matched in order. Floors name a batch shard's chunk pages (an API shard's are looked up by name),
 * so the names read are at most one file's chunk pages (its rows / BATCH_CHUNK_ROWS: 1,000 for
 * 500,000 rows in chunks of 500), some 40 bytes each.
 */
export function floorPages(sql: SqlStorage, floors: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  if (floors.length === 0 || !hasTables(sql)) return found;
  const sorted = [...new Set(floors)].sort(byCodeUnit);
  const lowest = sorted[0] as string;
  const highest = sorted[sorted.length - 1] as string;
  const first = sql.exec<{ page: string | null }>('SELECT MAX(page) AS page FROM pages WHERE page <= ?', lowest).one().page;
  const names = sql
    .exec<{ page: string }>('SELECT DISTINCT page FROM pages WHERE page >= ? AND page <= ? ORDER BY page', first ?? '', highest)
    .toArray()
    .map((row) => row.page);
  let at = -1;
  for (const floor of sorted) {
    while (at + 1 < names.length && byCodeUnit(names[at + 1] as string, floor) <= 0) at++;
    if (at >= 0) found.set(floor, names[at] as string);
  }
  return found;
}

/** SQLite's BINARY order of text (by UTF-8 bytes, which for these ASCII names is by code unit). */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Drops the request hashes kept in plain pages (API transactions; batch pages keep none), at most
 * `limit` rows after `after` in page order; answers the rows changed and the last row passed (null:
 * none left).
 */
export function clearPageHashes(sql: SqlStorage, after: { page: string; seq: number } | null, limit: number): { cleared: number; last: { page: string; seq: number } | null } {
  // Two statements, not `?1 IS NULL OR ...`: with the OR, SQLite scans from the first row every step.
  type Row = { page: string; seq: number; format: PageFormat; records: string | ArrayBuffer };
  const rows = after
    ? sql.exec<Row>('SELECT page, seq, format, records FROM pages WHERE (page, seq) > (?, ?) ORDER BY page, seq LIMIT ?', after.page, after.seq, limit).toArray()
    : sql.exec<Row>('SELECT page, seq, format, records FROM pages ORDER BY page, seq LIMIT ?', limit).toArray();
  let cleared = 0;
  for (const row of rows) {
    if (row.format !== 'json' || String(row.records).startsWith('[["",')) continue;
    const records = (JSON.parse(String(row.records)) as PackedRecord[]).map(withoutHash);
    sql.exec('UPDATE pages SET records = ? WHERE page = ? AND seq = ?', JSON.stringify(records), row.page, row.seq);
    cleared++;
  }
  const last = rows.at(-1);
  return { cleared, last: last ? { page: last.page, seq: last.seq } : null };
}

/** Every page row, in order, `limit` rows at a time from `after` (the archive's reader). */
export function pageBatch(sql: SqlStorage, after: { page: string; seq: number } | null, limit: number): PageRow[] {
  return after === null
    ? sql.exec<PageRow>('SELECT page, seq, format, records, settled_on, settled_at FROM pages ORDER BY page, seq LIMIT ?', limit).toArray()
    : sql
        .exec<PageRow>(
          'SELECT page, seq, format, records, settled_on, settled_at FROM pages WHERE (page, seq) > (?, ?) ORDER BY page, seq LIMIT ?',
          after.page,
          after.seq,
          limit,
        )
        .toArray();
}
