/**
 * HTTP shapes of POST /api/transaction: the JSON body uses the batch CSV's column names. JSON
 * types are accepted where a client would naturally use them (amounts as integers, flags as
 * booleans) and turned into the text a CSV row carries; the engine then validates both doors
 * with the same rules. null means absent, like an empty CSV field.
 */
import { z } from 'zod';
import { containsCardNumber } from '../lib/card-number';
import { clientIpField } from './client-ip';
import { AMOUNT_COLUMNS, INPUT_COLUMNS, type InputColumn, type TransactionInput } from './transaction-columns';

const AMOUNT_COLUMN_SET: ReadonlySet<InputColumn> = new Set(AMOUNT_COLUMNS);
const BOOLEAN_COLUMNS = new Set<InputColumn>(['surcharge_exempt', 'tax_exempt', 'email_receipt']);

const text = z.string('must be a string').max(1_000, 'must be at most 1000 characters').nullable().optional();
const amount = z
  .union([z.number(), z.string()], 'must be an integer (minor units) or a string of digits')
  .nullable()
  .optional();
const flag = z.union([z.boolean(), z.string()], 'must be true or false').nullable().optional();

const shape = Object.fromEntries(
  INPUT_COLUMNS.map((column) => [column, AMOUNT_COLUMN_SET.has(column) ? amount : BOOLEAN_COLUMNS.has(column) ? flag : text]),
) as Record<InputColumn, typeof text | typeof amount | typeof flag>;

/**
 * The payment sources the engine takes exactly one of, and the columns each requires. In the
 * document each is an alternative of its own (`oneOf`), written out by src/openapi/paths/transaction.ts
 * as the whole closed body with its source's columns required: a branch that only said `required`
 * would lean on the columns of the object around it, and inside the request's choice of two bodies
 * "around it" also takes in FluidPay's body, which has no such columns (Redocly's
 * no-required-schema-properties-undefined). A branch defining what it requires also lets a
 * generated client type each case.
 */
export const PAYMENT_SOURCE_COLUMNS = [
  { id: 'TransactionCardColumns', title: 'A card', required: ['cc_number', 'cc_expiration'] },
  { id: 'TransactionAchColumns', title: 'A bank account (ACH)', required: ['ach_account_number', 'ach_routing_number', 'ach_account_type', 'ach_sec_code'] },
  { id: 'TransactionCustomerColumns', title: 'A vault customer', required: ['customer_id'] },
] as const;

/**
 * Every column is optional to zod (an empty or null one is absent, as in a CSV row), and the engine
 * says which are required (services/transactions/validation.ts). The document states its rules in
 * JSON Schema terms, so a generated client marks them: a type, an amount, one payment source.
 */
const engineRequires = {
  required: ['transaction_type'],
  allOf: [
    { anyOf: [{ title: 'With amount', required: ['amount'] }, { title: 'With base_amount', required: ['base_amount'] }] },
    { oneOf: PAYMENT_SOURCE_COLUMNS.map(({ id }) => ({ $ref: `#/components/schemas/${id}` })) },
  ],
};

export const transactionBodySchema = z.strictObject(shape).meta(engineRequires).transform((body): TransactionInput => {
  const input: TransactionInput = {};
  for (const column of INPUT_COLUMNS) {
    const value = body[column];
    // Numbers keep their JSON spelling ("10.5", "-3"), which the engine refuses with a clear message.
    if (value !== undefined && value !== null) input[column] = String(value);
  }
  return input;
});

/**
 * The form of a batch row's key (`{batch id}:{line}`, services/batches/chunks.ts): reserved, so an
 * API request cannot take a row's key before the row is charged (the row would come back an error).
 */
const BATCH_ROW_KEY = /^bat_[^:]*:[0-9]+$/;

/** Idempotency-Key: 1 to 255 printable ASCII characters, not of the batch row form. */
export const idempotencyKeyField = z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'must be 1 to 255 printable ASCII characters without spaces')
    .refine((value) => !BATCH_ROW_KEY.test(value), 'must not have the form bat_…:{line}, which batch rows use')
    // Stored and answered as given (the record's idempotency_key): never a card number.
    .refine((value) => !containsCardNumber(value), 'must not contain a card number')
    .optional();

export const idempotencyHeaderSchema = z.object({
  'idempotency-key': idempotencyKeyField,
  // Validated with the other headers: it becomes the record's ip_address.
  'cf-connecting-ip': clientIpField,
});

export const transactionIdParamSchema = z.object({
  // binbatch's ids, and FluidPay's (20 characters of 0-9 a-v): one binbatch never issued is a 404,
  // answered without waking any ledger shard (the id names none).
  id: z.string().regex(/^(txn_[a-z0-9]{1,60}|[0-9a-v]{20})$/, 'malformed transaction id (txn_…, or a FluidPay id of 20 characters)'),
});
