/**
 * A ledger shard's records (docs/transactions.md, "The ledger"): a transaction as the shard keeps it
 * (`StoredTransaction`), and as it travels and rests, a compact JSON array (`packRecord`): the result
 * CSV's columns in order, then the request fields the CSV has no column for. A packed record holds
 * no card number and no CVC.
 */
import { RESULT_COLUMNS, unpackResultColumns, type ResultColumn, type TransactionRecord } from '../../schemas/transaction-columns';

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

/**
 * JSON.stringify(packRecord(tx)), made from `resultJson`, the JSON of its record's result columns
 * (packResultColumns, schemas/transaction-columns.ts), when the caller made that already: a batch
 * capture's shard makes it for its answer, and the state's JSON is then that text inside its head
 * and extras, not a second encoding of the record. The same text either way.
 */
export function packedRecordJson(tx: StoredTransaction, resultJson?: string): string {
  if (resultJson === undefined) return JSON.stringify(packRecord(tx));
  const head = JSON.stringify([tx.requestHash, tx.batchId, tx.line]);
  const extras = JSON.stringify(EXTRA_COLUMNS.map((column) => tx.extras[column]));
  return `${head.slice(0, -1)},${resultJson.slice(1, -1)},${extras.slice(1)}`;
}

export function unpackRecord(merchantId: string, packed: PackedRecord): StoredTransaction {
  // The record in one shape with its fields in place (unpackResultColumns), not a dictionary.
  const record = unpackResultColumns(packed, HEAD);
  const extras = {} as Record<string, unknown>;
  EXTRA_COLUMNS.forEach((column, i) => (extras[column] = packed[HEAD + RESULT_COLUMNS.length + i] ?? null));
  return {
    record,
    merchantId,
    requestHash: typeof packed[0] === 'string' ? packed[0] : '',
    batchId: typeof packed[1] === 'string' ? packed[1] : null,
    line: typeof packed[2] === 'number' ? packed[2] : null,
    extras: extras as unknown as TransactionExtras,
  };
}

const RESULT_INDEX: ReadonlyMap<string, number> = new Map(RESULT_COLUMNS.map((column, i) => [column, HEAD + i]));

/** One result column of a packed record, without unpacking the other eighty (settlement reads a handful). */
export function packedField(packed: PackedRecord, column: ResultColumn): unknown {
  return packed[RESULT_INDEX.get(column) ?? -1] ?? null;
}

/** A record with its request hash left out (past the idempotency window, and in the archive). */
export function withoutHash(packed: PackedRecord): PackedRecord {
  return ['', ...packed.slice(1)];
}

/**
 * The archive's fields, in order, and where each is in a packed record: the record's columns, the
 * batch and line, then the extras (an extra that is also a column keeps the column's place and
 * the extra's value, as `{ ...record, batch_id, line, ...extras }` would).
 */
const ARCHIVE_FIELDS: readonly { name: string; at: number; kind: 'value' | 'batch' | 'line' }[] = (() => {
  const fields = new Map<string, { at: number; kind: 'value' | 'batch' | 'line' }>();
  RESULT_COLUMNS.forEach((column, i) => fields.set(column, { at: HEAD + i, kind: 'value' }));
  fields.set('batch_id', { at: 1, kind: 'batch' });
  fields.set('line', { at: 2, kind: 'line' });
  EXTRA_COLUMNS.forEach((column, i) => fields.set(column, { at: HEAD + RESULT_COLUMNS.length + i, kind: 'value' }));
  return [...fields].map(([name, field]) => ({ name, ...field }));
})();

/**
 * The archive's line for a packed record: the record's columns and extras as one JSON object, no
 * request hash. One short-lived object stringified at once: joining eighty `"name":value` pieces
 * with `+=` leaves a rope of about 160 strings per line (about 8 KB held per record until the
 * lines are joined), where the flat line is under 1 KB, and costs three times the CPU.
 */
export function archiveLine(_merchantId: string, packed: PackedRecord): string {
  const shown: Record<string, unknown> = {};
  for (const field of ARCHIVE_FIELDS) {
    const value = packed[field.at];
    shown[field.name] = field.kind === 'batch' ? (typeof value === 'string' ? value : null) : field.kind === 'line' ? (typeof value === 'number' ? value : null) : (value ?? null);
  }
  return JSON.stringify(shown);
}

export type { PackedRecord };
