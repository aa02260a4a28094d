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
    .exec<{ id: number; page: string; created_at: string; entries: string }>('SELECT * FROM claims ORDER BY id')
    .toArray()
    .map((row) => ({
      id: row.id,
      page: row.page,
      createdAt: row.created_at,
      entries: (JSON.parse(row.entries) as PackedRecord[]).map((packed) => unpackRecord(merchantId, packed)),
    }));
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
