/**
 * A transaction record as POST/GET /api/transaction answer it: the result CSV's columns, typed
 * (docs/transactions.md "The record"). Money is integer minor units; absent values are null.
 */
import { z } from 'zod';
import { timestampSchema } from './envelope';
import { receiptStateSchema } from './receipts';
import { RESULT_COLUMNS, type ResultColumn } from './transaction-columns';

const text = z.string().nullable();
const money = z.int().min(0);
const notModelled = z.null().meta({ description: 'Not modelled: always null.' });

const columns = {
  id: z.string().regex(/^txn_[a-z0-9]+$/),
  user_name: z.string().meta({ description: "The merchant's name." }),
  idempotency_key: z.string(),
  type: z.enum(['sale', 'authorize', 'credit', 'verification', 'refund']).meta({ description: 'verification: a zero-amount authorization that checks a card (API only).' }),
  transaction_source: z.enum(['api', 'batch']),
  ip_address: text,
  amount: money.meta({ description: 'The total charged.' }),
  amount_authorized: money,
  amount_captured: money,
  amount_settled: money,
  tip: money,
  service_fee: money.meta({ description: 'The surcharge applied, given or computed.' }),
  tax_amount: money,
  tax_exempt: z.boolean(),
  shipping_amount: money,
  po_number: text,
  order_id: text,
  settlement_batch_id: text.meta({ description: 'The settlement batch it settled in (stl_…); null until settled.' }),
  referenced_transaction_id: text.meta({ description: 'A refund: the transaction it refunds.' }),
  payment_method: z.enum(['card', 'ach', 'customer']).meta({ description: 'How the request named the payment.' }),
  payment_type: z.enum(['card', 'ach']).meta({ description: 'What was charged.' }),
  response: z.enum(['approved', 'declined', 'error']),
  response_code: z.int().meta({ description: '100 approved, 110 partial; 2xx issuer decline; 3xx gateway decline; 4xx processor error.' }),
  status: z
    .enum(['pending_settlement', 'authorized', 'declined', 'failed', 'settled', 'voided', 'expired', 'refunded', 'partially_refunded', 'verified'])
    .meta({ description: 'docs/transactions.md, "Lifecycle": authorized → pending_settlement → settled → partially_refunded / refunded; voided; expired; verified (an approved verification, final).' }),
  processor_type: z.string(),
  processor_id: z.string(),
  processor_name: z.string(),
  subscription_id: z.string().nullable().meta({ description: 'The subscription a recurring billing charged (docs/recurring.md); null for other transactions.' }),
  currency_iso_code: z.string().regex(/^[A-Z]{3}$/),
  customer_id: text,
  email_address: text,
  billing_first_name: text,
  billing_last_name: text,
  billing_company: text,
  billing_address_line_1: text,
  billing_address_line_2: text,
  billing_city: text,
  billing_state: text,
  billing_postal_code: text,
  billing_country: text,
  billing_email: text,
  billing_phone: text,
  billing_fax: text,
  shipping_first_name: text,
  shipping_last_name: text,
  shipping_company: text,
  shipping_address_line_1: text,
  shipping_address_line_2: text,
  shipping_city: text,
  shipping_state: text,
  shipping_postal_code: text,
  shipping_country: text,
  shipping_email: text,
  shipping_phone: text,
  shipping_fax: text,
  created_at: timestampSchema,
  captured_at: timestampSchema.nullable(),
  settled_at: timestampSchema.nullable(),
  card_type: text.meta({ description: 'credit, debit, … from the BIN data; null for ACH or an unknown BIN.' }),
  entry_type: text,
  masked_account: z.string().meta({ example: '411111******1111' }),
  expiration: text,
  auth_code: text,
  processor_response_code: text,
  processor_response_text: z.string(),
  sec_code: text,
  account_type: text,
  avs_response_code: text,
  cvv_response_code: text,
} satisfies Record<ResultColumn, z.ZodType>;

// The record's fields are the result CSV's columns, in that order.
const ordered = Object.fromEntries(RESULT_COLUMNS.map((column) => [column, columns[column]])) as typeof columns;

/** FluidPay's address object on a transaction: the billing_* / shipping_* columns, nested. */
const addressSchema = z
  .strictObject({
    first_name: text,
    last_name: text,
    company: text,
    address_line_1: text,
    address_line_2: text,
    city: text,
    state: text,
    postal_code: text,
    country: text,
    email: text,
    phone: text,
    fax: text,
  })
  .meta({ id: 'TransactionAddress' });

const processorAnswer = {
  id: z.string().meta({ description: 'The transaction id.' }),
  response: z.string(),
  response_code: z.int(),
  auth_code: text,
  processor_response_code: text,
  processor_response_text: text,
  processor_type: text,
  processor_id: text,
  created_at: timestampSchema,
  updated_at: timestampSchema,
};

/** FluidPay's `response_body`: the processor's answer, under `card` or `ach` (the columns, nested). */
const responseBodySchema = z
  .union([
    z.strictObject({
      card: z.strictObject({
        ...processorAnswer,
        card_type: text.meta({ description: 'The brand (visa, mastercard, …), from the first six digits.' }),
        type: text.meta({ description: 'credit, debit, … (the card_type column).' }),
        first_six: text,
        last_four: text,
        masked_card: z.string(),
        expiration_date: text.meta({ description: 'MM/YY' }),
        avs_response_code: text,
        cvv_response_code: text,
      }),
    }),
    z.strictObject({
      ach: z.strictObject({
        ...processorAnswer,
        sec_code: text.meta({ description: 'web, ccd or ppd.' }),
        account_type: text,
        masked_account_number: z.string(),
      }),
    }),
  ])
  .meta({ id: 'TransactionResponseBody' });

export const transactionRecordSchema = z
  .strictObject({
    ...ordered,
    // Only GET /api/transaction/{id} reads them: one more read of the shard (docs/receipts.md).
    receipts: z
      .array(receiptStateSchema)
      .optional()
      .meta({ description: 'GET /api/transaction/{id} only: the email receipts of this transaction (email_receipt), oldest first, with their state.' }),
    // Not a result CSV column (the CSV keeps SPEC.md's 69): only the JSON record has it.
    amount_refunded: money.meta({ description: 'What was refunded of it so far (refunds: 0).' }),
    // FluidPay's fields (docs/api.md, "Coming from FluidPay"): the columns above, named and nested as their clients read them.
    merchant_id: z.string(),
    base_amount: z.int().meta({ description: 'amount − surcharge.' }),
    surcharge: money.meta({ description: 'The surcharge (the service_fee column).' }),
    tip_amount: money,
    currency: z.string().regex(/^[a-z]{3}$/).meta({ description: 'currency_iso_code in lower case, as FluidPay answers it.' }),
    response_body: responseBodySchema,
    billing_address: addressSchema,
    shipping_address: addressSchema,
    updated_at: timestampSchema.meta({ description: 'The latest of created_at, captured_at and settled_at.' }),
  })
  .meta({ id: 'TransactionRecord' });

export type TransactionRecordView = z.infer<typeof transactionRecordSchema>;
