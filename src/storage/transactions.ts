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

/**
 * An API transaction past its idempotency window gives up its key so the key can be used again
 * (the table's UNIQUE (merchant_id, idempotency_key) would refuse the new record otherwise): the
 * stored key gets this suffix and the record's id, and reads take it off again, so the record
 * still shows the key it was made with. A batch row keeps its key (`{batch}:{line}` can never be
 * a new request). Either way the request hash is cleared to ''.
 */
const RETIRED_KEY_SUFFIX = '#expired:';

function shownIdempotencyKey(row: Row): string | null {
  const key = row.idempotency_key;
  if (typeof key !== 'string' || row.request_hash !== '') return typeof key === 'string' ? key : null;
  const suffix = `${RETIRED_KEY_SUFFIX}${String(row.id)}`;
  return key.endsWith(suffix) ? key.slice(0, -suffix.length) : key;
}

function toStoredTransaction(row: Row): StoredTransaction {
  const bool = (column: string) => (row[column] === null ? null : row[column] === 1);
  const record = {} as TransactionRecord;
  for (const column of RESULT_COLUMNS) {
    record[column] = BOOLEAN_COLUMNS.has(column) ? bool(column) : (row[column] ?? null);
  }
  record.idempotency_key = shownIdempotencyKey(row);
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

/**
 * The merchant's transactions recorded under any of `keys` (one query). With `expiredBefore`, API
 * transactions among them created before that time are retired (key freed, hash cleared: see
 * RETIRED_KEY_SUFFIX) and left out, so their keys read as unused; that write happens only when
 * there is one to retire.
 */
export async function findTransactionsByIdempotencyKeys(
  db: D1Database,
  merchantId: string,
  keys: string[],
  expiredBefore?: string,
): Promise<StoredTransaction[]> {
  if (keys.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT * FROM transactions
       WHERE merchant_id = ?1 AND idempotency_key IN (SELECT value FROM json_each(?2))`,
    )
    .bind(merchantId, JSON.stringify(keys))
    .all<Row>();
  if (expiredBefore === undefined) return results.map(toStoredTransaction);
  // An open claim keeps its key until it is settled (claims.ts), however old.
  const expired = (row: Row) => row.batch_id === null && row.status !== CLAIMED_STATUS && String(row.created_at) < expiredBefore;
  const retired = results.filter(expired).map((row) => String(row.id));
  if (retired.length > 0) {
    // Guarded by request_hash <> '': retiring twice (a concurrent request, the cron) changes nothing.
    await db
      .prepare(
        `UPDATE transactions SET request_hash = '', idempotency_key = idempotency_key || ?2 || id
         WHERE id IN (SELECT value FROM json_each(?1)) AND batch_id IS NULL AND request_hash <> ''
           AND status <> '${CLAIMED_STATUS}'`,
      )
      .bind(JSON.stringify(retired), RETIRED_KEY_SUFFIX)
      .run();
  }
  return results.filter((row) => !expired(row)).map(toStoredTransaction);
}

/**
 * The daily sweep of the idempotency window: every transaction created before `before` that still
 * has a request hash loses it (and an API transaction its key, as above). Idempotent: a swept row
 * has request_hash '' and is never matched again. At most `limit` rows per call; answers how
 * many were swept.
 */
export async function sweepExpiredRequestHashes(db: D1Database, before: string, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `UPDATE transactions
       SET request_hash = '',
           idempotency_key = CASE WHEN batch_id IS NULL THEN idempotency_key || ?3 || id ELSE idempotency_key END
       WHERE rowid IN (
         SELECT rowid FROM transactions
         WHERE request_hash <> '' AND created_at < ?1 AND status <> '${CLAIMED_STATUS}' LIMIT ?2
       )`,
    )
    .bind(before, limit, RETIRED_KEY_SUFFIX)
    .run();
  return result.meta.changes;
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

/**
 * The open claims of a batch's rows. A batch row's idempotency key is `{batch id}:{line}`
 * (services/batches/chunks.ts), so they are the merchant's keys from `{batch id}:` up to
 * `{batch id};` (';' follows ':'): a range of the `(merchant_id, idempotency_key)` index that
 * every row has anyway. An index on batch_id would cost each batch row one more D1 row written
 * (docs/cost.md) for this one read, made only for a failed batch's partial download.
 */
export async function findBatchClaims(db: D1Database, merchantId: string, batchId: string): Promise<StoredTransaction[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM transactions
       WHERE merchant_id = ?2 AND idempotency_key >= ?1 || ':' AND idempotency_key < ?1 || ';'
         AND batch_id = ?1 AND status = '${CLAIMED_STATUS}'`,
    )
    .bind(batchId, merchantId)
    .all<Row>();
  return results.map(toStoredTransaction);
}
