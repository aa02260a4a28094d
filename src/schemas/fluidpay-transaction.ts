/**
 * FluidPay's shape of POST /api/transaction (their `TransactionRequest`: `type`, a nested
 * `payment_method`, address objects, the idempotency key in the body), and of the optional bodies
 * of capture and refund. Translated at the edge into the batch CSV's columns that the engine takes
 * (docs/api.md, "Coming from FluidPay"): the engine never sees this shape.
 *
 * Checked as strictly as the flat body: an unknown field is a 400 naming it. Fields FluidPay has
 * and binbatch does not process (terminals, Level 3 lines, custom fields, …) are named too, with
 * why, rather than accepted and ignored: a merchant must not believe they were applied. The
 * translation into the engine's columns is services/fluidpay/request.ts.
 */
import { z } from 'zod';
import { containsCardNumber } from '../lib/card-number';
import { idempotencyKeyField, transactionBodySchema } from './transaction-http';

const text = z.string('must be a string').max(1_000, 'must be at most 1000 characters');
const money = z.int('must be an integer (minor units)').min(0, 'must not be negative');

/** An IPv4 or IPv6 address, no port (FluidPay's ip_address: the customer's). */
const ipField = z
  .string('must be a string')
  .max(45, 'must be an IPv4 or IPv6 address')
  .refine((value) => z.ipv4().safeParse(value).success || z.ipv6().safeParse(value).success, 'must be an IPv4 or IPv6 address');

/** A FluidPay field binbatch does not process: refused with the reason, never silently dropped. */
function unsupported(reason: string) {
  return z
    .unknown()
    .refine(() => false, `not supported by binbatch: ${reason}`)
    .optional()
    .meta({ description: `Not supported: ${reason}.`, deprecated: true });
}

/** FluidPay's transaction address (the vault's uses line_1 / line_2 instead). */
export const fluidPayAddressSchema = z
  .strictObject({
    first_name: text.optional(),
    last_name: text.optional(),
    company: text.optional(),
    address_line_1: text.optional(),
    address_line_2: text.optional(),
    city: text.optional(),
    state: text.optional(),
    postal_code: text.optional(),
    country: text.optional(),
    email: text.optional(),
    phone: text.optional(),
    fax: text.optional(),
  })
  .meta({ id: 'FluidPayAddress' });
export type FluidPayAddress = z.infer<typeof fluidPayAddressSchema>;

const cardSchema = z.strictObject({
  entry_type: z.enum(['keyed'], 'must be keyed (binbatch takes keyed cards only)').optional(),
  number: text,
  expiration_date: text.meta({ description: 'MM/YY (also MMYY, MM/YYYY).' }),
  cvc: text.optional(),
  track_1: unsupported('card-present data (tracks)'),
  track_2: unsupported('card-present data (tracks)'),
  encrypted_track_1: unsupported('card-present data (tracks)'),
  encrypted_track_2: unsupported('card-present data (tracks)'),
  ksn: unsupported('card-present data (tracks)'),
  cardholder_authentication: unsupported('3-D Secure results'),
});

const achSchema = z.strictObject({
  routing_number: text,
  account_number: text,
  sec_code: text.meta({ description: 'web, ccd or ppd (any case).' }),
  account_type: text.meta({ description: 'checking or savings.' }),
  check_number: unsupported('TEL entries (check_number)'),
  funding_speed: z.enum(['standard'], 'must be standard (same-day ACH is not offered)').optional(),
  accountholder_authentication: unsupported("driver's licence checks"),
});

const customerSchema = z.strictObject({
  id: text,
  payment_method_id: text.optional(),
  payment_method_type: text.optional(),
  billing_address_id: text.optional(),
  shipping_address_id: text.optional(),
});

const paymentMethodSchema = z
  .strictObject({
    card: cardSchema.optional(),
    ach: achSchema.optional(),
    customer: customerSchema.optional(),
    token: text.optional().meta({ description: 'A temp token from the hosted tokenizer (tok_…).' }),
    emv: unsupported('terminals and chip data'),
    terminal: unsupported('terminals'),
    apm: unsupported('alternative payment methods'),
    apple_pay_token: unsupported('Apple Pay'),
    google_pay_token: unsupported('Google Pay'),
  })
  .superRefine((method, ctx) => {
    const given = (['card', 'ach', 'customer', 'token'] as const).filter((key) => method[key] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({ code: 'custom', message: given.length === 0 ? 'must hold one of card, ach, customer or token' : `must hold only one of ${given.join(', ')}` });
    }
  });

/** FluidPay's TransactionRequest as binbatch takes it. */
export const fluidPayTransactionSchema = z
  .strictObject({
    type: z.enum(['sale', 'authorize', 'verification', 'credit'], 'must be sale, authorize, verification or credit'),
    amount: money.optional().meta({ description: 'The total, minor units. Left out (or 0) for a verification.' }),
    base_amount: money.optional(),
    currency: z
      .string('must be a string')
      .regex(/^usd$/i, 'binbatch processes USD only')
      .optional(),
    processor_id: text.optional(),
    payment_method: paymentMethodSchema,
    idempotency_key: idempotencyKeyField,
    idempotency_time: z
      .int('must be an integer (seconds)')
      .min(1, 'must be 1 or more')
      .max(86_400, 'must be at most 86400: binbatch keeps every key for 24 hours')
      .optional()
      .meta({ description: "Accepted for FluidPay's clients; binbatch keeps every key 24 hours, whatever it says." }),
    order_id: text.optional(),
    po_number: text.optional(),
    description: text.optional(),
    ip_address: ipField.optional().meta({ description: "The customer's address; recorded as ip_address (default: the caller's)." }),
    tax_amount: money.optional(),
    tax_exempt: z.boolean('must be true or false').optional(),
    shipping_amount: money.optional(),
    discount_amount: money.optional(),
    email_receipt: z.boolean('must be true or false').optional(),
    email_address: text.optional(),
    billing_address: fluidPayAddressSchema.optional(),
    shipping_address: fluidPayAddressSchema.optional(),
    vendor_id: unsupported('processor-specific vendor ids'),
    tip_amount: unsupported('tips'),
    payment_adjustment: unsupported('payment adjustments (send surcharge-eligible base_amount instead)'),
    line_items: unsupported('Level 3 line items'),
    summary_commodity_code: unsupported('Level 3 data'),
    ship_from_postal_code: unsupported('Level 3 data'),
    custom_fields: unsupported('custom fields'),
    group_name: unsupported('custom fields'),
    create_vault_record: unsupported('vaulting from a transaction (POST /api/vault/customer)'),
    create_vault_record_for: unsupported('vaulting from a transaction (POST /api/vault/customer/{id}/card)'),
    descriptor: unsupported('statement descriptors'),
    allow_partial_payment: unsupported('the partial-payment switch (partial approvals are answered as response_code 110)'),
    split_transaction_amount: unsupported('split transactions'),
    card_on_file_indicator: unsupported('card-on-file indicators'),
    initiated_by: unsupported('card-on-file indicators'),
    initial_transaction_id: unsupported('card-on-file indicators'),
    stored_credential_indicator: unsupported('card-on-file indicators'),
    billing_method: unsupported('card-on-file indicators'),
    iias_status: unsupported('HSA/FSA processing'),
    additional_amounts: unsupported('HSA/FSA processing'),
    processor_specific: unsupported('processor-specific options'),
    subscription_id: unsupported('recurring billing'),
  })
  .meta({ id: 'FluidPayTransactionRequest', description: "FluidPay's body (their SDKs' TransactionRequest)." });

export type FluidPayTransactionBody = z.infer<typeof fluidPayTransactionSchema>;

/** POST /api/transaction's body, either shape: what the document and the typed client show. */
export const transactionRequestSchema = z.union([transactionBodySchema.meta({ id: 'TransactionColumnsRequest' }), fluidPayTransactionSchema]);

// ---- capture and refund -------------------------------------------------------------------

const reference = z
  .string('must be a string')
  .regex(/^[A-Za-z0-9]{1,17}$/, 'must be 1 to 17 letters or digits')
  .refine((value) => !containsCardNumber(value), 'must not contain a card number');
const bounded = money.max(99_999_999_999, 'must be at most 99999999999');

/**
 * Capture: `amount` (binbatch's), and FluidPay's Level 2 details, which replace what the
 * authorization recorded (docs/transactions.md, "Lifecycle").
 */
export const captureDetailsShape = {
  tax_amount: bounded.optional().meta({ description: 'Replaces the recorded tax_amount (a part of the captured amount).' }),
  tax_exempt: z.boolean('must be true or false').optional(),
  shipping_amount: bounded.optional().meta({ description: 'Replaces the recorded shipping_amount (a part of the captured amount).' }),
  order_id: reference.optional(),
  po_number: reference.optional(),
  ip_address: ipField.optional().meta({ description: "The customer's address; recorded as the transaction's ip_address." }),
};
