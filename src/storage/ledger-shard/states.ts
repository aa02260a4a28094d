/** A ledger shard's `states` table (storage/ledger-shard/schema.ts): transactions changed since processed, and refunds. */
import { hasTables, schemaVersion } from './schema';
import { packedRecordJson, unpackRecord, type PackedRecord, type StoredTransaction } from './records';
import { decodeStored, encodeState } from './record-codec';

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
  /** The JSON of the record's result columns, when the writer made it already (packedRecordJson). */
  resultJson?: string;
  /**
   * The transaction's operation whose answer is kept in an operation block, not a row, and where
   * (operation-blocks.ts): at most one a transaction. Written once; a write that leaves it out keeps it.
   */
  blockOp?: BlockOp | null;
}

/** An operation answered in a block: the block's id and the operation's key. */
export interface BlockOp {
  block: number;
  key: string;
}

/** `record`: plain JSON text in rows written before compression, else the BLOB of record-codec.ts. */
export type StateSql = {
  id: string;
  original: number;
  record: string | ArrayBuffer;
  amount_refunded: number;
  unsettled: number;
  captured_at: string | null;
  settled_on: string | null;
  /** Schema step 9 (absent in rows read from an older shard's tables). */
  op_block?: number | null;
  op_key?: string | null;
};

export function stateFromSql(merchantId: string, row: StateSql): StateRow {
  return {
    stored: unpackRecord(merchantId, JSON.parse(decodeStored(row.record)) as PackedRecord),
    original: row.original === 1,
    amountRefunded: row.amount_refunded,
    unsettled: row.unsettled === 1,
    capturedAt: row.captured_at,
    settledOn: row.settled_on,
    blockOp: row.op_block != null && row.op_key != null ? { block: row.op_block, key: row.op_key } : null,
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
    `INSERT INTO states (id, original, record, amount_refunded, unsettled, captured_at, settled_on, updated_at, op_block, op_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET record = excluded.record, amount_refunded = excluded.amount_refunded, unsettled = excluded.unsettled,
       captured_at = excluded.captured_at, settled_on = excluded.settled_on, updated_at = excluded.updated_at,
       op_block = COALESCE(excluded.op_block, states.op_block), op_key = COALESCE(excluded.op_key, states.op_key)`,
    ...stateRowValues(state, updatedAt),
  );
}

/** A state row's column values, in the `states` table's order (one write here, many in bulk.ts); the record as encodeState stores it. */
export function stateRowValues(
  state: StateRow,
  updatedAt: string,
): [string, number, string | ArrayBuffer, number, number, string | null, string | null, string, number | null, string | null] {
  return [
    String(state.stored.record.id),
    state.original ? 1 : 0,
    encodeState(packedRecordJson(state.stored, state.resultJson), state.unsettled),
    state.amountRefunded,
    state.unsettled ? 1 : 0,
    state.capturedAt,
    state.settledOn,
    updatedAt,
    state.blockOp?.block ?? null,
    state.blockOp?.key ?? null,
  ];
}

/** State rows in id order, `limit` at a time after `afterId` (the archive writes them after the pages). */
export function statesAfter(sql: SqlStorage, merchantId: string, afterId: string | null, limit: number): StateRow[] {
  if (!hasTables(sql) || schemaVersion(sql) < 2) return [];
  const rows =
    afterId === null
      ? sql.exec<StateSql>('SELECT * FROM states ORDER BY id LIMIT ?', limit).toArray()
      : sql.exec<StateSql>('SELECT * FROM states WHERE id > ? ORDER BY id LIMIT ?', afterId, limit).toArray();
  return rows.map((row) => stateFromSql(merchantId, row));
}
