/**
 * What a settlement run reads and marks in a ledger shard's `pages` and `states` (docs/transactions.md,
 * "Settlement"): never a whole table, always the next rows after a cursor, by the partial indexes of
 * what awaits settlement (`pages_unsettled`, `states_unsettled`).
 */
import { hasTables, schemaVersion } from './schema';
import type { HandoffPiece } from './handoff';
import type { PageRow } from './pages';
import { stateFromSql, type StateRow, type StateSql } from './states';
import { NOT_IN_OPERATION_BLOCKS } from './operation-blocks';

export type { SettledEntry } from './handoff';

/**
 * What a settlement run asks of a shard: settle what was captured before `before` into `batchDate`,
 * and answer the next piece after `after` (the last piece the settlement object recorded; every
 * piece up to it is acknowledged). `pageEntries` lowers the entries per piece (tests).
 */
export interface SettleRequest {
  before: string;
  batchDate: string;
  settledAt: string;
  after: number;
  pageEntries?: number;
}

/** A shard's answer: a piece to record, or that it is done for this run. */
export type SettleAnswer =
  | { piece: HandoffPiece; done: false }
  /** Nothing more for this run; `holdsUnsettled` false: the shard counts itself out of the index as of `generation`. */
  | { piece: null; done: true; holdsUnsettled: boolean; generation: number }
  /** Rows were marked but none settled money (voided since, say): ask again. */
  | { piece: null; done: false };

/** Where a run's marking stands: the run it belongs to, and the last page row and state it passed. */
export interface SettleCursor {
  batchDate: string;
  before: string;
  page: string | null;
  seq: number;
  stateId: string | null;
}

/** The next page rows with money awaiting settlement recorded before `before`, after the cursor, in order. */
export function unsettledPageRows(sql: SqlStorage, before: string, cursor: SettleCursor, limit: number): PageRow[] {
  // The partial index holds (unsettled, page, seq): read in order from the cursor, never sorted.
  const columns = 'SELECT page, seq, format, records, settled_on, settled_at FROM pages INDEXED BY pages_unsettled';
  return cursor.page === null
    ? sql.exec<PageRow>(`${columns} WHERE unsettled = 1 AND at < ? ORDER BY page, seq LIMIT ?`, before, limit).toArray()
    : sql.exec<PageRow>(`${columns} WHERE unsettled = 1 AND at < ? AND (page, seq) > (?, ?) ORDER BY page, seq LIMIT ?`, before, cursor.page, cursor.seq, limit).toArray();
}

/**
 * The next states awaiting settlement captured before `before`, after `afterId`, in id order, but
 * those with an operation in flight (claimed, not answered): a void may be with its processor, and
 * they wait for a later run.
 */
export function unsettledStates(sql: SqlStorage, merchantId: string, before: string, afterId: string | null, limit: number): StateRow[] {
  // The operations in flight are few (one per transaction at most): the subquery reads them once.
  // Those claimed in a block (operation-blocks.ts): at most MAX_OPEN_OPERATION_BLOCKS rows, read once too.
  const notInFlight = `id NOT IN (SELECT transaction_id FROM operations INDEXED BY operations_pending WHERE answer IS NULL) AND ${NOT_IN_OPERATION_BLOCKS}`;
  const rows =
    afterId === null
      ? sql.exec<StateSql>(`SELECT * FROM states INDEXED BY states_unsettled WHERE unsettled = 1 AND captured_at < ? AND ${notInFlight} ORDER BY id LIMIT ?`, before, limit).toArray()
      : sql
          .exec<StateSql>(`SELECT * FROM states INDEXED BY states_unsettled WHERE unsettled = 1 AND captured_at < ? AND id > ? AND ${notInFlight} ORDER BY id LIMIT ?`, before, afterId, limit)
          .toArray();
  return rows.map((row) => stateFromSql(merchantId, row));
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
