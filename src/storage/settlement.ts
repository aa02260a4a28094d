/**
 * The SQLite tables of a merchant's settlement object (durable-objects/merchant-settlement.ts,
 * docs/capacity.md "Settlement"). The object creates and versions them itself (`MIGRATIONS`).
 *
 *   meta     the merchant, its settlement cutoff (UTC "HH:MM")
 *   shards   the index of ledger shards that may hold money awaiting settlement, and
 *   runs     settlement runs (settlement-runs.ts)
 *   batches  the merchant's settlement batches, one per processor and day
 *   entries  what each batch holds, per shard, one row per handoff piece of the shard (`seq`, at
 *            most HANDOFF_ENTRIES_PER_PIECE transactions): its count and totals only, never its
 *            transactions, so the object grows per piece (about 130 bytes for up to 5,000
 *            transactions), not per transaction. The transactions stay in the shard that settled
 *            them (its `settled_pieces`), and a batch's page is read there (services/settlement/
 *            batch-transactions.ts). The `entries` column is '' for such rows; rows written by an
 *            older version hold the piece's JSON list and are still read from it until they expire.
 *            The totals are sums of the rows. Recording a piece again writes the same row.
 *
 * Retention: a batch and its entries are deleted TRANSACTION_RETENTION_DAYS after its day, like the
 * transactions they count; a shard leaves the index as soon as it holds nothing unsettled.
 */
import { exactDifference, exactInteger, type ExactInteger } from '../lib/exact-integer';
import { hasTables as hasSettlementTables, migrate, recordedVersion } from './do-schema';
import type { HandoffPiece } from './ledger-shard';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     merchant_id TEXT NOT NULL,
     cutoff TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS shards (
     name TEXT PRIMARY KEY,
     identity TEXT NOT NULL,
     generation INTEGER NOT NULL,
     registered_at TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE IF NOT EXISTS batches (
     id TEXT PRIMARY KEY,
     batch_date TEXT NOT NULL,
     processor_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX IF NOT EXISTS batches_date ON batches(batch_date);
   CREATE TABLE IF NOT EXISTS entries (
     batch_id TEXT NOT NULL,
     shard TEXT NOT NULL,
     seq INTEGER NOT NULL,
     num INTEGER NOT NULL,
     captured INTEGER NOT NULL,
     credit INTEGER NOT NULL,
     entries TEXT NOT NULL,
     PRIMARY KEY (batch_id, shard, seq)
   ) WITHOUT ROWID;`,
  // 2. Runs in bounded steps over alarm ticks (docs/transactions.md, "Settlement").
  `ALTER TABLE shards ADD COLUMN acked_seq INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE shards ADD COLUMN run_done INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE shards ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE shards ADD COLUMN retry_at TEXT;
   ALTER TABLE shards ADD COLUMN last_error TEXT;
   CREATE TABLE IF NOT EXISTS runs (
     id INTEGER PRIMARY KEY,
     end_at TEXT NOT NULL,
     batch_date TEXT NOT NULL,
     settled_at TEXT NOT NULL,
     started_at TEXT NOT NULL,
     finished_at TEXT,
     announced INTEGER NOT NULL DEFAULT 0,
     touched TEXT NOT NULL DEFAULT '[]'
   );`,
];
export const SETTLEMENT_SCHEMA_VERSION = MIGRATIONS.length;

/** Types whose money goes back to the cardholder: a settlement batch's amount_credit. */
const CREDIT_TYPES: ReadonlySet<string> = new Set(['refund', 'credit']);

/** Whether the object has its tables yet (settlement-runs.ts reads them too). */
export { hasSettlementTables };

/** Applies the steps an object made by an older version lacks. */
export function upgradeSettlement(sql: SqlStorage): void {
  const version = recordedVersion(sql);
  if (version === 0 || version >= SETTLEMENT_SCHEMA_VERSION) return;
  migrate(sql, MIGRATIONS, version);
  sql.exec('UPDATE meta SET schema_version = ?', SETTLEMENT_SCHEMA_VERSION);
}

export function initialiseSettlement(sql: SqlStorage, merchantId: string, cutoff: string): void {
  migrate(sql, MIGRATIONS);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, merchant_id, cutoff) VALUES (1, ?, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET schema_version = excluded.schema_version`,
    SETTLEMENT_SCHEMA_VERSION,
    merchantId,
    cutoff,
  );
}

export function readSettlementMeta(sql: SqlStorage): { merchantId: string; cutoff: string } | null {
  if (!hasSettlementTables(sql)) return null;
  const row = sql.exec<{ merchant_id: string; cutoff: string }>('SELECT merchant_id, cutoff FROM meta').toArray()[0];
  return row ? { merchantId: row.merchant_id, cutoff: row.cutoff } : null;
}

export function writeCutoff(sql: SqlStorage, cutoff: string): void {
  sql.exec('UPDATE meta SET cutoff = ?', cutoff);
}


/** A settlement batch as the API answers it (FluidPay's fields). */
export interface SettlementBatch {
  id: string;
  batch_date: string;
  processor_id: string;
  num_transactions: number;
  /** Exact: a number up to 2^53 − 1, its decimal digits past it. */
  amount_captured: ExactInteger;
  amount_credit: ExactInteger;
  net_deposit: ExactInteger;
  created_at: string;
  updated_at: string;
}

/**
 * Records a handoff piece of `shard` in its day's batches (one per processor), grouped in one pass,
 * and the piece as the last recorded from the shard, in the caller's transaction; answers the batch
 * ids written. The rows are keyed by the piece's number: recording it again writes the same rows.
 */
export function recordPiece(
  sql: SqlStorage,
  shard: string,
  piece: HandoffPiece,
  run: { id: number; at: string; batchIdOf: (processorId: string, batchDate: string) => string },
): string[] {
  const { at, id: runId } = run;
  const byBatch = new Map<string, { processorId: string; num: number; captured: number; credit: number }>();
  for (const entry of piece.entries) {
    const id = run.batchIdOf(entry.processor_id, piece.batchDate);
    let group = byBatch.get(id);
    if (!group) {
      group = { processorId: entry.processor_id, num: 0, captured: 0, credit: 0 };
      byBatch.set(id, group);
    }
    group.num++;
    if (CREDIT_TYPES.has(entry.type)) group.credit += entry.amount;
    else group.captured += entry.amount;
  }
  for (const [id, group] of byBatch) {
    sql.exec(
      `INSERT INTO batches (id, batch_date, processor_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at`,
      id,
      piece.batchDate,
      group.processorId,
      at,
      at,
    );
    sql.exec(
      'INSERT OR REPLACE INTO entries (batch_id, shard, seq, num, captured, credit, entries) VALUES (?, ?, ?, ?, ?, ?, ?)',
      id,
      shard,
      piece.seq,
      group.num,
      group.captured,
      group.credit,
      '',
    );
  }
  sql.exec('UPDATE shards SET acked_seq = MAX(acked_seq, ?) WHERE name = ?', piece.seq, shard);
  const touched = [...byBatch.keys()];
  if (touched.length > 0) {
    // The run's list of batches it made or added to (a handful: processors × days).
    const run = sql.exec<{ touched: string }>('SELECT touched FROM runs WHERE id = ?', runId).toArray()[0];
    const list = new Set(run ? (JSON.parse(run.touched) as string[]) : []);
    const before = list.size;
    for (const id of touched) list.add(id);
    if (list.size !== before) sql.exec('UPDATE runs SET touched = ? WHERE id = ?', JSON.stringify([...list]), runId);
  }
  return touched;
}

// The sums are read as text: SQLite adds 64-bit integers exactly, and a number past 2^53 read into
// JavaScript would be rounded (lib/exact-integer.ts; docs/transactions.md, "Exact totals").
const BATCH_SELECT = `SELECT b.id, b.batch_date, b.processor_id, b.created_at, b.updated_at,
  COALESCE(SUM(e.num), 0) AS num_transactions, CAST(COALESCE(SUM(e.captured), 0) AS TEXT) AS amount_captured, CAST(COALESCE(SUM(e.credit), 0) AS TEXT) AS amount_credit
  FROM batches b LEFT JOIN entries e ON e.batch_id = b.id`;

type BatchSql = Omit<SettlementBatch, 'net_deposit' | 'amount_captured' | 'amount_credit'> & { amount_captured: string; amount_credit: string };

function batchFromSql(row: BatchSql): SettlementBatch {
  const captured = exactInteger(row.amount_captured);
  const credit = exactInteger(row.amount_credit);
  return {
    id: row.id,
    batch_date: row.batch_date,
    processor_id: row.processor_id,
    num_transactions: row.num_transactions,
    amount_captured: captured,
    amount_credit: credit,
    net_deposit: exactDifference(captured, credit),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function readBatches(sql: SqlStorage, ids: readonly string[]): SettlementBatch[] {
  if (ids.length === 0 || !hasSettlementTables(sql)) return [];
  return sql
    .exec<BatchSql>(`${BATCH_SELECT} WHERE b.id IN (SELECT value FROM json_each(?)) GROUP BY b.id ORDER BY b.batch_date, b.id`, JSON.stringify(ids))
    .toArray()
    .map(batchFromSql);
}

export interface BatchSearch {
  batchDateFrom: string | null;
  batchDateTo: string | null;
  /** The batch with this id; or FluidPay's {operator, value}: that batch, or every other one. */
  settlementBatchId: string | { operator: '=' | '!='; value: string } | null;
  limit: number;
  offset: number;
}

/** The batches matching the filters, newest day first, and how many match in all. */
export function searchBatches(sql: SqlStorage, search: BatchSearch): { batches: SettlementBatch[]; total: number } {
  if (!hasSettlementTables(sql)) return { batches: [], total: 0 };
  const where = `WHERE (?1 IS NULL OR b.batch_date >= ?1) AND (?2 IS NULL OR b.batch_date <= ?2) AND (?3 IS NULL OR (b.id = ?3) = (?4 = '='))`;
  const byId = typeof search.settlementBatchId === 'string' ? { operator: '=', value: search.settlementBatchId } : search.settlementBatchId;
  const args = [search.batchDateFrom, search.batchDateTo, byId?.value ?? null, byId?.operator ?? '='];
  const total = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM batches b ${where}`, ...args).one().n;
  const batches = sql
    .exec<BatchSql>(`${BATCH_SELECT} ${where} GROUP BY b.id ORDER BY b.batch_date DESC, b.id LIMIT ?5 OFFSET ?6`, ...args, search.limit, search.offset)
    .toArray()
    .map(batchFromSql);
  return { batches, total };
}

/** Where a page of a batch's transactions is: a slice of one piece of one shard. */
export interface BatchSlice {
  shard: string;
  seq: number;
  skip: number;
  take: number;
  /** A row written by an older version holds its transactions itself: the slice of them. */
  entries: { id: string; type: string; amount: number }[] | null;
}

/**
 * Where the page [offset, offset + limit) of a batch's transactions lies, in shard order, in at most
 * `maxPieces` pieces (a page over more tiny pieces is cut short: the caller goes on at the offset
 * it reached). Only the batch's count column is read to place the page (a window sum over its
 * rows, one per piece: about 2,000 for 10 million transactions a day); only the rows holding the
 * page are answered.
 */
export function batchSlices(sql: SqlStorage, batchId: string, limit: number, offset: number, maxPieces: number): BatchSlice[] {
  const rows = sql
    .exec<{ shard: string; seq: number; start: number; num: number; entries: string }>(
      `WITH counted AS (SELECT shard, seq, num, SUM(num) OVER (ORDER BY shard, seq) AS upto FROM entries WHERE batch_id = ?1)
       SELECT c.shard, c.seq, c.upto - c.num AS start, c.num, e.entries FROM counted c JOIN entries e ON e.batch_id = ?1 AND e.shard = c.shard AND e.seq = c.seq
       WHERE c.upto > ?2 AND c.upto - c.num < ?2 + ?3 ORDER BY c.shard, c.seq LIMIT ?4`,
      batchId,
      offset,
      limit,
      maxPieces,
    )
    .toArray();
  const slices: BatchSlice[] = [];
  let wanted = limit;
  for (const row of rows) {
    const skip = Math.max(0, offset - row.start);
    const take = Math.min(wanted, row.num - skip);
    if (take <= 0) break;
    wanted -= take;
    const entries =
      row.entries === ''
        ? null
        : (JSON.parse(row.entries) as [string, string, number][]).slice(skip, skip + take).map(([id, type, amount]) => ({ id, type, amount }));
    slices.push({ shard: row.shard, seq: row.seq, skip, take, entries });
  }
  return slices;
}

/** Deletes the batches (and their entries) of days before `day`; answers how many. */
export function deleteBatchesBefore(sql: SqlStorage, day: string): number {
  if (!hasSettlementTables(sql)) return 0;
  sql.exec('DELETE FROM entries WHERE batch_id IN (SELECT id FROM batches WHERE batch_date < ?)', day);
  return sql.exec('DELETE FROM batches WHERE batch_date < ?', day).rowsWritten;
}

export function oldestBatchDate(sql: SqlStorage): string | null {
  if (!hasSettlementTables(sql)) return null;
  return sql.exec<{ d: string | null }>('SELECT MIN(batch_date) AS d FROM batches').one().d;
}
