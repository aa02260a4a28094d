/**
 * `POST /api/transaction/search` and `POST /api/transaction/export`: FluidPay's search request
 * (every filter an object: strings `{operator: "=" | "!=", value}`, integers `{operator: "=" | "!="
 * | "<" | ">", value}`, dates `{start_date, end_date}` in RFC 3339), binbatch's three filters beyond
 * FluidPay's (`batch_id`, `card_brand`, `last_four`), `limit`, `offset` and a `cursor`; and their
 * answers (docs/transactions.md, "Search"). A string value holding a card number is refused, as
 * everywhere: a filter is logged and echoed like any other input.
 */
import { z } from 'zod';
import type { CardBrand } from '../lib/card-brand';
import { containsCardNumber } from '../lib/card-number';
import { timestampSchema } from './envelope';
import { ADDRESS_FIELDS } from './search-conditions';
import { transactionRecordSchema } from './transaction-response';

const NO_CARD_NUMBER = 'must not contain a card number';

/**
 * The values an enumerated field takes (a value outside them could never match: refused, naming
 * them): the record's own, so a type or status the record gains (verification, verified) is searchable.
 */
export const TRANSACTION_TYPES = transactionRecordSchema.shape.type.options;
export const TRANSACTION_STATUSES = transactionRecordSchema.shape.status.options;
const CARD_BRANDS = [
  'visa',
  'mastercard',
  'amex',
  'discover',
  'diners',
  'jcb',
  'unionpay',
  'maestro',
  'mir',
  'elo',
  'hipercard',
  'hiper',
  'troy',
  'rupay',
  'verve',
  'naranja',
  'dankort',
  'uatp',
] as const satisfies readonly CardBrand[];

const operatorText = z.enum(['=', '!='], "must be '=' or '!='");

function stringQuery(description: string, allowed?: readonly string[], pattern?: { regex: RegExp; message: string }) {
  let value = z
    .string('must be a string')
    .max(255, 'must be at most 255 characters')
    .refine((v) => !containsCardNumber(v), NO_CARD_NUMBER);
  if (allowed) value = value.refine((v) => allowed.includes(v), `must be one of ${allowed.join(', ')}`);
  if (pattern) value = value.refine((v) => pattern.regex.test(v), pattern.message);
  return z.strictObject({ operator: operatorText, value }).optional().meta({ description });
}

const intQuery = (description: string) =>
  z
    .strictObject({
      operator: z.enum(['=', '!=', '<', '>'], "must be '=', '!=', '<' or '>'"),
      value: z.int('must be an integer (minor units)').min(-99_999_999_999, 'must be at least -99999999999').max(99_999_999_999, 'must be at most 99999999999'),
    })
    .optional()
    .meta({ description });

/** FluidPay's date form (RFC 3339, `2006-01-02T15:04:05Z`; an offset is converted to UTC); "" is left out. */
const date = z.union([z.literal(''), z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp, e.g. 2026-11-25T00:00:00Z' })]).optional();

const dateRange = (description: string) =>
  z
    .strictObject({ start_date: date, end_date: date })
    .optional()
    .meta({ description: `${description} start_date included; end_date included to the end of its second (or millisecond, when it has one). Either may be left out.` });

/** FluidPay's user and address ids: binbatch has neither, so a filter on them is refused rather than silently matching nothing. */
const notModelled = (what: string) =>
  z
    .strictObject({ operator: operatorText, value: z.string('must be a string') })
    .optional()
    .refine((v) => v === undefined, `binbatch has no ${what}: leave it out`)
    .meta({ description: `FluidPay's ${what}: not modelled here, refused (400).` });

const addressQuery = (kind: 'billing' | 'shipping') =>
  z
    .strictObject({
      address_id: notModelled('address ids'),
      first_name: stringQuery(`${kind}_first_name`),
      last_name: stringQuery(`${kind}_last_name`),
      company: stringQuery(`${kind}_company`),
      address_line_1: stringQuery(`${kind}_address_line_1`),
      address_line_2: stringQuery(`${kind}_address_line_2`),
      city: stringQuery(`${kind}_city`),
      state: stringQuery(`${kind}_state`),
      postal_code: stringQuery(`${kind}_postal_code`),
      country: stringQuery(`${kind}_country`),
      email: stringQuery(`${kind}_email`),
      phone: stringQuery(`${kind}_phone`),
      fax: stringQuery(`${kind}_fax`),
    } satisfies Record<'address_id' | (typeof ADDRESS_FIELDS)[number], unknown>)
    .optional()
    .meta({ description: `FluidPay's ${kind}_address filters: the record's ${kind}_* columns.` });

/** The filters, common to search and export. */
const filters = {
  transaction_id: stringQuery('The transaction id (`=`: answered from its own shard and day).'),
  user_id: notModelled('users'),
  type: stringQuery('sale, authorize, verification, credit or refund.', TRANSACTION_TYPES),
  status: stringQuery('The status as it is now (docs/transactions.md, "Lifecycle").', TRANSACTION_STATUSES),
  ip_address: stringQuery('The address the request came from.'),
  amount: intQuery('The total, minor units.'),
  amount_authorized: intQuery('Minor units.'),
  amount_captured: intQuery('Minor units, as captured now.'),
  amount_settled: intQuery('Minor units, as settled now.'),
  tax_amount: intQuery('Minor units.'),
  po_number: stringQuery('As given.'),
  order_id: stringQuery('As given (`=`: answered from the week index, without reading every day).'),
  payment_method: stringQuery('card, ach or customer (a vault customer).', ['card', 'ach', 'customer']),
  payment_type: stringQuery('card or ach.', ['card', 'ach']),
  processor_id: stringQuery('The processor used.'),
  customer_id: stringQuery('The vault customer charged (`=`: answered from the week index).'),
  subscription_id: stringQuery('The subscription a recurring billing charged (docs/recurring.md).'),
  settlement_batch_id: stringQuery('stl_{YYYYMMDD}_{processor id} (`=`: answered from the days holding what settled that day).'),
  created_at: dateRange('The window searched. Without it, the last four months (FluidPay\'s default); the answer\'s `window` says which window was searched.'),
  captured_at: dateRange('When captured.'),
  settled_at: dateRange('When settled.'),
  billing_address: addressQuery('billing'),
  shipping_address: addressQuery('shipping'),
  batch_id: stringQuery('Beyond FluidPay: the batch file the row came from (bat_…; `=`: answered from that batch\'s days).'),
  card_brand: stringQuery('Beyond FluidPay: the card brand (from the IIN the masked number keeps).', CARD_BRANDS),
  last_four: stringQuery('Beyond FluidPay: the last four digits of the card or account.', undefined, { regex: /^[0-9]{4}$/, message: 'must be 4 digits' }),
};

export const transactionSearchSchema = z
  .strictObject({
    ...filters,
    limit: z.int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(20),
    offset: z.int('must be an integer').min(0, 'must be 0 or more').max(10_000, 'must be at most 10000; page further with cursor').default(0),
    cursor: z
      .string('must be a string')
      .max(1_000, 'must be at most 1000 characters')
      .optional()
      .meta({ description: "The previous answer's next_cursor: the page after it, stable while new transactions arrive (instead of offset)." }),
  })
  .refine((body) => body.cursor === undefined || body.offset === 0, { message: 'give cursor or offset, not both', path: ['cursor'] })
  .meta({ id: 'TransactionSearch' });

export type TransactionSearchBody = z.infer<typeof transactionSearchSchema>;

export const transactionExportSchema = z.strictObject(filters).meta({ id: 'TransactionExportRequest' });
export type TransactionExportBody = z.infer<typeof transactionExportSchema>;

/** The filters of a search or an export, without paging. */
export type SearchFilters = Omit<TransactionSearchBody, 'limit' | 'offset' | 'cursor'>;

export const searchWindowSchema = z
  .strictObject({
    start_date: timestampSchema.meta({ description: 'Included.' }),
    end_date: timestampSchema.nullable().meta({ description: 'Excluded; null: no end (up to now and beyond).' }),
    defaulted: z.boolean().meta({ description: "True when the request had no created_at: the last four months (FluidPay's default)." }),
  })
  .meta({ id: 'SearchWindow', description: 'The created_at window searched.' });

export const transactionSearchResponseSchema = z
  .strictObject({
    status: z.literal('success'),
    msg: z.literal('success'),
    total_count: z.int().min(0).meta({ description: 'How many transactions match (see total_count_exact).' }),
    total_count_exact: z
      .boolean()
      .meta({ description: 'False: counting stopped at its budget (docs/capacity.md, "Search"), and total_count is a lower bound: at least that many match.' }),
    data: z.array(transactionRecordSchema).meta({ description: 'A page of the matches, newest first (created_at, then id).' }),
    window: searchWindowSchema,
    limit: z.int(),
    offset: z.int(),
    next_cursor: z.string().nullable().meta({ description: 'Send it as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'TransactionSearchResult' });

export const exportIdParamSchema = z.object({
  id: z.string().regex(/^exp_[0-9a-v]{20}$/, 'malformed export id'),
});

/** An export as the API answers it (and `export.completed` carries). */
export const transactionExportStateSchema = z
  .strictObject({
    id: z.string().meta({ description: 'exp_…' }),
    status: z.enum(['running', 'completed', 'failed']),
    rows: z.int().min(0).meta({ description: 'Rows written to the file so far.' }),
    total_count: z.int().min(0).nullable().meta({ description: 'How many rows the export will hold (the first page\'s count); null until known.' }),
    total_count_exact: z.boolean().meta({ description: 'False: total_count is a lower bound (docs/capacity.md, "Search").' }),
    window: searchWindowSchema,
    created_at: timestampSchema,
    completed_at: timestampSchema.nullable(),
    expires_at: timestampSchema.nullable().meta({ description: 'When the file is deleted (10 days after completion, BATCH_RETENTION_DAYS).' }),
    download_url: z.string().nullable().meta({ description: 'GET it (secret key) for the CSV once completed.' }),
    failure_reason: z.string().nullable(),
  })
  .meta({ id: 'TransactionExport' });
export type TransactionExportState = z.infer<typeof transactionExportStateSchema>;

/** A transaction with its lifecycle (the console's detail view). */
export const transactionDetailSchema = z
  .strictObject({
    record: transactionRecordSchema,
    refunds: z.array(transactionRecordSchema).meta({ description: 'Its refunds, declined ones too, oldest first.' }),
    events: z
      .array(
        z.strictObject({
          kind: z.enum(['created', 'captured', 'settled', 'refunded', 'voided', 'expired']),
          at: timestampSchema.nullable().meta({ description: 'When; null when the record does not say (a void, an expiry).' }),
          amount: z.int().meta({ description: 'Minor units it moved.' }),
          reference: z.string().nullable().meta({ description: 'What it names: the settlement batch (settled), the refund (refunded).' }),
          outcome: z.string().nullable().meta({ description: "The transaction's response (created), the refund's status (refunded)." }),
        }),
      )
      .meta({ description: 'Its life in order.' }),
  })
  .meta({ id: 'TransactionDetail' });
