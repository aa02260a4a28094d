/**
 * The SQLite tables of a ledger shard (durable-objects/ledger-shard.ts): one merchant's
 * transactions for one period (docs/transactions.md, "The ledger"). A shard creates and versions
 * its own tables (`MIGRATIONS`, applied in order on first write).
 *
 *   claims  one row per claim: the pending records of the requests one attempt is about to send
 *           to their processors (a batch chunk's rows, or one API request), deleted when answered
 *   pages   the completed records, many per row: a batch chunk's records are one page (split when
 *           a page would pass MAX_PAGE_CHARS), gzip-compressed, with the keys it holds beside them
 *           in the clear (a claim checks them without decompressing); an API transaction is a page
 *           of its own, keyed by its id, as plain JSON (its request hash is dropped later in place)
 *   meta    when the shard's period started, when its request hashes are cleared, when it is archived
 *
 * Records travel and rest as compact JSON arrays (`packRecord`): the result CSV's columns in order,
 * then the request fields the CSV has no column for. A page holds no card number and no CVC.
 */
import { RESULT_COLUMNS, type TransactionRecord } from '../schemas/transaction-columns';
// receipts (issue 32): the outbox's table is a step of the shard's schema.
import { RECEIPT_OUTBOX_MIGRATION } from './receipt-outbox';

/** A record in this status is a claim: its key is taken and the processor may be being asked. */
export const CLAIMED_STATUS = 'processing';

/** The columns only the processor's answer decides: what completing a claim changes in its record. */
export const ANSWER_COLUMNS = [
  'amount_authorized',
  'amount_captured',
  'response',
  'response_code',
  'status',
  'captured_at',
  'auth_code',
  'processor_response_code',
  'processor_response_text',
  'avs_response_code',
  'cvv_response_code',
] as const satisfies readonly (keyof TransactionRecord)[];

/** A claim's answer: its key and the answer columns (the rest of the record is the claim's). */
export interface ClaimAnswer {
  key: string;
  answer: Pick<TransactionRecord, (typeof ANSWER_COLUMNS)[number]>;
}

export function answerOf(stored: StoredTransaction): ClaimAnswer {
  const answer = {} as Record<string, unknown>;
  for (const column of ANSWER_COLUMNS) answer[column] = stored.record[column];
  return { key: String(stored.record.idempotency_key), answer: answer as ClaimAnswer['answer'] };
}

/** The claim's record with its answer in. */
export function answered(claim: StoredTransaction, answer: ClaimAnswer['answer']): StoredTransaction {
  return { ...claim, record: { ...claim.record, ...answer } };
}

/** Request fields stored beside the record (the result CSV has no column for them). */
export interface TransactionExtras {
  base_amount: number | null;
  surcharge: number;
  discount_amount: number;
  surcharge_exempt: boolean;
  email_receipt: boolean;
  description: string | null;
  card_brand: string | null;
}

/** A transaction as the ledger keeps it: a claim (record status `processing`) or a completed record. */
export interface StoredTransaction {
  record: TransactionRecord;
  merchantId: string;
  /** The request's fingerprint (API transactions, within the idempotency window); '' when not kept. */
  requestHash: string;
  batchId: string | null;
  line: number | null;
  extras: TransactionExtras;
  /** What was refunded of it so far (answers read with `current`; not part of the packed record). */
  amountRefunded?: number;
}

const EXTRA_COLUMNS = [
  'base_amount',
  'surcharge',
  'discount_amount',
  'surcharge_exempt',
  'email_receipt',
  'description',
  'card_brand',
] as const satisfies readonly (keyof TransactionExtras)[];

/** A record at rest: [request hash, batch id, line, ...result columns, ...extras]. */
type PackedRecord = unknown[];
const HEAD = 3;

export function packRecord(tx: StoredTransaction): PackedRecord {
  return [
    tx.requestHash,
    tx.batchId,
    tx.line,
    ...RESULT_COLUMNS.map((column) => tx.record[column]),
    ...EXTRA_COLUMNS.map((column) => tx.extras[column]),
  ];
}

export function unpackRecord(merchantId: string, packed: PackedRecord): StoredTransaction {
  const record = {} as Record<string, unknown>;
  RESULT_COLUMNS.forEach((column, i) => (record[column] = packed[HEAD + i] ?? null));
  const extras = {} as Record<string, unknown>;
  EXTRA_COLUMNS.forEach((column, i) => (extras[column] = packed[HEAD + RESULT_COLUMNS.length + i] ?? null));
  return {
    record: record as unknown as TransactionRecord,
    merchantId,
    requestHash: typeof packed[0] === 'string' ? packed[0] : '',
    batchId: typeof packed[1] === 'string' ? packed[1] : null,
    line: typeof packed[2] === 'number' ? packed[2] : null,
    extras: extras as unknown as TransactionExtras,
  };
}

/** A record with its request hash left out (past the idempotency window, and in the archive). */
export function withoutHash(packed: PackedRecord): PackedRecord {
  return ['', ...packed.slice(1)];
}

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
  // 4. receipts (issue 32): the receipt outbox, written with the records it is for (storage/receipt-outbox.ts).
  RECEIPT_OUTBOX_MIGRATION,
];
export const LEDGER_SCHEMA_VERSION = MIGRATIONS.length;

/** Keeps one page row well under Durable Object SQLite's 2 MB per row. */
const MAX_PAGE_CHARS = 1_000_000;

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

/** Requests to claim together, all of one page. */
export interface ClaimRequest {
  page: string;
  entries: readonly StoredTransaction[];
}

/** A write a shard could not make: its calls answer this instead of rejecting (the caller throws). */
export interface ShardFailure {
  failed: string;
}

/** What a shard's retention did. */
export interface RetentionOutcome {
  archived: boolean;
  key: string | null;
  lines: number;
  hashesCleared: number;
}

export function hasTables(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
}

/** Creates the tables, or upgrades them to LEDGER_SCHEMA_VERSION (the steps not applied yet). */
export function createShardTables(sql: SqlStorage): void {
  for (const step of MIGRATIONS.slice(tablesVersion(sql))) sql.exec(step);
}

/** The version the tables are at: the meta row's, or, tables made before any meta row, the last step they show. */
function tablesVersion(sql: SqlStorage): number {
  if (!hasTables(sql)) return 0;
  const recorded = sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').toArray()[0]?.v;
  if (recorded !== undefined) return recorded;
  const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('meta')").toArray().map((c) => c.name);
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

// == Claims ==================================================================================

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

// == Pages ===================================================================================

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

/** Completed records cut into page rows of at most ~1 MB of JSON each. */
export function pagePieces(records: readonly StoredTransaction[]): PagePiece[] {
  const pieces: PagePiece[] = [];
  let keys: string[] = [];
  let json: string[] = [];
  let size = 0;
  const flush = () => {
    if (json.length === 0) return;
    pieces.push({ keys, json: `[${json.join(',')}]` });
    keys = [];
    json = [];
    size = 0;
  };
  for (const record of records) {
    const text = JSON.stringify(packRecord(record));
    if (size + text.length > MAX_PAGE_CHARS) flush();
    keys.push(String(record.record.idempotency_key));
    json.push(text);
    size += text.length + 1;
  }
  flush();
  return pieces;
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
  const names = new Set(pages.exact);
  for (const value of pages.floor) {
    const found = sql.exec<{ page: string | null }>('SELECT MAX(page) AS page FROM pages WHERE page <= ?', value).one().page;
    if (found !== null) names.add(found);
  }
  if (names.size === 0) return [];
  return sql
    .exec<PageRow>('SELECT page, seq, format, records, settled_on, settled_at FROM pages WHERE page IN (SELECT value FROM json_each(?)) ORDER BY page, seq', JSON.stringify([...names]))
    .toArray();
}

/** Drops the request hashes kept in plain pages (API transactions; batch pages keep none). */
export function clearPageHashes(sql: SqlStorage): number {
  let changed = 0;
  const rows = sql
    .exec<{ page: string; seq: number; records: string }>(`SELECT page, seq, records FROM pages WHERE format = 'json' AND records NOT LIKE '[["",%'`)
    .toArray();
  for (const row of rows) {
    const records = (JSON.parse(row.records) as PackedRecord[]).map(withoutHash);
    sql.exec('UPDATE pages SET records = ? WHERE page = ? AND seq = ?', JSON.stringify(records), row.page, row.seq);
    changed++;
  }
  return changed;
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

/** The archive's line for a packed record: the record's columns and extras as one JSON object, no request hash. */
export function archiveLine(merchantId: string, packed: PackedRecord): string {
  const stored = unpackRecord(merchantId, packed);
  return JSON.stringify({ ...stored.record, batch_id: stored.batchId, line: stored.line, ...stored.extras });
}

export type { PackedRecord };

// == Lifecycle ===============================================================================

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

/** A transaction's current record once changed after processing (or a refund, whose only record this is). */
export interface StateRow {
  stored: StoredTransaction;
  /** False for a refund: a transaction this table alone holds. */
  original: boolean;
  amountRefunded: number;
  /** Money awaiting settlement (pending_settlement). */
  unsettled: boolean;
  capturedAt: string | null;
  settledOn: string | null;
}

type StateSql = { id: string; original: number; record: string; amount_refunded: number; unsettled: number; captured_at: string | null; settled_on: string | null };

function stateFromSql(merchantId: string, row: StateSql): StateRow {
  return {
    stored: unpackRecord(merchantId, JSON.parse(row.record) as PackedRecord),
    original: row.original === 1,
    amountRefunded: row.amount_refunded,
    unsettled: row.unsettled === 1,
    capturedAt: row.captured_at,
    settledOn: row.settled_on,
  };
}

export function readStates(sql: SqlStorage, merchantId: string, ids: readonly string[]): Map<string, StateRow> {
  const found = new Map<string, StateRow>();
  if (ids.length === 0 || !hasTables(sql)) return found;
  const rows = sql.exec<StateSql>('SELECT * FROM states WHERE id IN (SELECT value FROM json_each(?))', JSON.stringify(ids)).toArray();
  for (const row of rows) found.set(row.id, stateFromSql(merchantId, row));
  return found;
}

export function writeState(sql: SqlStorage, state: StateRow, updatedAt: string): void {
  sql.exec(
    `INSERT INTO states (id, original, record, amount_refunded, unsettled, captured_at, settled_on, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET record = excluded.record, amount_refunded = excluded.amount_refunded, unsettled = excluded.unsettled,
       captured_at = excluded.captured_at, settled_on = excluded.settled_on, updated_at = excluded.updated_at`,
    String(state.stored.record.id),
    state.original ? 1 : 0,
    JSON.stringify(packRecord(state.stored)),
    state.amountRefunded,
    state.unsettled ? 1 : 0,
    state.capturedAt,
    state.settledOn,
    updatedAt,
  );
}

/** States awaiting settlement captured before `before`, and those settled on `day`. */
export function unsettledStates(sql: SqlStorage, merchantId: string, before: string): StateRow[] {
  return sql
    .exec<StateSql>('SELECT * FROM states WHERE unsettled = 1 AND captured_at < ?', before)
    .toArray()
    .map((row) => stateFromSql(merchantId, row));
}

export function statesSettledOn(sql: SqlStorage, merchantId: string, day: string): StateRow[] {
  return sql
    .exec<StateSql>('SELECT * FROM states WHERE settled_on = ?', day)
    .toArray()
    .map((row) => stateFromSql(merchantId, row));
}

/** Every state row (the archive writes them after the pages). */
export function allStates(sql: SqlStorage, merchantId: string): StateRow[] {
  if (!hasTables(sql) || schemaVersion(sql) < 2) return [];
  return sql.exec<StateSql>('SELECT * FROM states ORDER BY id').toArray().map((row) => stateFromSql(merchantId, row));
}

/** Page rows with money awaiting settlement recorded before `before`; and those settled on `day`. */
export function unsettledPageRows(sql: SqlStorage, before: string): PageRow[] {
  return sql
    .exec<PageRow>('SELECT page, seq, format, records, settled_on, settled_at FROM pages WHERE unsettled = 1 AND at < ? ORDER BY page, seq', before)
    .toArray();
}

export function pageRowsSettledOn(sql: SqlStorage, day: string): PageRow[] {
  return sql.exec<PageRow>('SELECT page, seq, format, records, settled_on, settled_at FROM pages WHERE settled_on = ? ORDER BY page, seq', day).toArray();
}

export function markPageSettled(sql: SqlStorage, row: { page: string; seq: number }, day: string, at: string): boolean {
  return sql.exec('UPDATE pages SET unsettled = 0, settled_on = ?, settled_at = ? WHERE page = ? AND seq = ? AND unsettled = 1', day, at, row.page, row.seq).rowsWritten > 0;
}

/** Whether any money of the shard still awaits settlement. */
export function holdsUnsettled(sql: SqlStorage): boolean {
  if (!hasTables(sql) || schemaVersion(sql) < 2) return false;
  return (
    sql.exec('SELECT 1 FROM pages WHERE unsettled = 1 LIMIT 1').toArray().length > 0 ||
    sql.exec('SELECT 1 FROM states WHERE unsettled = 1 LIMIT 1').toArray().length > 0
  );
}

export type OperationKind = 'capture' | 'void' | 'refund';

/** A capture, void or refund under its key: a claim while `answer` is null, then its answer (JSON). */
export interface OperationRow {
  key: string;
  transactionId: string;
  kind: OperationKind;
  requestHash: string;
  amount: number;
  refundId: string | null;
  createdAt: string;
  answer: string | null;
}

type OperationSql = { key: string; transaction_id: string; kind: OperationKind; request_hash: string; amount: number; refund_id: string | null; created_at: string; answer: string | null };

function operationFromSql(row: OperationSql): OperationRow {
  return {
    key: row.key,
    transactionId: row.transaction_id,
    kind: row.kind,
    requestHash: row.request_hash,
    amount: row.amount,
    refundId: row.refund_id,
    createdAt: row.created_at,
    answer: row.answer,
  };
}

export function findOperation(sql: SqlStorage, key: string): OperationRow | null {
  const row = sql.exec<OperationSql>('SELECT * FROM operations WHERE key = ?', key).toArray()[0];
  return row ? operationFromSql(row) : null;
}

export function operationsOf(sql: SqlStorage, transactionId: string): OperationRow[] {
  return sql.exec<OperationSql>('SELECT * FROM operations WHERE transaction_id = ? ORDER BY created_at', transactionId).toArray().map(operationFromSql);
}

export function insertOperation(sql: SqlStorage, op: OperationRow): void {
  sql.exec(
    'INSERT INTO operations (key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)',
    op.key,
    op.transactionId,
    op.kind,
    op.requestHash,
    op.amount,
    op.refundId,
    op.createdAt,
  );
}

export function answerOperation(sql: SqlStorage, key: string, answer: string): void {
  sql.exec('UPDATE operations SET answer = ? WHERE key = ?', answer, key);
}

export function deleteOperation(sql: SqlStorage, key: string): void {
  sql.exec('DELETE FROM operations WHERE key = ? AND answer IS NULL', key);
}

/** A processor's answer to a charge or an operation (services' ChargeResult is this type). */
export interface OperationResult {
  response: 'approved' | 'declined' | 'error';
  responseCode: number;
  /** Minor units approved: the amount, less on a partial approval, 0 when not approved. */
  amountAuthorized: number;
  authCode: string | null;
  processorResponseCode: string | null;
  processorResponseText: string;
  avsResponseCode: string | null;
  cvvResponseCode: string | null;
}

/** A capture, void or refund asked of the shard that holds its transaction. */
export interface OperationRequest {
  transactionId: string;
  /** Where the transaction's record is (its page). */
  query: ShardQuery;
  kind: OperationKind;
  /** The operation's key in this shard: the transaction, the kind and the client's Idempotency-Key. */
  key: string;
  requestHash: string;
  amount: number | null;
  now: string;
  /** Authorizations created before this have expired. */
  expiredBefore: string;
  /** A claim made before this was abandoned by its holder. */
  staleBefore: string;
}

/** How the shard answered an operation's claim. */
export type OperationBegin =
  | { outcome: 'claimed'; operation: OperationRow; record: TransactionRecord }
  | { outcome: 'answered'; answer: string; requestHash: string }
  | { outcome: 'not_found' }
  | { outcome: 'in_progress'; since: string }
  | { outcome: 'abandoned'; operation: OperationRow; record: TransactionRecord }
  | { outcome: 'refused'; reason: 'wrong_state' | 'amount'; message: string };

/** The processor's answer to a claimed operation, for the shard to apply. */
export interface OperationCompletion {
  key: string;
  query: ShardQuery;
  result: OperationResult;
  now: string;
  expiredBefore: string;
  idempotencyKey: string;
  ipAddress: string | null;
}

/** What a settlement run asks of a shard: settle what was captured before `before` into `batchDate`. */
export interface SettleRequest {
  before: string;
  batchDate: string;
  settledAt: string;
}

/** One transaction settled into a batch (what the settlement batch lists). */
export interface SettledEntry {
  id: string;
  type: string;
  processor_id: string;
  amount: number;
}

export interface SettleAnswer {
  /** Every transaction of the shard settled on `batchDate`, by this run or an earlier one. */
  entries: SettledEntry[];
  /** False: nothing awaits settlement, and the shard counts itself out of the index as of `generation`. */
  holdsUnsettled: boolean;
  generation: number;
}

/** Whether the shard is in its merchant's settlement index, and its registration's generation. */
export function readIndexing(sql: SqlStorage): { indexed: boolean; generation: number } {
  const row = sql.exec<{ indexed: number; index_generation: number }>('SELECT indexed, index_generation FROM meta').toArray()[0];
  return { indexed: row?.indexed === 1, generation: row?.index_generation ?? 0 };
}

export function writeIndexing(sql: SqlStorage, indexed: boolean, generation: number): void {
  sql.exec('UPDATE meta SET indexed = ?, index_generation = ?', indexed ? 1 : 0, generation);
}
