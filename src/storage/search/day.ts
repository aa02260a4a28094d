/**
 * The SQLite tables of a search day object (durable-objects/search/day.ts): one merchant's
 * transactions created on one UTC day, as the search reads them (docs/capacity.md, "Search"). The
 * object creates and versions its tables itself (`MIGRATIONS`).
 *
 *   units    one row per ledger page: a batch chunk's claim (its records gzip-compressed, the lines
 *            it holds in the clear), or one API transaction or refund (plain JSON); the records are
 *            as processed; `settled_on`/`settled_at` is the settlement mark the ledger puts on its page
 *   changes  one row per transaction changed after it was processed (captured, voided, refunded,
 *            settled on its own): its current record, which wins over the unit's
 *   change_blocks  a batch chunk's changes on one unit kept together (storage/search/day-changes.ts):
 *            one row per call and unit, each transaction's record as in a change row; a
 *            transaction's latest state is the furthest along of its change row and its unit's blocks
 *   meta     the object's merchant and day, and when it empties itself
 *
 * Records rest as JSON arrays of the result CSV's columns in order (`packRecord`): no card number,
 * no CVC, no request hash.
 */
import type { Condition } from '../../schemas/search-conditions';
import { packResultColumns, unpackResultColumns, type TransactionRecord } from '../../schemas/transaction-columns';
import { hasTables, migrate } from '../do-schema';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     merchant_id TEXT NOT NULL,
     day TEXT NOT NULL,
     delete_at TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS units (
     shard TEXT NOT NULL,
     page TEXT NOT NULL,
     at TEXT NOT NULL,
     count INTEGER NOT NULL,
     pending INTEGER NOT NULL,
     changed INTEGER NOT NULL DEFAULT 0,
     settled_on TEXT,
     settled_at TEXT,
     members TEXT NOT NULL,
     format TEXT NOT NULL CHECK (format IN ('json', 'gzip')),
     records BLOB NOT NULL,
     PRIMARY KEY (shard, page, at)
   ) WITHOUT ROWID;
   CREATE INDEX IF NOT EXISTS units_at ON units(at, count);
   CREATE INDEX IF NOT EXISTS units_settled ON units(settled_on) WHERE settled_on IS NOT NULL;
   CREATE TABLE IF NOT EXISTS changes (
     id TEXT PRIMARY KEY,
     shard TEXT NOT NULL,
     page TEXT NOT NULL,
     at TEXT NOT NULL,
     rank INTEGER NOT NULL,
     amount_refunded INTEGER NOT NULL,
     settled_on TEXT,
     record TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX IF NOT EXISTS changes_settled ON changes(settled_on) WHERE settled_on IS NOT NULL;`,
  // A settlement day's units read newest first a few hundred at a time (storage/search/day-keys.ts).
  `CREATE INDEX IF NOT EXISTS units_settled_at ON units(settled_on, at) WHERE settled_on IS NOT NULL;
   CREATE INDEX IF NOT EXISTS changes_settled_at ON changes(settled_on, at) WHERE settled_on IS NOT NULL;
   CREATE INDEX IF NOT EXISTS units_shard_at ON units(shard, at);`,
  // A call's changes on one unit as one row (a capture file's chunk: 500 change rows were a tenth
  // of its CPU), found by their unit (storage/search/day-changes.ts).
  `CREATE TABLE IF NOT EXISTS change_blocks (
     seq INTEGER PRIMARY KEY,
     shard TEXT NOT NULL,
     page TEXT NOT NULL,
     at TEXT NOT NULL,
     ranks TEXT NOT NULL,
     entries TEXT NOT NULL
   );
   CREATE INDEX IF NOT EXISTS change_blocks_unit ON change_blocks(shard, page, at);`,
];
export const SEARCH_DAY_SCHEMA_VERSION = MIGRATIONS.length;

/** A unit's identity: the ledger shard and page it mirrors, and its records' creation time. */
export type UnitKey = {
  shard: string;
  page: string;
  at: string;
};

export function unitKeyString(key: UnitKey): string {
  return `${key.shard}\n${key.page}\n${key.at}`;
}

/** A record as a search sees it: as it is now, with what was refunded of it. */
export interface PresentTransaction {
  record: TransactionRecord;
  amountRefunded: number;
}

// == What the day object is asked and answers =================================================

/** Which day object a call is for: the first write keeps it. */
export interface DayIdentity {
  merchantId: string;
  day: string;
}

/** A unit to index: a ledger page's records created at `at`, as processed. */
export interface UnitInput extends UnitKey {
  records: TransactionRecord[];
}

/**
 * A transaction changed since processed, as a day object is sent it: where its page is, its current
 * record already packed (`packRecord`, as JSON: what the change row stores) and the few fields the
 * object reads. A chunk's call carries 500 of them: strings cross the call far cheaper than records
 * of some forty fields, and the object no longer packs them (`changeInput` makes one).
 */
export interface ChangeInput {
  id: string;
  shard: string;
  amountRefunded: number;
  /** JSON of packRecord(record). */
  packed: string;
  status: string | null;
  createdAt: string;
  settlementBatchId: string | null;
  settledAt: string | null;
}

const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

/** `packed`: JSON of packRecord(record), when the caller has it already. */
export function changeInput(id: string, shard: string, record: TransactionRecord, amountRefunded: number, packed?: string): ChangeInput {
  return {
    id,
    shard,
    amountRefunded,
    packed: packed ?? JSON.stringify(packRecord(record)),
    status: textOrNull(record.status),
    createdAt: String(record.created_at),
    settlementBatchId: textOrNull(record.settlement_batch_id),
    settledAt: textOrNull(record.settled_at),
  };
}

/** A place in the search order: newer first, then the greater id first. */
export interface Position {
  at: string;
  id: string;
}

/** Which units a scan may read: every unit of the window, or the ones an exact filter names. */
export type Restriction =
  | { kind: 'all' }
  | { kind: 'shard'; shard: string }
  | { kind: 'ids'; shard: string; ids: string[] }
  | { kind: 'ats'; ats: string[] }
  | { kind: 'settled'; day: string };

export interface DayScan {
  /** The created_at window within this day: `from` included, `to` excluded. */
  from: string;
  to: string;
  /** A cursor: only records strictly after this position (older, or as old with a smaller id). */
  after: Position | null;
  restrict: Restriction;
  conditions: Condition[];
  /** Positions to answer, newest first. */
  want: number;
  /** Count every match of the window too (else stop once `want` positions are found). */
  count: boolean;
  /** Records this call may read. */
  budget: number;
  /** Authorizations created before this have expired. */
  expiredBefore: string;
}

export interface DayScanAnswer {
  positions: Position[];
  /** Matches counted (all of the window's when `exact`). */
  count: number;
  /** False: the budget ran out before every record was read. */
  exact: boolean;
  /** Records read. */
  read: number;
  /**
   * Set when the budget ran out before the window's end: everything at or after this time was
   * read; a continuation asks for what is older (`after` at this time with an empty id).
   */
  stoppedAt: string | null;
}

export type DayFailure = { failed: string };

export type PackedRecord = unknown[];

/** A record as the search stores it: its result columns in order (schemas/transaction-columns.ts). */
export const packRecord: (record: TransactionRecord) => PackedRecord = packResultColumns;
export function unpackRecord(packed: PackedRecord): TransactionRecord {
  return unpackResultColumns(packed);
}

/** A unit row to write: its records already encoded by the object (gzip for a chunk). */
export interface UnitRow extends UnitKey {
  count: number;
  pending: number;
  /** The batch lines (batch units) or transaction ids it holds, for the settlement's look-ups. */
  members: (number | string)[];
  format: 'json' | 'gzip';
  records: string | Uint8Array;
}

/** A unit row as read. */
export type StoredUnit = UnitKey & {
  count: number;
  pending: number;
  changed: number;
  settled_on: string | null;
  settled_at: string | null;
  members: string;
  format: 'json' | 'gzip';
  records: string | ArrayBuffer;
};

export interface DayMeta {
  merchantId: string;
  day: string;
  deleteAt: string;
}

export function readDayMeta(sql: SqlStorage): DayMeta | null {
  if (!hasTables(sql)) return null;
  const row = sql.exec<{ merchant_id: string; day: string; delete_at: string }>('SELECT merchant_id, day, delete_at FROM meta').toArray()[0];
  return row ? { merchantId: row.merchant_id, day: row.day, deleteAt: row.delete_at } : null;
}

/** Whether the tables are of an older schema version than this build's. */
export function dayNeedsUpgrade(sql: SqlStorage): boolean {
  return (sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').toArray()[0]?.v ?? 0) < SEARCH_DAY_SCHEMA_VERSION;
}

/** Creates or upgrades the tables and writes the meta row once; answers the meta in force. */
export function initialiseDay(sql: SqlStorage, meta: DayMeta): DayMeta {
  migrate(sql, MIGRATIONS);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, merchant_id, day, delete_at) VALUES (1, ?, ?, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET schema_version = excluded.schema_version`,
    SEARCH_DAY_SCHEMA_VERSION,
    meta.merchantId,
    meta.day,
    meta.deleteAt,
  );
  return readDayMeta(sql) ?? meta;
}

/** Which of these units are stored (their key strings). */
export function storedUnitKeys(sql: SqlStorage, keys: readonly UnitKey[]): Set<string> {
  const found = new Set<string>();
  if (keys.length === 0 || !hasTables(sql)) return found;
  const rows = sql
    .exec<UnitKey>(
      `SELECT u.shard, u.page, u.at FROM json_each(?) AS k
       JOIN units u ON u.shard = k.value ->> 0 AND u.page = k.value ->> 1 AND u.at = k.value ->> 2`,
      JSON.stringify(keys.map((k) => [k.shard, k.page, k.at])),
    )
    .toArray();
  for (const row of rows) found.add(unitKeyString(row));
  return found;
}

/** Writes a unit unless it is stored (a replay); answers whether it was written. */
export function insertUnit(sql: SqlStorage, unit: UnitRow): boolean {
  return (
    sql.exec(
      `INSERT INTO units (shard, page, at, count, pending, members, format, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (shard, page, at) DO NOTHING`,
      unit.shard,
      unit.page,
      unit.at,
      unit.count,
      unit.pending,
      JSON.stringify(unit.members),
      unit.format,
      unit.records,
    ).rowsWritten > 0
  );
}

const UNIT_COLUMNS = 'shard, page, at, count, pending, changed, settled_on, settled_at, members, format, records';

/**
 * Units created in [from, to), newest first, `limit` at a time. The last time of a full read may go
 * on in the next read: the caller reads that time whole.
 */
export function unitsBefore(sql: SqlStorage, range: { from: string; to: string }, limit: number): StoredUnit[] {
  if (!hasTables(sql)) return [];
  return sql
    .exec<StoredUnit>(`SELECT ${UNIT_COLUMNS} FROM units WHERE at >= ? AND at < ? ORDER BY at DESC LIMIT ?`, range.from, range.to, limit)
    .toArray();
}

/** Every unit created at exactly `at`. */
export function unitsAt(sql: SqlStorage, at: string): StoredUnit[] {
  return sql.exec<StoredUnit>(`SELECT ${UNIT_COLUMNS} FROM units WHERE at = ?`, at).toArray();
}

export function readUnits(sql: SqlStorage, keys: readonly UnitKey[]): StoredUnit[] {
  if (keys.length === 0 || !hasTables(sql)) return [];
  return sql
    .exec<StoredUnit>(
      `SELECT ${UNIT_COLUMNS.split(', ').map((c) => `u.${c}`).join(', ')} FROM json_each(?) AS k
       JOIN units u ON u.shard = k.value ->> 0 AND u.page = k.value ->> 1 AND u.at = k.value ->> 2`,
      JSON.stringify(keys.map((k) => [k.shard, k.page, k.at])),
    )
    .toArray();
}

/** The batch lines (or ids) a unit holds, without reading its records. */
export function unitMembers(sql: SqlStorage, key: UnitKey): (number | string)[] {
  const row = sql.exec<{ members: string }>('SELECT members FROM units WHERE shard = ? AND page = ? AND at = ?', key.shard, key.page, key.at).toArray()[0];
  return row ? (JSON.parse(row.members) as (number | string)[]) : [];
}

/**
 * How many records the newest `limit` units created in [from, to) hold: their stored counts (one
 * index entry read per unit, no record), and how many units were counted (`limit`: maybe more).
 */
export function countBetween(sql: SqlStorage, from: string, to: string, limit: number): { count: number; units: number } {
  if (!hasTables(sql)) return { count: 0, units: 0 };
  return sql
    .exec<{ count: number; units: number }>(
      'SELECT COALESCE(SUM(count), 0) AS count, COUNT(*) AS units FROM (SELECT count FROM units WHERE at >= ? AND at < ? ORDER BY at DESC LIMIT ?)',
      from,
      to,
      limit,
    )
    .one();
}

/** The keys of the units of a page (several when a chunk's rows were claimed by more than one attempt). */
export function unitKeysOfPage(sql: SqlStorage, shard: string, page: string): UnitKey[] {
  if (!hasTables(sql)) return [];
  return sql.exec<UnitKey>('SELECT shard, page, at FROM units WHERE shard = ? AND page = ?', shard, page).toArray();
}

/** The keys of the units of the page with the greatest name not above `page` (a batch row's chunk, from its line). */
export function unitKeysOfFloorPage(sql: SqlStorage, shard: string, page: string): UnitKey[] {
  if (!hasTables(sql)) return [];
  const found = sql.exec<{ page: string | null }>('SELECT MAX(page) AS page FROM units WHERE shard = ? AND page <= ?', shard, page).one().page;
  return found === null ? [] : unitKeysOfPage(sql, shard, found);
}

/** Marks a unit's records awaiting settlement settled (the ledger's page mark), once. */
export function markUnitSettled(sql: SqlStorage, key: UnitKey, day: string, at: string): boolean {
  return (
    sql.exec(
      'UPDATE units SET settled_on = ?, settled_at = ? WHERE shard = ? AND page = ? AND at = ? AND pending > 0 AND settled_on IS NULL',
      day,
      at,
      key.shard,
      key.page,
      key.at,
    ).rowsWritten > 0
  );
}

// == Changes =================================================================================

export interface ChangeRow extends UnitKey {
  id: string;
  /** How far the transaction has moved in its life: a later state never loses to an earlier one. */
  rank: number;
  amountRefunded: number;
  settledOn: string | null;
  record: TransactionRecord;
}

/** A change row to write: its record as stored (JSON of packRecord). */
export type ChangeWrite = Omit<ChangeRow, 'record'> & { packed: string };

type ChangeSql = { id: string; shard: string; page: string; at: string; rank: number; amount_refunded: number; settled_on: string | null; record: string };

function changeFromSql(row: ChangeSql): ChangeRow {
  return {
    id: row.id,
    shard: row.shard,
    page: row.page,
    at: row.at,
    rank: row.rank,
    amountRefunded: row.amount_refunded,
    settledOn: row.settled_on,
    record: unpackRecord(JSON.parse(row.record) as PackedRecord),
  };
}

export function readChanges(sql: SqlStorage, ids: readonly string[]): Map<string, ChangeRow> {
  const found = new Map<string, ChangeRow>();
  if (ids.length === 0 || !hasTables(sql)) return found;
  for (const row of sql.exec<ChangeSql>('SELECT * FROM changes WHERE id IN (SELECT value FROM json_each(?))', JSON.stringify(ids))) {
    found.set(row.id, changeFromSql(row));
  }
  return found;
}
