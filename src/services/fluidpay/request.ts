/**
 * FluidPay's body of POST /api/transaction in the engine's one shape: the batch CSV's columns
 * (docs/api.md, "Coming from FluidPay"). One table pairs each column with the FluidPay field it
 * comes from; it is read one way to translate a body and the other way to name, in an error, the
 * field the client sent. A token to open and vault addresses to read are left for completion.ts.
 */
import type { z } from 'zod';
import { fluidPayTransactionSchema, type FluidPayTransactionBody } from '../../schemas/fluidpay-transaction';
import type { InputColumn, TransactionInput } from '../../schemas/transaction-columns';
import { transactionBodySchema } from '../../schemas/transaction-http';

/** An address's parts, in the order the record's address objects list them. */
export const ADDRESS_PARTS = ['first_name', 'last_name', 'company', 'address_line_1', 'address_line_2', 'city', 'state', 'postal_code', 'country', 'email', 'phone', 'fax'] as const;

/** Each engine column and the path of the FluidPay field it comes from. */
const FIELDS: readonly (readonly [InputColumn, string])[] = [
  ['transaction_type', 'type'],
  ['amount', 'amount'],
  ['base_amount', 'base_amount'],
  ['processor_id', 'processor_id'],
  ['order_id', 'order_id'],
  ['po_number', 'po_number'],
  ['description', 'description'],
  ['tax_amount', 'tax_amount'],
  ['tax_exempt', 'tax_exempt'],
  ['shipping_amount', 'shipping_amount'],
  ['discount_amount', 'discount_amount'],
  ['email_receipt', 'email_receipt'],
  ['email_address', 'email_address'],
  ['cc_number', 'payment_method.card.number'],
  ['cc_expiration', 'payment_method.card.expiration_date'],
  ['cc_cvc', 'payment_method.card.cvc'],
  ['ach_account_number', 'payment_method.ach.account_number'],
  ['ach_routing_number', 'payment_method.ach.routing_number'],
  ['ach_account_type', 'payment_method.ach.account_type'],
  ['ach_sec_code', 'payment_method.ach.sec_code'],
  ['customer_id', 'payment_method.customer.id'],
  ['payment_method_id', 'payment_method.customer.payment_method_id'],
  ['payment_method_type', 'payment_method.customer.payment_method_type'],
  ...(['billing', 'shipping'] as const).flatMap((prefix) => ADDRESS_PARTS.map((part) => [`${prefix}_${part}` as InputColumn, `${prefix}_address.${part}`] as const)),
];

/** Names in the engine's errors that are no column, as FluidPay's body names them. */
const ERROR_NAMES: Readonly<Record<string, string>> = {
  'cc_number, ach_account_number or customer_id': 'payment_method',
  'Idempotency-Key': 'idempotency_key',
};

const FLUIDPAY_FIELD: ReadonlyMap<string, string> = new Map([...FIELDS, ...Object.entries(ERROR_NAMES)]);

/** POST /api/transaction's request in the engine's shape, whichever body it came in. */
export interface TransactionRequestBody {
  input: TransactionInput;
  /** payment_method.token: a temp token whose card is read before the engine sees the request. */
  token: string | null;
  /** payment_method.customer: the addresses it names (or the customer's defaults, when absent). */
  vaultAddresses: { customerId: string; billingAddressId: string | null; shippingAddressId: string | null } | null;
  /** The body's idempotency_key (FluidPay's), beside the Idempotency-Key header. */
  idempotencyKey: string | null;
  /** The body's ip_address (FluidPay's: the customer's). */
  ipAddress: string | null;
  /** FluidPay's body: errors name its fields (fluidPayFieldOf). */
  fluidPay: boolean;
}

function at(body: unknown, path: string): unknown {
  let value = body;
  for (const key of path.split('.')) value = value === null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[key];
  return value;
}

/** The engine's columns for FluidPay's body (the same text a CSV row carries). */
export function fromFluidPay(body: FluidPayTransactionBody): TransactionRequestBody {
  const input: TransactionInput = {};
  for (const [column, path] of FIELDS) {
    const value = at(body, path);
    if (value !== undefined) input[column] = String(value);
  }
  const { customer } = body.payment_method;
  return {
    input,
    token: body.payment_method.token ?? null,
    vaultAddresses: customer
      ? { customerId: customer.id, billingAddressId: customer.billing_address_id ?? null, shippingAddressId: customer.shipping_address_id ?? null }
      : null,
    idempotencyKey: body.idempotency_key ?? null,
    ipAddress: body.ip_address ?? null,
    fluidPay: true,
  };
}

/** binbatch's flat body: already the engine's columns. */
function fromColumns(input: TransactionInput): TransactionRequestBody {
  return { input, token: null, vaultAddresses: null, idempotencyKey: null, ipAddress: null, fluidPay: false };
}

/** An engine error's field as FluidPay's body names it (a column it shares keeps its name). */
export function fluidPayFieldOf(column: string): string {
  const whole = FLUIDPAY_FIELD.get(column);
  if (whole !== undefined) return whole;
  return column
    .split(', ')
    .map((part) => FLUIDPAY_FIELD.get(part) ?? part)
    .join(', ');
}

/** FluidPay's body is told from the flat one by its shape: its `type`, or an object as payment_method. */
function isFluidPayBody(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const fields = body as Record<string, unknown>;
  const method = fields.payment_method;
  return 'type' in fields || (method !== null && typeof method === 'object');
}

const fluidPayRequest = fluidPayTransactionSchema.transform(fromFluidPay);
const columnsRequest = transactionBodySchema.transform(fromColumns);

/**
 * The schema a body is checked by, picked once by its shape: each shape is validated by its own
 * schema (errors name its fields) and read into the engine's shape.
 */
export function transactionRequestSchemaFor(body: unknown): z.ZodType<TransactionRequestBody> {
  return isFluidPayBody(body) ? fluidPayRequest : columnsRequest;
}
