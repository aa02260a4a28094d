/**
 * FluidPay's shape of POST /api/transaction (their `TransactionRequest`: `type`, a nested
 * `payment_method`, address objects, the idempotency key in the body), and of the optional bodies
 * of capture and refund. Translated here, at the edge, into the batch CSV's columns that the engine
 * takes (docs/api.md, "Coming from FluidPay"): the engine never sees this shape.
 *
 * Checked as strictly as the flat body: an unknown field is a 400 naming it. Fields FluidPay has
 * and binbatch does not process (terminals, Level 3 lines, custom fields, …) are named too, with
 * why, rather than accepted and ignored: a merchant must not believe they were applied.
 */
import { z } from 'zod';
import { containsCardNumber } from '../lib/card-number';

import type { InputColumn, TransactionInput } from './transaction-columns';
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

/** What the engine cannot be given directly: a token to open, vault addresses to read. */
export interface FluidPayTransaction {
  input: TransactionInput;
  token: string | null;
  /** payment_method.customer: the addresses it names (or the customer's defaults, when absent). */
  vaultAddresses: { customerId: string; billingAddressId: string | null; shippingAddressId: string | null } | null;
  idempotencyKey: string | null;
  ipAddress: string | null;
}

const ADDRESS_PARTS = ['first_name', 'last_name', 'company', 'address_line_1', 'address_line_2', 'city', 'state', 'postal_code', 'country', 'phone', 'fax', 'email'] as const;

/** The engine's columns for FluidPay's body (the same text a CSV row carries). */
export function translateFluidPayTransaction(body: FluidPayTransactionBody): FluidPayTransaction {
  const input: TransactionInput = {};
  const put = (column: InputColumn, value: string | number | boolean | undefined) => {
    if (value !== undefined) input[column] = String(value);
  };
  put('transaction_type', body.type);
  put('amount', body.amount);
  put('base_amount', body.base_amount);
  put('processor_id', body.processor_id);
  put('order_id', body.order_id);
  put('po_number', body.po_number);
  put('description', body.description);
  put('tax_amount', body.tax_amount);
  put('tax_exempt', body.tax_exempt);
  put('shipping_amount', body.shipping_amount);
  put('discount_amount', body.discount_amount);
  put('email_receipt', body.email_receipt);
  put('email_address', body.email_address);
  const { card, ach, customer } = body.payment_method;
  if (card) {
    put('cc_number', card.number);
    put('cc_expiration', card.expiration_date);
    put('cc_cvc', card.cvc);
  }
  if (ach) {
    put('ach_account_number', ach.account_number);
    put('ach_routing_number', ach.routing_number);
    put('ach_account_type', ach.account_type);
    put('ach_sec_code', ach.sec_code);
  }
  if (customer) {
    put('customer_id', customer.id);
    put('payment_method_id', customer.payment_method_id);
    put('payment_method_type', customer.payment_method_type);
  }
  for (const [prefix, address] of [['billing', body.billing_address], ['shipping', body.shipping_address]] as const) {
    for (const part of ADDRESS_PARTS) put(`${prefix}_${part}`, address?.[part]);
  }
  return {
    input,
    token: body.payment_method.token ?? null,
    vaultAddresses: customer
      ? { customerId: customer.id, billingAddressId: customer.billing_address_id ?? null, shippingAddressId: customer.shipping_address_id ?? null }
      : null,
    idempotencyKey: body.idempotency_key ?? null,
    ipAddress: body.ip_address ?? null,
  };
}

/** Where each engine column came from in FluidPay's body: errors name the field the client sent. */
const FLUIDPAY_FIELD: Partial<Record<string, string>> = {
  transaction_type: 'type',
  cc_number: 'payment_method.card.number',
  cc_expiration: 'payment_method.card.expiration_date',
  cc_cvc: 'payment_method.card.cvc',
  ach_account_number: 'payment_method.ach.account_number',
  ach_routing_number: 'payment_method.ach.routing_number',
  ach_account_type: 'payment_method.ach.account_type',
  ach_sec_code: 'payment_method.ach.sec_code',
  customer_id: 'payment_method.customer.id',
  payment_method_id: 'payment_method.customer.payment_method_id',
  payment_method_type: 'payment_method.customer.payment_method_type',
  'cc_number, ach_account_number or customer_id': 'payment_method',
  'Idempotency-Key': 'idempotency_key',
  ...Object.fromEntries(
    (['billing', 'shipping'] as const).flatMap((prefix) => ADDRESS_PARTS.map((part) => [`${prefix}_${part}`, `${prefix}_address.${part}`])),
  ),
};

/** An engine error's field as FluidPay's body names it (a column it shares keeps its name). */
export function fluidPayFieldOf(column: string): string {
  return column
    .split(', ')
    .map((part) => FLUIDPAY_FIELD[part] ?? part)
    .join(', ');
}

/** FluidPay's body is told from the flat one by its shape: its `type`, or an object as payment_method. */
export function isFluidPayTransactionBody(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const fields = body as Record<string, unknown>;
  const method = fields.payment_method;
  return 'type' in fields || (method !== null && typeof method === 'object');
}

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
