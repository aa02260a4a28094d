/**
 * FluidPay's Go SDK (fluidpay-go 1.0), as the Worker sees it: its requests in their exact shape
 * (paths under `WithBaseURL(".../api")`, headers, bodies as `encoding/json` writes its structs:
 * zero values left out where the field says `omitempty`), and its decoding of the answers into its
 * Go types, as `encoding/json` would: a field of the wrong JSON type is an error, null and absent
 * fields are the zero value, unknown fields are ignored. Written from the SDK's source (client.go,
 * transactions.go, customers.go, settlements.go, webhooks.go, query.go), not from binbatch's code.
 */
import { call } from './api';

// ---- Go types ---------------------------------------------------------------------------------

export type GoType =
  | { kind: 'string' }
  | { kind: 'int' }
  | { kind: 'bool' }
  | { kind: 'time' }
  | { kind: 'raw' }
  | { kind: 'ptr'; of: GoType }
  | { kind: 'slice'; of: GoType }
  | { kind: 'map'; of: GoType }
  | { kind: 'struct'; fields: Record<string, GoType> };

export const str: GoType = { kind: 'string' };
export const int: GoType = { kind: 'int' };
export const bool: GoType = { kind: 'bool' };
export const time: GoType = { kind: 'time' };
export const raw: GoType = { kind: 'raw' };
export const ptr = (of: GoType): GoType => ({ kind: 'ptr', of });
export const slice = (of: GoType): GoType => ({ kind: 'slice', of });
export const map = (of: GoType): GoType => ({ kind: 'map', of });
export const struct = (fields: Record<string, GoType>): GoType => ({ kind: 'struct', fields });

/** What Go's time.Time accepts from JSON: RFC 3339 (fractional seconds optional). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** json.Unmarshal of `value` into `type`: the decoded value, or throws as Go returns an error. */
export function goDecode(type: GoType, value: unknown, path = '$'): unknown {
  const fail = (what: string) => {
    throw new Error(`json: cannot unmarshal ${JSON.stringify(value)?.slice(0, 60)} into Go ${what} at ${path}`);
  };
  if (value === null) {
    // null leaves the zero value (a nil pointer, slice or map; "" ; 0; false; the zero time).
    return type.kind === 'ptr' || type.kind === 'slice' || type.kind === 'map' || type.kind === 'raw' ? null : zero(type);
  }
  switch (type.kind) {
    case 'string':
      return typeof value === 'string' ? value : fail('string');
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) ? value : fail('int');
    case 'bool':
      return typeof value === 'boolean' ? value : fail('bool');
    case 'time':
      return typeof value === 'string' && RFC3339.test(value) ? new Date(value) : fail('time.Time (RFC 3339)');
    case 'raw':
      return value;
    case 'ptr':
      return goDecode(type.of, value, path);
    case 'slice':
      return Array.isArray(value) ? value.map((item, i) => goDecode(type.of, item, `${path}[${i}]`)) : fail('slice');
    case 'map':
      if (typeof value !== 'object' || Array.isArray(value)) return fail('map');
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, goDecode(type.of, v, `${path}.${k}`)]));
    case 'struct': {
      if (typeof value !== 'object' || Array.isArray(value)) return fail('struct');
      const source = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [name, fieldType] of Object.entries(type.fields)) out[name] = name in source ? goDecode(fieldType, source[name], `${path}.${name}`) : zero(fieldType);
      return out;
    }
  }
}

function zero(type: GoType): unknown {
  switch (type.kind) {
    case 'string':
      return '';
    case 'int':
      return 0;
    case 'bool':
      return false;
    case 'time':
      return new Date('0001-01-01T00:00:00Z');
    case 'struct':
      return goDecode(type, {});
    default:
      return null;
  }
}

// ---- The SDK's types (field names and JSON types as its structs declare them) --------------------

const address = struct({
  first_name: str, last_name: str, company: str, address_line_1: str, address_line_2: str, city: str,
  state: str, postal_code: str, country: str, email: str, phone: str, fax: str,
});

const cardResponse = struct({
  id: str, card_type: str, first_six: str, last_four: str, masked_card: str, expiration_date: str, response: str,
  response_code: int, auth_code: str, processor_response_code: str, processor_response_text: str,
  processor_transaction_id: str, processor_type: str, processor_id: str, bin_type: str, type: str,
  avs_response_code: str, cvv_response_code: str, processor_specific: raw, created_at: time, updated_at: time,
});

const achResponse = struct({
  id: str, sec_code: str, account_type: str, masked_account_number: str, routing_number: str, response: str,
  response_code: int, auth_code: str, processor_response_code: str, processor_response_text: str, processor_type: str,
  processor_id: str, processor_specific: raw, created_at: time, updated_at: time,
});

export const Transaction = struct({
  id: str, type: str, status: str, transaction_source: str, response: str, response_code: int,
  amount: int, base_amount: int, amount_authorized: int, amount_captured: int, amount_settled: int, amount_refunded: int,
  tax_amount: int, tax_exempt: bool, shipping_amount: int, discount_amount: int, surcharge: int, service_fee: int,
  tip_amount: int, payment_adjustment: int, national_tax_amount: int, duty_amount: int,
  currency: str, payment_method: str, payment_type: str,
  response_body: struct({ card: ptr(cardResponse), ach: ptr(achResponse), terminal: raw, apm: raw, cash: raw }),
  processor_id: str, processor_type: str, processor_name: str, merchant_id: str, merchant_name: str, user_id: str, user_name: str,
  customer_id: str, customer_payment_type: str, customer_payment_id: str, subscription_id: str, referenced_transaction_id: str,
  settlement_batch_id: str, order_id: str, po_number: str, description: str, ip_address: str, email_receipt: bool,
  email_address: str, idempotency_key: str, idempotency_time: int, features: slice(str), custom_fields: map(slice(str)),
  line_items: raw, billing_address: address, shipping_address: address, summary_commodity_code: str,
  ship_from_postal_code: str, merchant_vat_registration_number: str, customer_vat_registration_number: str,
  receipt_data: str, split_transaction_response: raw, created_at: time, updated_at: time, captured_at: ptr(time), settled_at: ptr(time),
});

const customerAddress = struct({
  first_name: str, last_name: str, company: str, line_1: str, line_2: str, city: str, state: str, postal_code: str,
  country: str, email: str, phone: str, fax: str, id: str, hash: str,
});

/** customerWire: the gateway's nesting, which the SDK's Customer.UnmarshalJSON flattens. */
const customerWire = struct({
  id: str, owner_id: str, created_address_id: str, created_payment_method_id: str,
  data: struct({
    customer: struct({
      addresses: slice(ptr(customerAddress)),
      defaults: struct({ billing_address_id: str, shipping_address_id: str, payment_method_id: str, payment_method_type: str }),
      description: str, notes: str, flags: slice(str),
      payments: struct({
        ach: slice(ptr(struct({ id: str, account_type: str, sec_code: str, masked_account_number: str, routing_number: str, flags: slice(str), processor_id: str }))),
        cards: slice(ptr(struct({ id: str, card_type: str, expiration_date: str, masked_number: str, flags: slice(str), processor_id: str }))),
      }),
    }),
  }),
  created_at: time, updated_at: time,
});

type Wire = {
  id: string; owner_id: string; created_address_id: string; created_payment_method_id: string;
  data: { customer: { addresses: Record<string, string>[] | null; defaults: Record<string, string>; description: string; notes: string; flags: string[] | null;
    payments: { ach: Record<string, unknown>[] | null; cards: Record<string, unknown>[] | null } } };
  created_at: Date; updated_at: Date;
};

/** Customer.UnmarshalJSON: the wire shape flattened. */
export function customerFrom(value: unknown) {
  const w = goDecode(customerWire, value) as Wire;
  const c = w.data.customer;
  return {
    ID: w.id, OwnerID: w.owner_id, Description: c.description, Notes: c.notes, Flags: c.flags, Addresses: c.addresses,
    Defaults: c.defaults, Cards: c.payments.cards, ACH: c.payments.ach, CreatedAddressID: w.created_address_id,
    CreatedPaymentMethodID: w.created_payment_method_id, CreatedAt: w.created_at, UpdatedAt: w.updated_at,
  };
}
export type Customer = ReturnType<typeof customerFrom>;

export const SettlementBatchSearchResult = struct({
  summary: slice(ptr(struct({ merchant_id: str, batch_date: str, processor_id: str, processor_name: str, num_transactions: int, captured: int, credit: int }))),
  results: slice(ptr(struct({
    id: str, merchant_id: str, batch_date: time, processor_id: str, processor_name: str, processor_type: str, batch_number: int,
    num_transactions: int, amount_captured: int, amount_credit: int, net_deposit: int, response_code: int, response_message: str,
  }))),
});

export const BINLookup = struct({
  bin: str, card_brand: str, issuing_bank: str, card_type: str, card_level_generic: str, country: str, is_surchargeable: bool, payment_method_type: str,
});

export const WebhookEvent = struct({
  status: str, msg: str, type: str, account_type: str, account_type_id: str, transaction_id: str, action_at: time, data: raw,
});

// ---- The client (client.go's call, doOne, doList, doEmpty) --------------------------------------

export class SdkError extends Error {
  constructor(
    readonly statusCode: number,
    readonly msg: string,
    readonly correlationId: string,
  ) {
    super(`fluidpay: ${statusCode}: ${msg} (correlation id ${correlationId})`);
  }
  isNotFound() {
    return this.statusCode === 404;
  }
  isBadRequest() {
    return this.statusCode === 400;
  }
  isUnauthorized() {
    return this.statusCode === 401;
  }
}

/** ErrNotFound: a single-record lookup answered with an empty array. */
export const ErrNotFound = new Error('fluidpay: not found');

export interface SdkResponse {
  statusCode: number;
  correlationId: string;
  totalCount: number;
  data: unknown;
  headers: Headers;
}

/** client.call: the request as the SDK builds it, and its envelope handling. */
export async function sdkCall(key: string, method: string, path: string, options: { query?: Record<string, string>; body?: unknown } = {}): Promise<SdkResponse> {
  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'fluidpay-go/1.0.0' };
  let body: string | undefined;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] = 'application/json';
  }
  const query = options.query ? `?${new URLSearchParams(options.query).toString()}` : '';
  const response = await call(method, `/api/${path}${query}`, { key, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  const correlationId = response.headers.get('X-Correlation-Id') ?? response.headers.get('Correlation-Id') ?? '';
  let envelope: { status?: unknown; msg?: unknown; data?: unknown; total_count?: unknown; count?: unknown } = {};
  if (text.trim() !== '') {
    try {
      envelope = JSON.parse(text) as typeof envelope;
    } catch (err) {
      if (response.status < 400) throw err;
    }
  }
  const status = typeof envelope.status === 'string' ? envelope.status : '';
  if (response.status >= 400 || !['', 'success'].includes(status.toLowerCase())) {
    throw new SdkError(response.status, typeof envelope.msg === 'string' ? envelope.msg : '', correlationId);
  }
  // Some endpoints (the BIN lookup) answer without the envelope: the whole body is the payload.
  const data = envelope.data === undefined && status === '' ? envelope : envelope.data;
  const totalCount = typeof envelope.total_count === 'number' && envelope.total_count !== 0 ? envelope.total_count : typeof envelope.count === 'number' ? envelope.count : 0;
  return { statusCode: response.status, correlationId, totalCount, data, headers: response.headers };
}

/** decodeData for a single record: an array's first element; an empty array is ErrNotFound. */
export function one(data: unknown): unknown {
  if (Array.isArray(data)) {
    if (data.length === 0) throw ErrNotFound;
    return data[0];
  }
  return data;
}

/**
 * doList[T]: the data member decoded as `[]*T` (listDecoder). An empty array is an empty page, not
 * ErrNotFound; null (or no data) is a nil slice; anything but an array is a decoding error.
 */
export function many(type: GoType, data: unknown): unknown[] {
  if (data === null || data === undefined) return [];
  if (!Array.isArray(data)) throw new Error(`json: cannot unmarshal ${typeof data} into Go value of type []*T`);
  return data.map((item, i) => goDecode(ptr(type), item, `$[${i}]`));
}

// ---- query.go: the search filters' builders, as the SDK encodes them --------------------------

export type StringQuery = { operator: '=' | '!='; value: string };
export type IntQuery = { operator: '=' | '!=' | '<' | '>'; value: number };
/** DateRangeQuery: both fields always sent (no omitempty), "" when unset. */
export type DateRangeQuery = { start_date: string; end_date: string };

export const Equal = (value: string): StringQuery => ({ operator: '=', value });
export const NotEqual = (value: string): StringQuery => ({ operator: '!=', value });
export const IntEqual = (value: number): IntQuery => ({ operator: '=', value });
export const IntNotEqual = (value: number): IntQuery => ({ operator: '!=', value });
export const LessThan = (value: number): IntQuery => ({ operator: '<', value });
export const GreaterThan = (value: number): IntQuery => ({ operator: '>', value });

/** time.Time.UTC().Format(time.RFC3339): whole seconds, "Z". */
const rfc3339 = (at: Date) => at.toISOString().replace(/\.[0-9]{3}Z$/, 'Z');

/** DateRange(start, end): both converted to UTC and formatted to the second (fractions dropped). */
export const DateRange = (start: Date, end: Date): DateRangeQuery => ({ start_date: rfc3339(start), end_date: rfc3339(end) });

/** Day(day): the UTC calendar day, 00:00:00 to 23:59:59. */
export function Day(day: Date): DateRangeQuery {
  const start = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate()));
  return DateRange(start, new Date(start.getTime() + 86_400_000 - 1000));
}

type AddressQuery = Partial<Record<'address_id' | 'first_name' | 'last_name' | 'company' | 'address_line_1' | 'address_line_2' | 'city' | 'state' | 'postal_code' | 'country' | 'email' | 'phone' | 'fax', StringQuery>>;

/** TransactionSearchRequest: every filter a pointer with omitempty; Limit and Offset left out when 0. */
export interface TransactionSearchRequest {
  transaction_id?: StringQuery; user_id?: StringQuery; type?: StringQuery; ip_address?: StringQuery;
  amount?: IntQuery; amount_authorized?: IntQuery; amount_captured?: IntQuery; amount_settled?: IntQuery; tax_amount?: IntQuery;
  po_number?: StringQuery; order_id?: StringQuery; payment_method?: StringQuery; payment_type?: StringQuery; status?: StringQuery;
  processor_id?: StringQuery; customer_id?: StringQuery; settlement_batch_id?: StringQuery;
  created_at?: DateRangeQuery; captured_at?: DateRangeQuery; settled_at?: DateRangeQuery;
  billing_address?: AddressQuery; shipping_address?: AddressQuery;
  limit?: number; offset?: number;
}

/** The body encodeJSON writes for a TransactionSearchRequest (Search(nil) sends `{}`). */
export function searchBody(req: TransactionSearchRequest | null): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(req ?? {})) {
    if (value === undefined || ((key === 'limit' || key === 'offset') && value === 0)) continue;
    body[key] = value;
  }
  return body;
}

/** NewIdempotencyKey: a random version-4 UUID. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

/** ComputeWebhookSignature / VerifyWebhookSignature: HMAC-SHA256 of the raw body, unpadded base64url. */
export async function computeWebhookSignature(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body)));
  return btoa(String.fromCharCode(...mac)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** ParseWebhookRequest: Signature, then Signature-Previous, against the secret; the event decoded. */
export async function parseWebhookRequest(headers: Headers, body: string, secret: string) {
  const event = goDecode(WebhookEvent, JSON.parse(body)) as { type: string; data: unknown } & Record<string, unknown>;
  const secrets = event.type === 'test' ? ['00000000-0000-4000-8000-000000000001', secret] : [secret];
  for (const header of ['Signature', 'Signature-Previous']) {
    const signature = headers.get(header) ?? '';
    for (const s of secrets) {
      if (signature !== '' && signature === (await computeWebhookSignature(s, body))) {
        return { ...event, EventID: headers.get('X-Webhook-Event-Id') ?? '' };
      }
    }
  }
  throw new Error('fluidpay: invalid webhook signature');
}
