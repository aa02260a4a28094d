/** A ledger shard's `claims` table (storage/ledger-shard/schema.ts): the records an attempt is about to send to their processors. */
import { hasTables } from './schema';
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

export function insertClaim(sql: SqlStorage, page: string, createdAt: string, entries: readonly StoredTransaction[]): number {
  const row = sql
    .exec<{ id: number }>(
      'INSERT INTO claims (page, created_at, entries) VALUES (?, ?, ?) RETURNING id',
      page,
      createdAt,
      JSON.stringify(entries.map(packRecord)),
    )
    .one();
  return row.id;
}

/** Rewrites a claim with the entries still open, or deletes it when none are. */
export function updateClaim(sql: SqlStorage, id: number, entries: readonly StoredTransaction[]): void {
  if (entries.length === 0) sql.exec('DELETE FROM claims WHERE id = ?', id);
  else sql.exec('UPDATE claims SET entries = ? WHERE id = ?', JSON.stringify(entries.map(packRecord)), id);
}
