/**
 * The transaction contract shared by POST /api/transaction, the batch CSV and the result CSV.
 * Column lists follow the API contract, in its order (docs/batch.md).
 */

import type { FieldError } from '../lib/field-errors';

/** Columns that hold an amount in minor units. */
export const AMOUNT_COLUMNS = ['amount', 'base_amount', 'surcharge', 'shipping_amount', 'tax_amount', 'discount_amount'] as const;

/** Columns a batch CSV (and the JSON body of POST /api/transaction) may carry. */
export const INPUT_COLUMNS = [
  'transaction_type',
  'cc_number',
  'cc_expiration',
  'cc_cvc',
  'ach_account_number',
  'ach_routing_number',
  'ach_account_type',
  'ach_sec_code',
  'customer_id',
  'payment_method_type',
  'payment_method_id',
  ...AMOUNT_COLUMNS,
  'surcharge_exempt',
  'order_id',
  'description',
  'po_number',
  'tax_exempt',
  'email_address',
  'email_receipt',
  'processor_id',
  'billing_first_name',
  'billing_last_name',
  'billing_company',
  'billing_address_line_1',
  'billing_address_line_2',
  'billing_city',
  'billing_state',
  'billing_postal_code',
  'billing_country',
  'billing_phone',
  'billing_fax',
  'billing_email',
  'shipping_first_name',
  'shipping_last_name',
  'shipping_company',
  'shipping_address_line_1',
  'shipping_address_line_2',
  'shipping_city',
  'shipping_state',
  'shipping_postal_code',
  'shipping_country',
  'shipping_phone',
  'shipping_fax',
  'shipping_email',
] as const;

export type InputColumn = (typeof INPUT_COLUMNS)[number];

/** One transaction request as text fields, the way a CSV row carries it (absent = undefined). */
export type TransactionInput = Partial<Record<InputColumn, string>>;

/** The result CSV's columns, in order; also the fields of a transaction record. */
export const RESULT_COLUMNS = [
  'id',
  'user_name',
  'idempotency_key',
  'type',
  'transaction_source',
  'ip_address',
  'amount',
  'amount_authorized',
  'amount_captured',
  'amount_settled',
  'tip',
  'service_fee',
  'tax_amount',
  'tax_exempt',
  'shipping_amount',
  'po_number',
  'order_id',
  'settlement_batch_id',
  'referenced_transaction_id',
  'payment_method',
  'payment_type',
  'response',
  'response_code',
  'status',
  'processor_type',
  'processor_id',
  'processor_name',
  'subscription_id',
  'currency_iso_code',
  'customer_id',
  'email_address',
  'billing_first_name',
  'billing_last_name',
  'billing_company',
  'billing_address_line_1',
  'billing_address_line_2',
  'billing_city',
  'billing_state',
  'billing_postal_code',
  'billing_country',
  'billing_email',
  'billing_phone',
  'billing_fax',
  'shipping_first_name',
  'shipping_last_name',
  'shipping_company',
  'shipping_address_line_1',
  'shipping_address_line_2',
  'shipping_city',
  'shipping_state',
  'shipping_postal_code',
  'shipping_country',
  'shipping_email',
  'shipping_phone',
  'shipping_fax',
  'created_at',
  'captured_at',
  'settled_at',
  'card_type',
  'entry_type',
  'masked_account',
  'expiration',
  'auth_code',
  'processor_response_code',
  'processor_response_text',
  'sec_code',
  'account_type',
  'avs_response_code',
  'cvv_response_code',
] as const;

export type ResultColumn = (typeof RESULT_COLUMNS)[number];

/**
 * Result columns that hold numbers (money in minor units, the response code). The result CSV writes
 * their numbers as they are, negative ones included; every other column is text, and text that a
 * spreadsheet would run as a formula is neutralised (see `toCsvLine`).
 */
export const NUMERIC_RESULT_COLUMNS: ReadonlySet<ResultColumn> = new Set([
  'amount',
  'amount_authorized',
  'amount_captured',
  'amount_settled',
  'tip',
  'service_fee',
  'tax_amount',
  'shipping_amount',
  'response_code',
]);

/** A transaction record: every result column; null where the value is absent (an empty CSV field). */
export type TransactionRecord = Record<ResultColumn, string | number | boolean | null>;

/**
 * A record as its result columns' values in order (null where absent): what a search day stores
 * and what a ledger shard sends a batch chunk for an approved capture or void (a third of the
 * record's JSON, no names).
 */
export function packResultColumns(record: TransactionRecord): unknown[] {
  return RESULT_COLUMNS.map((column) => record[column] ?? null);
}

/**
 * Every result column, null: parsed from JSON, so the engine gives it one shape with its fields in
 * place (an object given its fields one by one under computed names is kept as a dictionary past a
 * dozen of them, slower to read and copy for the result line).
 */
const EMPTY_RECORD = JSON.parse(JSON.stringify(Object.fromEntries(RESULT_COLUMNS.map((column) => [column, null])))) as Record<string, unknown>;

/**
 * The record `packResultColumns` packed, its values from `packed[from]` on (a copy of EMPTY_RECORD's
 * shape, its fields set in place).
 */
export function unpackResultColumns(packed: readonly unknown[], from = 0): TransactionRecord {
  const record = { ...EMPTY_RECORD };
  for (let i = 0; i < RESULT_COLUMNS.length; i += 1) record[RESULT_COLUMNS[i] as string] = packed[from + i] ?? null;
  return record as TransactionRecord;
}

/**
 * The engine's interface (implemented in src/services/transactions/engine.ts). Both doors call
 * `processTransactions(env, caller, requests, context, clock)`: POST /api/transaction with one
 * request, the batch consumer with a chunk's rows (so BIN, vault and D1 work is shared per chunk).
 */
export interface TransactionContext {
  source: 'api' | 'batch';
  /** The caller's address (the uploader's, for a batch). */
  ipAddress: string | null;
  /** Set for batch rows. */
  batchId?: string;
  /** Batch rows: when the batch was created (its ledger shard's period starts then). */
  batchCreatedAt?: string;
  /** Batch rows: the first line of the chunk being run (the chunk's page in the batch's ledger shard). */
  chunkFirstLine?: number;
  /** The merchant's processors when the caller already has them (a batch reads them once, not per chunk). */
  processors?: readonly import('../storage/processors').ProcessorRecord[];
}

export interface TransactionRequest {
  input: TransactionInput;
  /** API: the Idempotency-Key header (or a generated one); batch: `${batchId}:${line}`. */
  idempotencyKey: string;
  /** Batch: the row's line number in the file (header = line 1). */
  line?: number;
  /** A subscription's billing: the subscription charged (the record's subscription_id). */
  subscriptionId?: string;
}

/** A problem with one field of a transaction request. */
export type RowError = FieldError;

export type TransactionOutcome =
  /** Processed now, or found already recorded under the same idempotency key (`replayed`). */
  | { ok: true; record: TransactionRecord; replayed: boolean }
  /** Refused before processing: `record` is the row's result line (response "error"), not stored. */
  | { ok: false; reason: 'invalid'; errors: RowError[]; record: TransactionRecord }
  /** API only: the idempotency key was used before with a different request. */
  | { ok: false; reason: 'idempotency_conflict'; errors: RowError[]; record: null }
  /**
   * Another attempt holds the key's claim and may be asking the processor right now: nothing was
   * done. Ask again later; after `takeoverInSeconds` an unfinished claim is settled by the next attempt.
   */
  | { ok: false; reason: 'in_progress'; errors: RowError[]; record: null; takeoverInSeconds: number };
