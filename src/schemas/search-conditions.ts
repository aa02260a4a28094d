/**
 * The conditions of a transaction search as plain data: what a route builds from FluidPay's filters,
 * what travels to the search's day objects, and what they apply (services/search/filters.ts).
 * FluidPay's operators only: strings `=` and `!=`, integers `=`, `!=`, `<` and `>`, date ranges.
 */

/** Address fields FluidPay names under billing_address / shipping_address, as record columns. */
export const ADDRESS_FIELDS = [
  'first_name',
  'last_name',
  'company',
  'address_line_1',
  'address_line_2',
  'city',
  'state',
  'postal_code',
  'country',
  'email',
  'phone',
  'fax',
] as const;

/** String fields a condition may name: record columns, plus three derived ones (batch_id, card_brand, last_four). */
export const STRING_FIELDS = [
  'id',
  'type',
  'status',
  'ip_address',
  'order_id',
  'po_number',
  'payment_method',
  'payment_type',
  'processor_id',
  'customer_id',
  'subscription_id',
  'settlement_batch_id',
  ...ADDRESS_FIELDS.map((f) => `billing_${f}` as const),
  ...ADDRESS_FIELDS.map((f) => `shipping_${f}` as const),
  'batch_id',
  'card_brand',
  'last_four',
] as const;
export type StringField = (typeof STRING_FIELDS)[number];

export const INT_FIELDS = ['amount', 'amount_authorized', 'amount_captured', 'amount_settled', 'tax_amount'] as const;
export type IntField = (typeof INT_FIELDS)[number];

export const DATE_FIELDS = ['created_at', 'captured_at', 'settled_at'] as const;
export type DateField = (typeof DATE_FIELDS)[number];

export type Condition =
  | { kind: 'string'; field: StringField; op: '=' | '!='; value: string }
  | { kind: 'int'; field: IntField; op: '=' | '!=' | '<' | '>'; value: number }
  /** `from` included, `to` excluded (ISO timestamps, UTC); either may be open. */
  | { kind: 'date'; field: DateField; from: string | null; to: string | null };
