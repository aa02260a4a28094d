/**
 * The SQLite tables of a merchant's settlement object (durable-objects/merchant-settlement.ts,
 * docs/capacity.md "Settlement"). The object creates and versions them itself (`MIGRATIONS`).
 *
 *   meta     the merchant, its settlement cutoff (UTC "HH:MM")
 *   shards   the index: every ledger shard that may hold money awaiting settlement (registered
 *            before the money is written there; removed when a run leaves none in it)
 *   batches  the merchant's settlement batches, one per processor and day
 *   entries  what each batch holds, per shard, in pieces of up to ENTRIES_PER_ROW transactions
 *            (id, type, amount): the totals are sums of the pieces
 *
 * Retention: a batch and its entries are deleted TRANSACTION_RETENTION_DAYS after its day, like the
 * transactions they list; a shard leaves the index as soon as it holds nothing unsettled.
 */
import type { SettledEntry, ShardIdentity } from './ledger-shard';

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
];
export const SETTLEMENT_SCHEMA_VERSION = MIGRATIONS.length;

/** Keeps a row well under Durable Object SQLite's 2 MB (an entry is about 80 bytes of JSON). */
const ENTRIES_PER_ROW = 5_000;

/** Types whose money goes back to the cardholder: a settlement batch's amount_credit. */
const CREDIT_TYPES: ReadonlySet<string> = new Set(['refund', 'credit']);

export function hasSettlementTables(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
}

export function initialiseSettlement(sql: SqlStorage, merchantId: string, cutoff: string): void {
  const version = hasSettlementTables(sql) ? (sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').toArray()[0]?.v ?? 0) : 0;
  for (const step of MIGRATIONS.slice(version)) sql.exec(step);
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

/**
 * Indexes a shard under the shard's registration generation (a shard registers once per stretch of
 * unsettled money, not per write: durable-objects/ledger-shard/settlement.ts). A later generation replaces an
 * earlier one, so a removal meant for the earlier one (`removeShard`) leaves it alone.
 */
export function addShard(sql: SqlStorage, shard: ShardIdentity, generation: number, at: string): void {
  sql.exec(
    `INSERT INTO shards (name, identity, generation, registered_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET generation = MAX(generation, excluded.generation), registered_at = excluded.registered_at`,
    shard.name,
    JSON.stringify(shard),
    generation,
    at,
  );
}

export function listShards(sql: SqlStorage): ShardIdentity[] {
  if (!hasSettlementTables(sql)) return [];
  return sql.exec<{ identity: string }>('SELECT identity FROM shards ORDER BY name').toArray().map((row) => JSON.parse(row.identity) as ShardIdentity);
}

/** Removes a shard from the index, unless it registered again since (a later generation). */
export function removeShard(sql: SqlStorage, name: string, generation: number): void {
  sql.exec('DELETE FROM shards WHERE name = ? AND generation <= ?', name, generation);
}

/** A settlement batch as the API answers it (FluidPay's fields). */
export interface SettlementBatch {
  id: string;
  batch_date: string;
  processor_id: string;
  num_transactions: number;
  amount_captured: number;
  amount_credit: number;
  net_deposit: number;
  created_at: string;
  updated_at: string;
}

/**
 * Replaces what `shard` put in batch `batchId` with `entries` (all of them, as the shard answers:
 * a repeated run writes the same rows). Answers whether the batch's count changed.
 */
export function replaceEntries(
  sql: SqlStorage,
  batch: { id: string; batchDate: string; processorId: string },
  shard: string,
  entries: readonly SettledEntry[],
  at: string,
): boolean {
  const before = sql.exec<{ n: number }>('SELECT COALESCE(SUM(num), 0) AS n FROM entries WHERE batch_id = ? AND shard = ?', batch.id, shard).one().n;
  if (before === entries.length) return false;
  sql.exec(
    `INSERT INTO batches (id, batch_date, processor_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at`,
    batch.id,
    batch.batchDate,
    batch.processorId,
    at,
    at,
  );
  sql.exec('DELETE FROM entries WHERE batch_id = ? AND shard = ?', batch.id, shard);
  for (let i = 0; i < entries.length; i += ENTRIES_PER_ROW) {
    const piece = entries.slice(i, i + ENTRIES_PER_ROW);
    const captured = piece.filter((e) => !CREDIT_TYPES.has(e.type)).reduce((sum, e) => sum + e.amount, 0);
    const credit = piece.filter((e) => CREDIT_TYPES.has(e.type)).reduce((sum, e) => sum + e.amount, 0);
    sql.exec(
      'INSERT INTO entries (batch_id, shard, seq, num, captured, credit, entries) VALUES (?, ?, ?, ?, ?, ?, ?)',
      batch.id,
      shard,
      i / ENTRIES_PER_ROW,
      piece.length,
      captured,
      credit,
      JSON.stringify(piece.map((e) => [e.id, e.type, e.amount])),
    );
  }
  return true;
}

const BATCH_SELECT = `SELECT b.id, b.batch_date, b.processor_id, b.created_at, b.updated_at,
  COALESCE(SUM(e.num), 0) AS num_transactions, COALESCE(SUM(e.captured), 0) AS amount_captured, COALESCE(SUM(e.credit), 0) AS amount_credit
  FROM batches b LEFT JOIN entries e ON e.batch_id = b.id`;

type BatchSql = Omit<SettlementBatch, 'net_deposit'>;

function batchFromSql(row: BatchSql): SettlementBatch {
  return {
    id: row.id,
    batch_date: row.batch_date,
    processor_id: row.processor_id,
    num_transactions: row.num_transactions,
    amount_captured: row.amount_captured,
    amount_credit: row.amount_credit,
    net_deposit: row.amount_captured - row.amount_credit,
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
  settlementBatchId: string | null;
  limit: number;
  offset: number;
}

/** The batches matching the filters, newest day first, and how many match in all. */
export function searchBatches(sql: SqlStorage, search: BatchSearch): { batches: SettlementBatch[]; total: number } {
  if (!hasSettlementTables(sql)) return { batches: [], total: 0 };
  const where = `WHERE (?1 IS NULL OR b.batch_date >= ?1) AND (?2 IS NULL OR b.batch_date <= ?2) AND (?3 IS NULL OR b.id = ?3)`;
  const args = [search.batchDateFrom, search.batchDateTo, search.settlementBatchId];
  const total = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM batches b ${where}`, ...args).one().n;
  const batches = sql
    .exec<BatchSql>(`${BATCH_SELECT} ${where} GROUP BY b.id ORDER BY b.batch_date DESC, b.id LIMIT ?4 OFFSET ?5`, ...args, search.limit, search.offset)
    .toArray()
    .map(batchFromSql);
  return { batches, total };
}

/** A page of a batch's transactions, in shard order. */
export function batchEntries(sql: SqlStorage, batchId: string, limit: number, offset: number): { id: string; type: string; amount: number }[] {
  const rows = sql.exec<{ num: number; entries: string }>('SELECT num, entries FROM entries WHERE batch_id = ? ORDER BY shard, seq', batchId).toArray();
  const page: { id: string; type: string; amount: number }[] = [];
  let skip = offset;
  for (const row of rows) {
    if (skip >= row.num) {
      skip -= row.num;
      continue;
    }
    for (const [id, type, amount] of (JSON.parse(row.entries) as [string, string, number][]).slice(skip)) {
      if (page.length === limit) return page;
      page.push({ id, type, amount });
    }
    skip = 0;
  }
  return page;
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
