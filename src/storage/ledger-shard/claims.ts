/**
 * A ledger shard's `claims` table (storage/ledger-shard/schema.ts): the records an attempt is about
 * to send to their processors. A claim is split like a page (pages.ts, `jsonPieces`): each row holds
 * at most MAX_ROW_JSON_BYTES of records, half of SQLite's 2 MB row, so a chunk of 500 rows with every
 * text field at its maximum is several rows, each its own claim.
 */
import { hasTables } from './schema';
import { jsonPieces } from './pages';
import { packRecord, unpackRecord, type PackedRecord, type StoredTransaction } from './records';

/** Requests to claim together, all of one page. */
export interface ClaimRequest {
  page: string;
  entries: readonly StoredTransaction[];
}

export interface ClaimRow {
  id: number;
  page: string;
  createdAt: string;
  entries: StoredTransaction[];
}

export function listClaims(sql: SqlStorage, merchantId: string): ClaimRow[] {
  if (!hasTables(sql)) return [];
  return sql
    .exec<ClaimSql>('SELECT * FROM claims ORDER BY id')
    .toArray()
    .map((row) => claimRowOf(merchantId, row));
}

/** Claims `entries` in rows of at most MAX_ROW_JSON_BYTES; answers each row's id and its entries. */
export function insertClaims(sql: SqlStorage, page: string, createdAt: string, entries: readonly StoredTransaction[]): { id: number; entries: StoredTransaction[] }[] {
  const rows: { id: number; entries: StoredTransaction[] }[] = [];
  let from = 0;
  for (const piece of jsonPieces(entries)) {
    const id = sql.exec<{ id: number }>('INSERT INTO claims (page, created_at, entries) VALUES (?, ?, ?) RETURNING id', page, createdAt, piece.json).one().id;
    rows.push({ id, entries: entries.slice(from, from + piece.keys.length) });
    from += piece.keys.length;
  }
  return rows;
}

/** Rewrites a claim with the entries still open, or deletes it when none are. */
export function updateClaim(sql: SqlStorage, id: number, entries: readonly StoredTransaction[]): void {
  if (entries.length === 0) sql.exec('DELETE FROM claims WHERE id = ?', id);
  else sql.exec('UPDATE claims SET entries = ? WHERE id = ?', JSON.stringify(entries.map(packRecord)), id);
}

/**
 * One step of the abandoned-claims sweep: claim rows created at or before `before`, after row
 * `afterId`, by id, at most `limit` (the caller's bound). Rows are in id order, so the scan starts at
 * the cursor and ends after `limit` matches: a step reads a bounded part of the table however many
 * claims are open.
 */
export function listClaimsPage(sql: SqlStorage, merchantId: string, afterId: number, before: string, limit: number): ClaimRow[] {
  if (!hasTables(sql)) return [];
  return sql
    .exec<ClaimSql>('SELECT * FROM claims WHERE id > ? AND created_at <= ? ORDER BY id LIMIT ?', afterId, before, limit)
    .toArray()
    .map((row) => claimRowOf(merchantId, row));
}

/** When the oldest open claim was made; null when none is open (one aggregate, no rows answered). */
export function oldestClaimAt(sql: SqlStorage): string | null {
  if (!hasTables(sql)) return null;
  return sql.exec<{ at: string | null }>('SELECT MIN(created_at) AS at FROM claims').one().at;
}

/**
 * Transactions the sweep is settling whose follow-ups (search index, `transaction_create`) are not
 * known to be done: written before the processor is asked, cleared once the follow-ups ran, so a
 * step that dies in between leaves them for the next step. One short row per claim being swept;
 * the table is created on first use (older shards lack it) and emptied with the shard.
 */
function followUpTable(sql: SqlStorage): void {
  sql.exec('CREATE TABLE IF NOT EXISTS claim_followups (id TEXT PRIMARY KEY)');
}

/** Whether a sweep ever noted follow-ups here (reads create nothing: most shards never need the table). */
function hasFollowUpTable(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'claim_followups'").toArray().length > 0;
}

export function markClaimFollowUps(sql: SqlStorage, ids: readonly string[]): void {
  followUpTable(sql);
  for (const id of ids) sql.exec('INSERT OR IGNORE INTO claim_followups (id) VALUES (?)', id);
}

/** At most `limit` transaction ids whose follow-ups are pending. */
export function pendingClaimFollowUps(sql: SqlStorage, limit: number): string[] {
  if (!hasFollowUpTable(sql)) return [];
  return sql.exec<{ id: string }>('SELECT id FROM claim_followups ORDER BY id LIMIT ?', limit).toArray().map((row) => row.id);
}

export function clearClaimFollowUps(sql: SqlStorage, ids: readonly string[]): void {
  if (!hasFollowUpTable(sql)) return;
  for (const id of ids) sql.exec('DELETE FROM claim_followups WHERE id = ?', id);
}

type ClaimSql = { id: number; page: string; created_at: string; entries: string };

function claimRowOf(merchantId: string, row: ClaimSql): ClaimRow {
  return { id: row.id, page: row.page, createdAt: row.created_at, entries: (JSON.parse(row.entries) as PackedRecord[]).map((packed) => unpackRecord(merchantId, packed)) };
}
