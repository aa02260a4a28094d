/**
 * Many rows of a ledger shard's operations, counts, states and page marks read or written a group
 * at a time (a batch chunk's captures, voids and refunds): the values travel as one JSON array
 * bound to `json_each`, one bound parameter however many rows (SQLite's limit is
 * DURABLE_OBJECTS.boundParameters), each array cut to at most half of the 2 MB a bound string may
 * hold (DURABLE_OBJECTS.rowBytes); rows carrying a record bind the records as one BLOB beside it
 * (spannedGroups). A group of any size takes a few statements per table, not one per row (answers
 * excepted: answerOperations); the statement text itself is fixed and short (DURABLE_OBJECTS.statementBytes).
 */
import { utf8Bytes, type PageRow } from './pages';
import { JSON_PARAMETER_BYTES, jsonArrays } from './json-arrays';
import { hasTables } from './schema';
import { readStates, stateRowValues, type StateRow } from './states';
import { keyTransaction, operationFromSql, type OperationKind, type OperationRow, type OperationSql } from './operations';
import { encodeStored } from './record-codec';
import { OpenOperationBlocks } from './operation-blocks';

export { JSON_PARAMETER_BYTES, jsonArrays };

/** Statements whose rows each carry one large value (a record) as bytes beside the JSON of the rest. */
export interface SpannedGroup {
  /** A JSON array of rows: each row's small values, then its large value's 1-based offset in `bytes` and its length. */
  json: string;
  bytes: Uint8Array;
}

const utf8 = new TextEncoder();

/**
 * Rows with one large value each (a record's JSON text, or its compressed bytes), grouped for
 * statements that read the small values from `json` bound to `json_each` and the large one from
 * `bytes` bound as a BLOB beside it: `substr(?2, value ->> n, value ->> n+1)` (substr counts a
 * BLOB's bytes; CAST … AS TEXT gives text back). Inside the JSON, a record's every quote was escaped
 * by JSON.stringify and unescaped again by SQLite's JSON reader, and a compressed record went as
 * hex: measured in a 100,000-row capture file's profile, the states' statements took a fifth less
 * SQLite time this way. Each group's bytes are encoded straight into one buffer. Each group's JSON
 * and bytes are at most JSON_PARAMETER_BYTES (half of what one bound value may hold); one row is
 * far under it (a larger one throws).
 */
export function spannedGroups(rows: readonly { values: readonly unknown[]; large: string | ArrayBuffer }[]): SpannedGroup[] {
  const groups: SpannedGroup[] = [];
  let parts: string[] = [];
  // Each group's bytes are written straight into one buffer (no buffer a row), as large as the rows
  // left could need (UTF-8 is at most three bytes a UTF-16 unit), at most the bound: one API
  // operation's state takes a few KB, a chunk's the bound.
  let left = 0;
  for (const row of rows) left += typeof row.large === 'string' ? row.large.length * 3 : row.large.byteLength;
  const buffer = () => new Uint8Array(Math.min(JSON_PARAMETER_BYTES, left));
  let bytes = buffer();
  let jsonSize = 2;
  let byteSize = 0;
  const flush = () => {
    if (parts.length === 0) return;
    groups.push({ json: `[${parts.join(',')}]`, bytes: bytes.subarray(0, byteSize) });
    parts = [];
    bytes = buffer();
    jsonSize = 2;
    byteSize = 0;
  };
  /** Writes `large` at byteSize; its length, or null when the rest of the buffer cannot hold it. */
  const put = (large: string | ArrayBuffer): number | null => {
    if (typeof large !== 'string') {
      if (byteSize + large.byteLength > bytes.length) return null;
      bytes.set(new Uint8Array(large), byteSize);
      return large.byteLength;
    }
    const { read, written } = utf8.encodeInto(large, bytes.subarray(byteSize));
    return read === large.length ? written : null;
  };
  for (const row of rows) {
    const values = JSON.stringify(row.values).slice(1, -1);
    // The offset and length take at most 16 characters, with their commas and brackets.
    const size = utf8Bytes(values) + 20;
    if (parts.length > 0 && jsonSize + size > JSON_PARAMETER_BYTES) flush();
    let length = put(row.large);
    if (length === null && parts.length > 0) {
      flush();
      length = put(row.large);
    }
    if (length === null) throw new Error(`a value of ${typeof row.large === 'string' ? utf8Bytes(row.large) : row.large.byteLength} bytes is more than one bound value holds`);
    parts.push(`[${values}${values === '' ? '' : ','}${byteSize + 1},${length}]`);
    jsonSize += size;
    byteSize += length;
    left -= typeof row.large === 'string' ? row.large.length * 3 : row.large.byteLength;
  }
  flush();
  return groups;
}

/**
 * The operations under `keys` (claimed or answered, in a row or a block), by key. Rows read as
 * arrays (`raw()`): a row as an object cost twice the time to build.
 */
export function findOperations(sql: SqlStorage, keys: readonly string[], open: OpenOperationBlocks = OpenOperationBlocks.read(sql, keys.map(keyTransaction))): Map<string, OperationRow> {
  const found = new Map<string, OperationRow>();
  // A batch chunk's claims are in a block (operation-blocks.ts): the keys it holds need no row read.
  const inRows: string[] = [];
  for (const key of new Set(keys)) {
    const held = open.operation(key);
    if (held) found.set(key, held);
    else inRows.push(key);
  }
  for (const array of jsonArrays(inRows)) {
    const rows = sql
      .exec('SELECT key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer FROM operations WHERE key IN (SELECT value FROM json_each(?))', array)
      .raw();
    for (const [key, transactionId, kind, requestHash, amount, refundId, createdAt, answer] of rows) {
      const row = { key, transaction_id: transactionId, kind, request_hash: requestHash, amount, refund_id: refundId, created_at: createdAt, answer } as OperationSql;
      found.set(row.key, operationFromSql(row));
    }
  }
  return found;
}

/**
 * What the operations under `keys` act on, and whether each is still unanswered, by key: the few
 * columns an answer call decides its reads by before its synchronous step (which reads the whole
 * rows again), without reading or decoding any answer.
 */
export function operationTargets(sql: SqlStorage, keys: readonly string[]): Map<string, { transactionId: string; kind: OperationKind; open: boolean }> {
  const found = new Map<string, { transactionId: string; kind: OperationKind; open: boolean }>();
  const blocks = OpenOperationBlocks.read(sql, keys.map(keyTransaction));
  const inRows: string[] = [];
  for (const key of new Set(keys)) {
    const held = blocks.operation(key);
    if (held) found.set(key, { transactionId: held.transactionId, kind: held.kind, open: held.answer === null });
    else inRows.push(key);
  }
  for (const array of jsonArrays(inRows)) {
    for (const [key, transactionId, kind, open] of sql.exec('SELECT key, transaction_id, kind, answer IS NULL FROM operations WHERE key IN (SELECT value FROM json_each(?))', array).raw()) {
      found.set(String(key), { transactionId: String(transactionId), kind: kind as OperationKind, open: open === 1 });
    }
  }
  return found;
}

/** The operation claimed and not answered on each of `ids` that has one (one at a time per transaction; in a row or a block), by transaction. */
export function pendingOperationsOf(sql: SqlStorage, ids: readonly string[], open: OpenOperationBlocks = OpenOperationBlocks.read(sql)): Map<string, OperationRow> {
  const found = new Map<string, OperationRow>();
  for (const id of ids) {
    const held = open.pendingOf(id);
    if (held) found.set(id, held);
  }
  for (const array of jsonArrays([...new Set(ids)])) {
    const rows = sql.exec<OperationSql>(
      'SELECT * FROM operations INDEXED BY operations_pending WHERE answer IS NULL AND transaction_id IN (SELECT value FROM json_each(?))',
      array,
    );
    for (const row of rows) if (!found.has(row.transaction_id)) found.set(row.transaction_id, operationFromSql(row));
  }
  return found;
}

/** `stored`: read from the transaction's counts row (which must then be kept up to date). */
export type OperationCounts = { operations: number; refunds: number; stored?: true };

/**
 * A transaction gets its counts row once it has had this many operations. Before, its count is its
 * operations' rows, counted by their keys' range (operationKeyRange): at most COUNTS_ROW_FROM - 1 rows a transaction
 * (a chunk's 500 transactions, at most 7,500 index rows). Most transactions have one or two
 * operations (a capture, a refund), and a row per transaction would be a row written per capture.
 */
export const COUNTS_ROW_FROM = 16;

/**
 * How many operations each of `ids` has had, and how many were refunds (declined or not, each claim
 * counted once; bounded by MAX_OPERATIONS_PER_TRANSACTION): its counts row, one row whatever came
 * before, else (fewer than COUNTS_ROW_FROM, operated on before the counts existed, or never)
 * counted from its rows.
 */
export function operationCountsOf(sql: SqlStorage, ids: readonly string[], open: OpenOperationBlocks = OpenOperationBlocks.read(sql, ids)): Map<string, OperationCounts> {
  const counts = new Map<string, OperationCounts>();
  const distinct = [...new Set(ids)];
  for (const array of jsonArrays(distinct)) {
    const rows = sql.exec<{ id: string; operations: number; refunds: number }>(
      'SELECT transaction_id AS id, operations, refunds FROM operation_counts WHERE transaction_id IN (SELECT value FROM json_each(?))',
      array,
    );
    for (const row of rows) counts.set(row.id, { operations: row.operations, refunds: row.refunds, stored: true });
  }
  const uncounted = distinct.filter((id) => !counts.has(id));
  for (const array of jsonArrays(uncounted)) {
    const rows = sql.exec<{ id: string; operations: number; refunds: number }>(
      // Each transaction's operations by its keys' range (operationKeyRange: `{id}:` to `{id};`).
      `SELECT j.value AS id, COUNT(*) AS operations, COALESCE(SUM(o.kind = 'refund'), 0) AS refunds
       FROM json_each(?) AS j JOIN operations o ON o.key > j.value || ':' AND o.key < j.value || ';' GROUP BY j.value`,
      array,
    );
    for (const row of rows) counts.set(row.id, { operations: row.operations, refunds: row.refunds });
  }
  for (const id of uncounted) {
    const counted = counts.get(id) ?? { operations: 0, refunds: 0 };
    // A claim open in a block, and an operation answered in one (never a refund), have no row: each counts as one.
    const held = open.pendingOf(id);
    const operations = counted.operations + (held ? 1 : 0) + (open.hasBlockOperation(id) ? 1 : 0);
    const refunds = counted.refunds + (held?.kind === 'refund' ? 1 : 0);
    counts.set(id, operations === counted.operations ? counted : { operations, refunds });
  }
  return counts;
}

/** The states of `ids` that have one (readStates, a parameter's worth at a time). */
export function readStatesOf(sql: SqlStorage, merchantId: string, ids: readonly string[]): Map<string, StateRow> {
  const found = new Map<string, StateRow>();
  for (const array of jsonArrays([...new Set(ids)])) for (const [id, state] of readStates(sql, merchantId, JSON.parse(array) as string[])) found.set(id, state);
  return found;
}

/** The key of a page row in the maps below. */
export function pageRowKey(row: { page: string; seq: number }): string {
  return `${row.page}\n${row.seq}`;
}

/** The settlement marks of every row of the pages `names`, as they are now, by pageRowKey (no records read). */
export function pageMarks(sql: SqlStorage, names: readonly string[]): Map<string, { settledOn: string | null; settledAt: string | null }> {
  const marks = new Map<string, { settledOn: string | null; settledAt: string | null }>();
  if (!hasTables(sql)) return marks;
  for (const array of jsonArrays([...new Set(names)])) {
    const rows = sql.exec<{ page: string; seq: number; settled_on: string | null; settled_at: string | null }>(
      'SELECT page, seq, settled_on, settled_at FROM pages WHERE page IN (SELECT value FROM json_each(?))',
      array,
    );
    for (const row of rows) marks.set(pageRowKey(row), { settledOn: row.settled_on ?? null, settledAt: row.settled_at ?? null });
  }
  return marks;
}

/** Claims, not answered yet. */
export function insertOperations(sql: SqlStorage, ops: readonly OperationRow[]): void {
  for (const array of jsonArrays(ops.map((op) => [op.key, op.transactionId, op.kind, op.requestHash, op.amount, op.refundId, op.createdAt]))) {
    sql.exec(
      `INSERT INTO operations (key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
         json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), NULL FROM json_each(?)`,
      array,
    );
  }
}

/** Each transaction's counts as they now are, written in the step that inserts its claim (one row per transaction). */
export function writeOperationCounts(sql: SqlStorage, counts: ReadonlyMap<string, OperationCounts>): void {
  for (const array of jsonArrays([...counts].map(([id, c]) => [id, c.operations, c.refunds]))) {
    sql.exec(
      `INSERT INTO operation_counts (transaction_id, operations, refunds)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?) WHERE true
       ON CONFLICT (transaction_id) DO UPDATE SET operations = excluded.operations, refunds = excluded.refunds`,
      array,
    );
  }
}

/**
 * Operations claimed in a block, answered: each written whole as its row (values in the JSON, the
 * answer as stored, record-codec.ts, in the BLOB beside it: spannedGroups), a few statements for a
 * chunk's. Its block entry is dropped in the same step (operation-blocks.ts).
 */
export function insertAnsweredOperations(sql: SqlStorage, answered: readonly OperationRow[]): void {
  const rows = answered.map((op) => ({ values: [op.key, op.transactionId, op.kind, op.requestHash, op.amount, op.refundId, op.createdAt], large: encodeStored(op.answer ?? '') }));
  for (const { json, bytes } of spannedGroups(rows)) {
    sql.exec(
      `INSERT INTO operations (key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, substr(?2, value ->> 7, value ->> 8) FROM json_each(?1)`,
      json,
      bytes,
    );
  }
}

/**
 * Answers kept under their keys: each claimed row updated with its answer, found by its primary
 * key, one statement a row with the answer bound as it is stored (record-codec.ts). Measured in
 * workerd against one upsert joined to a JSON object of hex answers for the whole group: about 30%
 * less CPU (no hex, no JSON for SQLite to parse), the runtime's cost per statement being small next
 * to the row's own write. A call answers at most a batch chunk's operations (BATCH_CHUNK_ROWS, 500
 * by default): a statement each, in one synchronous step of well under a second.
 */
export function answerOperations(sql: SqlStorage, answered: readonly OperationRow[]): void {
  for (const op of answered) sql.exec('UPDATE operations SET answer = ? WHERE key = ?', op.answer === null ? null : encodeStored(op.answer), op.key);
}

/**
 * States written as writeState writes one (one per transaction: the last given wins), each with its
 * time; each record travels as bytes beside the JSON of the row (spannedGroups): text kept as text,
 * a compressed record as its BLOB (the last value of the row's JSON says which).
 */
export function writeStates(sql: SqlStorage, states: readonly { state: StateRow; updatedAt: string }[]): void {
  const last = new Map<string, { values: unknown[]; large: string | ArrayBuffer }>();
  for (const { state, updatedAt } of states) {
    const [id, original, record, ...rest] = stateRowValues(state, updatedAt);
    last.set(id, { values: [id, original, ...rest, typeof record === 'string' ? 0 : 1], large: record });
  }
  for (const { json, bytes } of spannedGroups([...last.values()])) {
    sql.exec(
      `INSERT INTO states (id, original, record, amount_refunded, unsettled, captured_at, settled_on, updated_at, op_block, op_key)
       SELECT value ->> 0, value ->> 1,
         CASE value ->> 9 WHEN 1 THEN substr(?2, value ->> 10, value ->> 11) ELSE CAST(substr(?2, value ->> 10, value ->> 11) AS TEXT) END,
         value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8 FROM json_each(?1) WHERE true
       ON CONFLICT (id) DO UPDATE SET record = excluded.record, amount_refunded = excluded.amount_refunded, unsettled = excluded.unsettled,
         captured_at = excluded.captured_at, settled_on = excluded.settled_on, updated_at = excluded.updated_at,
         op_block = COALESCE(excluded.op_block, states.op_block), op_key = COALESCE(excluded.op_key, states.op_key)`,
      json,
      bytes,
    );
  }
}

/** The rows of the pages `names` and each row's stored size, in page order (no records read). */
export function pageRowSizes(sql: SqlStorage, names: readonly string[]): { page: string; seq: number; bytes: number }[] {
  if (!hasTables(sql)) return [];
  const rows: { page: string; seq: number; bytes: number }[] = [];
  for (const array of jsonArrays([...new Set(names)])) {
    rows.push(
      ...sql
        .exec<{ page: string; seq: number; bytes: number }>('SELECT page, seq, length(records) AS bytes FROM pages WHERE page IN (SELECT value FROM json_each(?)) ORDER BY page, seq', array)
        .toArray(),
    );
  }
  return rows;
}

/** The page rows `rows` names, with their records (the caller bounds how many bytes one read holds). */
export function readPageRowsAt(sql: SqlStorage, rows: readonly { page: string; seq: number }[]): PageRow[] {
  const read: PageRow[] = [];
  for (const array of jsonArrays(rows.map((row) => [row.page, row.seq]))) {
    read.push(
      ...sql
        .exec<PageRow>(
          `SELECT page, seq, format, records, settled_on, settled_at FROM pages
           WHERE (page, seq) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)) ORDER BY page, seq`,
          array,
        )
        .toArray(),
    );
  }
  return read;
}
