/**
 * An export's state, in its own object's SQLite (durable-objects/search/export.ts), and its
 * file in R2 (docs/capacity.md, "Search"):
 *
 *   meta     the export: its merchant, its query, its progress (rows, where the search got to), the
 *            open multipart upload and its parts, its end and when it is deleted
 *   pending  the CSV bytes written since the last part (less than a part), in rows of at most 1 MB
 *
 *   R2 FILES: exports/{merchant}/{export id}.csv   the CSV, deleted with the object
 */
import type { Condition } from '../../schemas/search-conditions';
import type { Position } from './day';
import { hasTables, migrate } from '../do-schema';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     id TEXT NOT NULL,
     merchant_id TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
     query TEXT NOT NULL,
     created_at TEXT NOT NULL,
     completed_at TEXT,
     rows INTEGER NOT NULL DEFAULT 0,
     total INTEGER,
     total_exact INTEGER NOT NULL DEFAULT 1,
     after TEXT,
     upload_id TEXT,
     parts TEXT NOT NULL DEFAULT '[]',
     failures INTEGER NOT NULL DEFAULT 0,
     failure_reason TEXT,
     delete_at TEXT,
     announced INTEGER NOT NULL DEFAULT 0
   );
   CREATE TABLE IF NOT EXISTS pending (
     seq INTEGER PRIMARY KEY,
     data BLOB NOT NULL
   );`,
];
const SCHEMA_VERSION = MIGRATIONS.length;

/** Rows of the pending bytes: well under Durable Object SQLite's 2 MB per row. */
const PENDING_ROW_BYTES = 1_000_000;

export function exportFileKey(merchantId: string, exportId: string): string {
  return `exports/${merchantId}/${exportId}.csv`;
}

/** What an export searches: the conditions and the window (docs/transactions.md, "Search"). */
export interface ExportQuery {
  conditions: Condition[];
  window: { from: string; to: string | null; defaulted: boolean };
}

export interface ExportRow {
  id: string;
  merchantId: string;
  status: 'running' | 'completed' | 'failed';
  query: ExportQuery;
  createdAt: string;
  completedAt: string | null;
  rows: number;
  total: number | null;
  totalExact: boolean;
  /** Where the search got to: the next page starts after it; null before the first page. */
  after: Position | null;
  uploadId: string | null;
  parts: R2UploadedPart[];
  failures: number;
  failureReason: string | null;
  deleteAt: string | null;
  /** Whether `export.completed` was recorded for the merchant's endpoints. */
  announced: boolean;
}

type MetaSql = {
  id: string;
  merchant_id: string;
  status: ExportRow['status'];
  query: string;
  created_at: string;
  completed_at: string | null;
  rows: number;
  total: number | null;
  total_exact: number;
  after: string | null;
  upload_id: string | null;
  parts: string;
  failures: number;
  failure_reason: string | null;
  delete_at: string | null;
  announced: number;
};

export function readExport(sql: SqlStorage): ExportRow | null {
  if (!hasTables(sql)) return null;
  const row = sql.exec<MetaSql>('SELECT * FROM meta').toArray()[0];
  if (!row) return null;
  return {
    id: row.id,
    merchantId: row.merchant_id,
    status: row.status,
    query: JSON.parse(row.query) as ExportQuery,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    rows: row.rows,
    total: row.total,
    totalExact: row.total_exact === 1,
    after: row.after === null ? null : (JSON.parse(row.after) as Position),
    uploadId: row.upload_id,
    parts: JSON.parse(row.parts) as R2UploadedPart[],
    failures: row.failures,
    failureReason: row.failure_reason,
    deleteAt: row.delete_at,
    announced: row.announced === 1,
  };
}

export function createExport(sql: SqlStorage, row: { id: string; merchantId: string; query: ExportQuery; createdAt: string }): void {
  // Every step, always: each is written to be applied again (IF NOT EXISTS).
  migrate(sql, MIGRATIONS, 0);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, id, merchant_id, status, query, created_at) VALUES (1, ?, ?, ?, 'running', ?, ?)
     ON CONFLICT (singleton) DO NOTHING`,
    SCHEMA_VERSION,
    row.id,
    row.merchantId,
    JSON.stringify(row.query),
    row.createdAt,
  );
}

/** Saves a step's progress (with the bytes not yet in a part). */
export function saveProgress(sql: SqlStorage, row: ExportRow, pending: Uint8Array): void {
  sql.exec(
    `UPDATE meta SET status = ?, completed_at = ?, rows = ?, total = ?, total_exact = ?, after = ?, upload_id = ?, parts = ?,
       failures = ?, failure_reason = ?, delete_at = ?, announced = ?`,
    row.status,
    row.completedAt,
    row.rows,
    row.total,
    row.totalExact ? 1 : 0,
    row.after === null ? null : JSON.stringify(row.after),
    row.uploadId,
    JSON.stringify(row.parts),
    row.failures,
    row.failureReason,
    row.deleteAt,
    row.announced ? 1 : 0,
  );
  sql.exec('DELETE FROM pending');
  for (let i = 0; i < pending.length; i += PENDING_ROW_BYTES) sql.exec('INSERT INTO pending (data) VALUES (?)', pending.subarray(i, i + PENDING_ROW_BYTES));
}

export function readPending(sql: SqlStorage): Uint8Array {
  const rows = sql.exec<{ data: ArrayBuffer }>('SELECT data FROM pending ORDER BY seq').toArray();
  const total = rows.reduce((n, row) => n + row.data.byteLength, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const row of rows) {
    bytes.set(new Uint8Array(row.data), at);
    at += row.data.byteLength;
  }
  return bytes;
}
