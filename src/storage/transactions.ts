/**
 * D1 access for the `transactions` table. A chunk's new records are written by one
 * `INSERT ... SELECT ... FROM json_each(?1)` per ~900 KB of rows: the rows travel as one JSON
 * array in a single bound parameter, which keeps far below D1's 100-parameter and 100 KB
 * statement limits while writing hundreds of rows in one round trip.
 */
import { jsonArrayParameters } from '../lib/json-parameters';
import { RESULT_COLUMNS, type ResultColumn, type TransactionRecord } from '../schemas/transaction-columns';

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

export interface StoredTransaction {
  record: TransactionRecord;
  merchantId: string;
  requestHash: string;
  batchId: string | null;
  line: number | null;
  extras: TransactionExtras;
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
const META_COLUMNS = ['merchant_id', 'request_hash', 'batch_id', 'line'] as const;
const COLUMNS = [...RESULT_COLUMNS, ...META_COLUMNS, ...EXTRA_COLUMNS];

/** Record columns stored as 0/1. */
const BOOLEAN_COLUMNS = new Set<string>(['tax_exempt', 'surcharge_exempt', 'email_receipt']);

const INSERT_SQL = `INSERT INTO transactions (${COLUMNS.join(', ')})
  SELECT ${COLUMNS.map((_, i) => `json_extract(value, '$[${i}]')`).join(', ')}
  FROM json_each(?1) WHERE true
  ON CONFLICT (merchant_id, idempotency_key) DO NOTHING
  RETURNING id`;

/** Stay well under D1's 2 MB limit for one bound value. */
const MAX_PARAMETER_CHARS = 900_000;

type Row = Record<string, string | number | null>;

function toStoredTransaction(row: Row): StoredTransaction {
  const bool = (column: string) => (row[column] === null ? null : row[column] === 1);
  const record = {} as TransactionRecord;
  for (const column of RESULT_COLUMNS) {
    record[column] = BOOLEAN_COLUMNS.has(column) ? bool(column) : (row[column] ?? null);
  }
  return {
    record,
    merchantId: String(row.merchant_id),
    requestHash: String(row.request_hash),
    batchId: typeof row.batch_id === 'string' ? row.batch_id : null,
    line: typeof row.line === 'number' ? row.line : null,
    extras: {
      base_amount: typeof row.base_amount === 'number' ? row.base_amount : null,
      surcharge: Number(row.surcharge),
      discount_amount: Number(row.discount_amount),
      surcharge_exempt: row.surcharge_exempt === 1,
      email_receipt: row.email_receipt === 1,
      description: typeof row.description === 'string' ? row.description : null,
      card_brand: typeof row.card_brand === 'string' ? row.card_brand : null,
    },
  };
}

function toValues(tx: StoredTransaction): unknown[] {
  const meta: Record<(typeof META_COLUMNS)[number], unknown> = {
    merchant_id: tx.merchantId,
    request_hash: tx.requestHash,
    batch_id: tx.batchId,
    line: tx.line,
  };
  return [
    ...RESULT_COLUMNS.map((column: ResultColumn) => tx.record[column]),
    ...META_COLUMNS.map((column) => meta[column]),
    ...EXTRA_COLUMNS.map((column) => tx.extras[column]),
  ];
}

/**
 * Inserts the transactions whose (merchant, idempotency key) is not taken yet and answers the
 * ids actually inserted; a row that lost a race to a concurrent writer is absent from the answer.
 */
export async function insertTransactions(db: D1Database, transactions: StoredTransaction[]): Promise<Set<string>> {
  if (transactions.length === 0) return new Set();
  const parameters: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const tx of transactions) {
    const json = JSON.stringify(toValues(tx));
    if (current.length > 0 && size + json.length > MAX_PARAMETER_CHARS) {
      parameters.push(`[${current.join(',')}]`);
      current = [];
      size = 0;
    }
    current.push(json);
    size += json.length + 1;
  }
  parameters.push(`[${current.join(',')}]`);
  const results = await db.batch<{ id: string }>(parameters.map((json) => db.prepare(INSERT_SQL).bind(json)));
  return new Set(results.flatMap((result) => result.results.map((row) => row.id)));
}

/** The merchant's transactions recorded under any of `keys` (one query). */
export async function findTransactionsByIdempotencyKeys(
  db: D1Database,
  merchantId: string,
  keys: string[],
): Promise<StoredTransaction[]> {
  if (keys.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT * FROM transactions
       WHERE merchant_id = ?1 AND idempotency_key IN (SELECT value FROM json_each(?2))`,
    )
    .bind(merchantId, JSON.stringify(keys))
    .all<Row>();
  return results.map(toStoredTransaction);
}

export async function findTransaction(db: D1Database, merchantId: string, id: string): Promise<StoredTransaction | null> {
  const row = await db
    .prepare('SELECT * FROM transactions WHERE merchant_id = ?1 AND id = ?2')
    .bind(merchantId, id)
    .first<Row>();
  return row ? toStoredTransaction(row) : null;
}

/*
 * Claims (docs/transactions.md, "Idempotency"). A request's record is inserted before its
 * processor is asked, with status `processing`: the (merchant, idempotency key) is then taken,
 * and the row holds everything but the processor's answer. The answer completes it in place, or,
 * when the processor never received the charge, the claim is released (deleted).
 */

/** A row in this status is a claim: its key is taken and the processor may be being asked. */
export const CLAIMED_STATUS = 'processing';

/** The columns only the processor's answer decides; completing a claim writes these. */
const ANSWER_COLUMNS = [
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
] as const satisfies readonly ResultColumn[];

const COMPLETE_SQL = `UPDATE transactions
  SET (${ANSWER_COLUMNS.join(', ')}) = (${ANSWER_COLUMNS.map((_, i) => `json_extract(answer.value, '$[${i + 1}]')`).join(', ')})
  FROM json_each(?1) AS answer
  WHERE transactions.id = json_extract(answer.value, '$[0]') AND transactions.status = '${CLAIMED_STATUS}'
  RETURNING transactions.id`;

/**
 * Writes the answer columns of claimed records (one statement per ~900 KB) and answers the ids
 * completed; a claim another attempt completed or released meanwhile is absent from the answer.
 */
export async function completeClaims(db: D1Database, records: readonly TransactionRecord[]): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const rows = records.map((record) => JSON.stringify([record.id, ...ANSWER_COLUMNS.map((column) => record[column])]));
  const results = await db.batch<{ id: string }>(jsonArrayParameters(rows).map((json) => db.prepare(COMPLETE_SQL).bind(json)));
  return new Set(results.flatMap((result) => result.results.map((row) => row.id)));
}

/** Deletes claims still open (their charge never reached the processor); answers the ids deleted. */
export async function releaseClaims(db: D1Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { results } = await db
    .prepare(
      `DELETE FROM transactions WHERE id IN (SELECT value FROM json_each(?1)) AND status = '${CLAIMED_STATUS}' RETURNING id`,
    )
    .bind(JSON.stringify(ids))
    .all<{ id: string }>();
  return new Set(results.map((row) => row.id));
}

/** The open claims of a batch's rows. */
export async function findBatchClaims(db: D1Database, merchantId: string, batchId: string): Promise<StoredTransaction[]> {
  const { results } = await db
    .prepare(`SELECT * FROM transactions WHERE batch_id = ?1 AND merchant_id = ?2 AND status = '${CLAIMED_STATUS}'`)
    .bind(batchId, merchantId)
    .all<Row>();
  return results.map(toStoredTransaction);
}
