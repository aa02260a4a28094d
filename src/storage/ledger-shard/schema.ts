/**
 * A ledger shard's tables and its one meta row (durable-objects/ledger-shard): one merchant's
 * transactions for one period. A shard creates and versions its own tables (`MIGRATIONS`, applied in
 * order on first write).
 *
 *   claims      one row per claim: the pending records of the requests one attempt is about to send
 *               to their processors (a batch chunk's rows, or one API request), deleted when answered
 *   pages       the completed records, many per row: a batch chunk's records are one page (split when
 *               a page would pass MAX_ROW_JSON_BYTES), gzip-compressed, with the keys it holds beside them
 *               in the clear (a claim checks them without decompressing); an API transaction is a page
 *               of its own, keyed by its id, as plain JSON (its request hash is dropped later in place)
 *   states      the current record of every transaction changed since processed, and refunds
 *   operations  each capture, void and refund under its key; `operation_counts` how many a
 *               transaction has had (its bound, and its refunds' numbers, without reading them all);
 *               `operation_blocks` a batch chunk's claims, one row, until each is answered as an
 *               `operations` row (operation-blocks.ts)
 *   meta        when the shard's period started, when its request hashes are cleared, when it is
 *               archived; whether it is in its merchant's settlement index
 *   receipt_outbox  the email receipts its transactions ask for (storage/receipt-outbox.ts)
 *   handoff     what a settlement run settled here until the settlement object has recorded it, and
 *   settled_pieces  those pieces once recorded: a settlement batch's transactions are listed from
 *               them (storage/ledger-shard/handoff.ts)
 */
import { hasTables, migrate } from '../do-schema';
import { RECEIPT_OUTBOX_MIGRATION } from '../receipt-outbox';

/** The shard's tables, in order; version N is the first N steps. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     name TEXT NOT NULL,
     period_start TEXT NOT NULL,
     hashes_clear_at TEXT,
     archive_at TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS claims (
     id INTEGER PRIMARY KEY,
     page TEXT NOT NULL,
     created_at TEXT NOT NULL,
     entries TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS pages (
     page TEXT NOT NULL,
     seq INTEGER NOT NULL,
     keys TEXT NOT NULL,
     format TEXT NOT NULL CHECK (format IN ('json', 'gzip')),
     records BLOB NOT NULL,
     PRIMARY KEY (page, seq)
   ) WITHOUT ROWID;`,
  // 2. The lifecycle (docs/transactions.md, "Lifecycle"): pages stay as processed; a page row says
  // whether it holds money awaiting settlement and when it settled; `states` holds the current record
  // of every transaction changed since (captured, voided, refunded, settled) and the refunds;
  // `operations` holds each capture, void and refund under its key (claimed before the processor is asked).
  `ALTER TABLE pages ADD COLUMN at TEXT;
   ALTER TABLE pages ADD COLUMN unsettled INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE pages ADD COLUMN settled_on TEXT;
   ALTER TABLE pages ADD COLUMN settled_at TEXT;
   CREATE INDEX IF NOT EXISTS pages_unsettled ON pages(unsettled) WHERE unsettled = 1;
   CREATE TABLE IF NOT EXISTS states (
     id TEXT PRIMARY KEY,
     original INTEGER NOT NULL,
     record TEXT NOT NULL,
     amount_refunded INTEGER NOT NULL DEFAULT 0,
     unsettled INTEGER NOT NULL DEFAULT 0,
     captured_at TEXT,
     settled_on TEXT,
     updated_at TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE IF NOT EXISTS operations (
     key TEXT PRIMARY KEY,
     transaction_id TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (kind IN ('capture', 'void', 'refund')),
     request_hash TEXT NOT NULL,
     amount INTEGER NOT NULL,
     refund_id TEXT,
     created_at TEXT NOT NULL,
     answer TEXT
   ) WITHOUT ROWID;
   CREATE INDEX IF NOT EXISTS operations_transaction ON operations(transaction_id);`,
  // 3. Whether the shard is in its merchant's settlement index (it registers once per stretch of
  // money awaiting settlement, not per write), and the generation of that registration.
  `ALTER TABLE meta ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE meta ADD COLUMN index_generation INTEGER NOT NULL DEFAULT 0;`,
  // 4. Work in bounded steps (docs/capacity.md, "A shard's jobs"): `handoff` keeps what a settlement
  // run settled here until the settlement object has recorded it (handoff.ts); the cursors of a run's
  // marking and of retention's steps; states awaiting settlement found by index, not by a scan.
  // Handoff numbers start above the 0-based row numbers a settlement object stored a whole-shard
  // answer under before (its rows are keyed by them too), so both can sit in one batch.
  `CREATE INDEX IF NOT EXISTS states_unsettled ON states(unsettled) WHERE unsettled = 1;
   CREATE TABLE IF NOT EXISTS handoff (
     seq INTEGER PRIMARY KEY,
     batch_date TEXT NOT NULL,
     num INTEGER NOT NULL,
     entries TEXT NOT NULL
   );
   ALTER TABLE meta ADD COLUMN handoff_seq INTEGER NOT NULL DEFAULT 1000000;
   ALTER TABLE meta ADD COLUMN settle_cursor TEXT;
   ALTER TABLE meta ADD COLUMN retention_cursor TEXT;`,
  // 5. The receipt outbox, written with the records it is for (storage/receipt-outbox.ts).
  RECEIPT_OUTBOX_MIGRATION,
  // 6. Operations and settlement ordered (docs/transactions.md, "Settlement and operations"): the
  // operation in flight on a transaction found by index (a settlement run leaves its transaction
  // out), each transaction's count of operations (bounded, and read in one row whatever came
  // before), and a handoff piece may name the transactions a run left out while an operation was in flight.
  `CREATE INDEX IF NOT EXISTS operations_pending ON operations(transaction_id) WHERE answer IS NULL;
   CREATE TABLE IF NOT EXISTS operation_counts (
     transaction_id TEXT PRIMARY KEY,
     operations INTEGER NOT NULL,
     refunds INTEGER NOT NULL
   ) WITHOUT ROWID;
   ALTER TABLE handoff ADD COLUMN held TEXT;`,
  // 7. A settlement batch's transactions are listed from the shards they settled in, not from a list
  // in the merchant's one settlement object: an acknowledged handoff piece is kept here, under its
  // number, until the shard is archived (handoff.ts).
  `CREATE TABLE IF NOT EXISTS settled_pieces (
     seq INTEGER PRIMARY KEY,
     batch_date TEXT NOT NULL,
     entries TEXT NOT NULL
   );`,
  // 8. A transaction's operations are found by their keys, which begin with its id (operationKeyRange
  // in operations.ts): the index on transaction_id cost every claim a third B-tree write.
  `DROP INDEX IF EXISTS operations_transaction;`,
  // 9. A batch chunk's claims of operations as one row (operation-blocks.ts), and the approved
  // captures' and voids' answers kept in it, each found from its transaction's state (op_block, op_key).
  `CREATE TABLE IF NOT EXISTS operation_blocks (
     id INTEGER PRIMARY KEY,
     token TEXT NOT NULL,
     open INTEGER NOT NULL,
     entries TEXT NOT NULL
   );
   CREATE INDEX IF NOT EXISTS operation_blocks_open ON operation_blocks(open) WHERE open > 0;
   ALTER TABLE states ADD COLUMN op_block INTEGER;
   ALTER TABLE states ADD COLUMN op_key TEXT;`,
];
export const LEDGER_SCHEMA_VERSION = MIGRATIONS.length;

export interface ShardMeta {
  name: string;
  periodStart: string;
  hashesClearAt: string | null;
  archiveAt: string;
}

/** Who a shard is (services/transactions/ledger.ts names it); every call carries it, and the first write keeps it. */
export interface ShardIdentity extends ShardMeta {
  merchantId: string;
}

/** A write a shard could not make: its calls answer this instead of rejecting (the caller throws). */
export interface ShardFailure {
  failed: string;
}

/** What a shard's retention did. */
export interface RetentionOutcome {
  archived: boolean;
  /** Once archived: where its archive files are (storage/ledger-archive.ts). */
  key: string | null;
  /** Records archived so far. */
  lines: number;
  hashesCleared: number;
  /** More steps are left (the alarm is armed for the next). */
  more: boolean;
}

export { hasTables };

/** Creates the tables, or upgrades them to LEDGER_SCHEMA_VERSION (the steps not applied yet). */
export function createShardTables(sql: SqlStorage): void {
  migrate(sql, MIGRATIONS, tablesVersion(sql));
}

/** The version the tables are at: the meta row's, or, tables made before any meta row, the last step they show. */
function tablesVersion(sql: SqlStorage): number {
  if (!hasTables(sql)) return 0;
  const recorded = sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').toArray()[0]?.v;
  if (recorded !== undefined) return recorded;
  const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray().map((c) => c.name);
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'operation_blocks'").toArray().length > 0) return 9;
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settled_pieces'").toArray().length > 0) {
    return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'operations_transaction'").toArray().length > 0 ? 7 : 8;
  }
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'operation_counts'").toArray().length > 0) return 6;
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'receipt_outbox'").toArray().length > 0) return 5;
  if (columns.includes('handoff_seq')) return 4;
  if (columns.includes('indexed')) return 3;
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'states'").toArray().length > 0 ? 2 : 1;
}

/** Creates or upgrades the tables and writes the shard's meta row; answers the meta in force. */
export function initialiseShard(sql: SqlStorage, meta: ShardMeta): ShardMeta {
  createShardTables(sql);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, name, period_start, hashes_clear_at, archive_at) VALUES (1, ?, ?, ?, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET schema_version = excluded.schema_version`,
    LEDGER_SCHEMA_VERSION,
    meta.name,
    meta.periodStart,
    meta.hashesClearAt,
    meta.archiveAt,
  );
  return readMeta(sql) ?? meta;
}

export function readMeta(sql: SqlStorage): ShardMeta | null {
  if (!hasTables(sql)) return null;
  const row = sql
    .exec<{ name: string; period_start: string; hashes_clear_at: string | null; archive_at: string }>('SELECT * FROM meta')
    .toArray()[0];
  return row ? { name: row.name, periodStart: row.period_start, hashesClearAt: row.hashes_clear_at, archiveAt: row.archive_at } : null;
}

export function markHashesCleared(sql: SqlStorage): void {
  sql.exec('UPDATE meta SET hashes_clear_at = NULL');
}

/** The schema version a shard's tables are at (0: none yet). */
export function schemaVersion(sql: SqlStorage): number {
  return tablesVersion(sql);
}

/** Applies the steps a shard made by an older version lacks (its meta row keeps its identity). */
export function upgradeShardTables(sql: SqlStorage): void {
  if (!hasTables(sql) || tablesVersion(sql) >= LEDGER_SCHEMA_VERSION) return;
  createShardTables(sql);
  sql.exec('UPDATE meta SET schema_version = ?', LEDGER_SCHEMA_VERSION);
}

/** Whether the shard is in its merchant's settlement index, and its registration's generation. */
export function readIndexing(sql: SqlStorage): { indexed: boolean; generation: number } {
  const row = sql.exec<{ indexed: number; index_generation: number }>('SELECT indexed, index_generation FROM meta').toArray()[0];
  return { indexed: row?.indexed === 1, generation: row?.index_generation ?? 0 };
}

/**
 * Where a job spanning several calls or alarm ticks stands (JSON of the job's own shape): a
 * settlement run's marking (`settle`), retention's hash clearing and archive (`retention`).
 */
export function readCursor<T>(sql: SqlStorage, job: 'settle' | 'retention'): T | null {
  const row = sql.exec<{ cursor: string | null }>(`SELECT ${job}_cursor AS cursor FROM meta`).toArray()[0];
  return row?.cursor ? (JSON.parse(row.cursor) as T) : null;
}

export function writeCursor(sql: SqlStorage, job: 'settle' | 'retention', cursor: unknown): void {
  sql.exec(`UPDATE meta SET ${job}_cursor = ?`, cursor === null ? null : JSON.stringify(cursor));
}

export function writeIndexing(sql: SqlStorage, indexed: boolean, generation: number): void {
  sql.exec('UPDATE meta SET indexed = ?, index_generation = ?', indexed ? 1 : 0, generation);
}
