/** What a settlement run reads and marks in a ledger shard's `pages` and `states` (docs/transactions.md, "Settlement"). */
import { hasTables, schemaVersion } from './schema';
import type { PageRow } from './pages';
import { stateFromSql, type StateRow, type StateSql } from './states';

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
