/**
 * Field validation of one transaction request, the same for a batch CSV row and the JSON body of
 * POST /api/transaction (both arrive as text). Pure: no I/O; vault and processor lookups happen
 * later in the engine. Messages name the field and never quote the value, since a misplaced
 * column may hold a card number.
 */
import { isValidRoutingNumber } from '../../lib/aba';
import { checkExpiration, type Expiry } from '../../lib/expiry';
import { containsCardNumber, passesLuhn } from '../../lib/card-number';
import { INPUT_COLUMNS, type InputColumn, type RowError, type TransactionInput } from '../../schemas/transaction-columns';
import { CUSTOMER_ID_PATTERN, PAYMENT_METHOD_ID_PATTERN } from '../../schemas/vault';
import { emailAddressProblem, freeTextProblem, nameProblem } from '../../schemas/text-fields';

export const TRANSACTION_TYPES = ['sale', 'authorize', 'credit', 'verification'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
/**
 * The types a batch file's rows take (SPEC.md's three). `verification`, a zero-amount
 * authorization that checks a card (FluidPay's type of that name), is for POST /api/transaction only.
 */
export const BATCH_TRANSACTION_TYPES = ['sale', 'authorize', 'credit'] as const;
const ACH_ACCOUNT_TYPES = ['checking', 'savings'] as const;
export type AchAccountType = (typeof ACH_ACCOUNT_TYPES)[number];
const SEC_CODES = ['WEB', 'CCD', 'PPD'] as const;
export type SecCode = (typeof SEC_CODES)[number];
const PAYMENT_METHOD_TYPES = ['card', 'ach'] as const;

export type PaymentSource =
  | { kind: 'card'; number: string; expiry: Expiry; cvc: string | null }
  | { kind: 'ach'; accountNumber: string; routingNumber: string; accountType: AchAccountType; secCode: SecCode }
  | {
      kind: 'vault';
      customerId: string;
      paymentMethodId: string | null;
      paymentMethodType: 'card' | 'ach' | null;
      cvc: string | null;
    };

/** Amount columns as given (minor units); null when absent. */
export interface AmountFields {
  amount: number | null;
  baseAmount: number | null;
  surcharge: number | null;
  shippingAmount: number | null;
  taxAmount: number | null;
  discountAmount: number | null;
}

/** The free-form billing_* and shipping_* contact columns (shipping_amount is an amount, not contact). */
export const CONTACT_COLUMNS = INPUT_COLUMNS.filter(
  (column): column is Exclude<Extract<InputColumn, `billing_${string}` | `shipping_${string}`>, 'shipping_amount'> =>
    (column.startsWith('billing_') || column.startsWith('shipping_')) && column !== 'shipping_amount',
);
export type ContactColumn = (typeof CONTACT_COLUMNS)[number];

export interface ValidTransaction {
  type: TransactionType;
  source: PaymentSource;
  amounts: AmountFields;
  surchargeExempt: boolean;
  taxExempt: boolean;
  emailReceipt: boolean;
  orderId: string | null;
  poNumber: string | null;
  description: string | null;
  emailAddress: string | null;
  processorId: string | null;
  contact: Record<ContactColumn, string | null>;
}

export type ValidationResult = { ok: true; value: ValidTransaction } | { ok: false; errors: RowError[] };

/** Largest amount accepted in any amount column: 999,999,999.99 in major units. */
export const MAX_AMOUNT = 99_999_999_999;
export const MAX_CONTACT_LENGTH = 255;
export const MAX_DESCRIPTION_LENGTH = 100;

const REFERENCE = /^[A-Za-z0-9]{1,17}$/;
const PROCESSOR_ID = /^[A-Za-z0-9_-]{1,64}$/;
const CARD_DATA_COLUMNS: ReadonlySet<InputColumn> = new Set(['cc_number', 'cc_cvc', 'ach_account_number', 'ach_routing_number']);

/** Trims every field and drops empty ones: an empty CSV field means "absent". */
export function normaliseInput(input: TransactionInput): TransactionInput {
  const out: TransactionInput = {};
  for (const column of INPUT_COLUMNS) {
    const value = input[column]?.trim();
    if (value) out[column] = value;
  }
  return out;
}

/** Card numbers may be written with spaces or dashes between digit groups. */
export function cardDigits(value: string): string {
  return value.replace(/[ -]/g, '');
}

export function isAmex(number: string): boolean {
  return number.startsWith('34') || number.startsWith('37');
}

/** A non-negative integer in minor units, or the reason it is not one. */
export function parseAmount(value: string): { ok: true; value: number } | { ok: false; msg: string } {
  if (/^[0-9]+$/.test(value)) {
    const amount = Number(value);
    if (amount > MAX_AMOUNT) return { ok: false, msg: `must be at most ${MAX_AMOUNT}` };
    return { ok: true, value: amount };
  }
  if (/^-[0-9.]+$/.test(value)) return { ok: false, msg: 'must not be negative' };
  if (/^[0-9]*\.[0-9]+$/.test(value)) {
    return { ok: false, msg: 'must be an integer in minor units (write 10.00 as 1000)' };
  }
  return { ok: false, msg: 'must be a non-negative integer in minor units' };
}

export function parseBoolean(value: string): boolean | null {
  const lower = value.toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : null;
}

/** Validates one normalised request (see `normaliseInput`); every problem is reported, each naming its field. */
export function validateTransaction(input: TransactionInput, now: Date, door: 'api' | 'batch' = 'api'): ValidationResult {
  const errors: RowError[] = [];
  const fail = (field: string, msg: string) => {
    errors.push({ field, msg });
  };

  const type = enumField(input, 'transaction_type', door === 'api' ? TRANSACTION_TYPES : BATCH_TRANSACTION_TYPES, fail);
  if (type === null) fail('transaction_type', 'is required');

  const source = validatePaymentSource(input, now, fail);
  if (source?.kind === 'ach' && (type === 'authorize' || type === 'verification')) {
    fail('transaction_type', `${type} is not available for ACH payments; use sale`);
  }

  const amounts = validateAmounts(input, fail, type === 'verification');
  if (type && amounts) for (const error of surchargeRuleErrors(type, amounts)) fail(error.field, error.msg);
  const surchargeExempt = booleanField(input, 'surcharge_exempt', fail);
  const taxExempt = booleanField(input, 'tax_exempt', fail);
  const emailReceipt = booleanField(input, 'email_receipt', fail);

  for (const field of ['order_id', 'po_number'] as const) {
    const value = input[field];
    if (value !== undefined && !REFERENCE.test(value)) fail(field, 'must be 1 to 17 letters or digits');
  }
  // The text kinds' one rule each (schemas/text-fields.ts), as the vault, receipts and admin API use them.
  const text = (field: InputColumn, problem: string | null) => {
    if (problem) fail(field, problem);
  };
  if (input.description !== undefined) text('description', freeTextProblem(input.description, MAX_DESCRIPTION_LENGTH));
  if (input.email_address !== undefined) text('email_address', emailAddressProblem(input.email_address));
  if (input.processor_id !== undefined && !PROCESSOR_ID.test(input.processor_id)) {
    fail('processor_id', 'must be 1 to 64 letters, digits, "_" or "-"');
  }
  const contact = {} as Record<ContactColumn, string | null>;
  for (const column of CONTACT_COLUMNS) {
    const value = input[column];
    const isName = column.endsWith('_first_name') || column.endsWith('_last_name') || column.endsWith('_company');
    if (value !== undefined) text(column, (isName ? nameProblem : freeTextProblem)(value, MAX_CONTACT_LENGTH));
    contact[column] = value ?? null;
  }

  // Plain-text columns are stored and echoed (D1, the result file): a card number typed into
  // one is refused, never recorded. Card and account columns are the only places for one.
  for (const column of INPUT_COLUMNS) {
    const value = input[column];
    const reported = errors.some((error) => error.field === column);
    if (value !== undefined && !reported && !CARD_DATA_COLUMNS.has(column) && containsCardNumber(value)) {
      fail(column, 'must not contain a card number');
    }
  }

  if (errors.length > 0 || !type || !source || !amounts) return { ok: false, errors };
  return {
    ok: true,
    value: {
      type,
      source,
      amounts,
      surchargeExempt: surchargeExempt ?? false,
      taxExempt: taxExempt ?? false,
      emailReceipt: emailReceipt ?? false,
      orderId: input.order_id ?? null,
      poNumber: input.po_number ?? null,
      description: input.description ?? null,
      emailAddress: input.email_address ?? null,
      processorId: input.processor_id ?? null,
      contact,
    },
  };
}

/**
 * A surcharge is a fee on a purchase. Money paid to a cardholder (a credit) neither carries one nor
 * computes one: a `surcharge` above 0 is refused, and so is `base_amount`, which asks for the
 * merchant's surcharge rate to be added to it. The one place this rule lives: every door that
 * creates a transaction (the native and FluidPay bodies, batch rows, subscriptions' charges) asks
 * it with the type it is about to create. A refund's surcharge is capped by what was charged, in
 * total across refunds, by the ledger shard when the refund is claimed.
 */
export function surchargeRuleErrors(type: TransactionType, amounts: Pick<AmountFields, 'surcharge' | 'baseAmount'>): RowError[] {
  if (type !== 'credit') return [];
  const errors: RowError[] = [];
  if (amounts.surcharge !== null && amounts.surcharge > 0) {
    errors.push({ field: 'surcharge', msg: 'is not allowed on a credit: a surcharge is a fee on a purchase, and a credit pays the cardholder' });
  }
  if (amounts.baseAmount !== null) {
    errors.push({ field: 'base_amount', msg: 'is not allowed on a credit: base_amount asks for a surcharge to be added, and a credit carries none; give amount' });
  }
  return errors;
}

type Fail = (field: string, msg: string) => void;

function booleanField(input: TransactionInput, field: InputColumn, fail: Fail): boolean | null {
  const value = input[field];
  if (value === undefined) return null;
  const parsed = parseBoolean(value);
  if (parsed === null) fail(field, 'must be true or false');
  return parsed;
}

function validateAmounts(input: TransactionInput, fail: Fail, verification: boolean): AmountFields | null {
  let valid = true;
  const read = (field: InputColumn): number | null => {
    const value = input[field];
    if (value === undefined) return null;
    const parsed = parseAmount(value);
    if (parsed.ok) return parsed.value;
    valid = false;
    fail(field, parsed.msg);
    return null;
  };
  const amounts: AmountFields = {
    amount: read('amount'),
    baseAmount: read('base_amount'),
    surcharge: read('surcharge'),
    shippingAmount: read('shipping_amount'),
    taxAmount: read('tax_amount'),
    discountAmount: read('discount_amount'),
  };
  // A verification moves no money: its amount is 0 when left out (computeAmounts refuses another).
  if (input.amount === undefined && input.base_amount === undefined && !verification) {
    fail('amount', 'is required (or give base_amount)');
    return null;
  }
  return valid ? amounts : null;
}

const CARD_FIELDS = ['cc_number', 'cc_expiration'] as const;
const ACH_FIELDS = ['ach_account_number', 'ach_routing_number', 'ach_account_type', 'ach_sec_code'] as const;

/** Exactly one of card, ACH and vault customer; each complete and well formed. */
function validatePaymentSource(input: TransactionInput, now: Date, fail: Fail): PaymentSource | null {
  const hasCard = CARD_FIELDS.some((f) => input[f] !== undefined);
  const hasAch = ACH_FIELDS.some((f) => input[f] !== undefined);
  const hasVault = input.customer_id !== undefined;
  const given = [hasCard && 'cc_number', hasAch && 'ach_account_number', hasVault && 'customer_id'].filter(
    (name): name is string => typeof name === 'string',
  );

  if (!hasVault) {
    for (const field of ['payment_method_id', 'payment_method_type'] as const) {
      if (input[field] !== undefined) fail(field, 'is only allowed with customer_id');
    }
  }
  if (given.length === 0) {
    fail('cc_number, ach_account_number or customer_id', 'a payment source is required');
    return null;
  }
  if (given.length > 1) {
    fail(given.join(', '), 'give only one payment source: a card, an ACH account or a vault customer');
    return null;
  }

  const cvc = validateCvc(input, hasAch, fail);
  if (hasCard) return validateCard(input, cvc, now, fail);
  if (hasAch) return validateAch(input, fail);

  const customerId = input.customer_id ?? '';
  let ok = true;
  if (!CUSTOMER_ID_PATTERN.test(customerId)) {
    fail('customer_id', 'must be 1 to 40 letters, digits, ".", "-", "_" or "^"');
    ok = false;
  }
  const methodId = input.payment_method_id ?? null;
  if (methodId !== null && !PAYMENT_METHOD_ID_PATTERN.test(methodId)) {
    fail('payment_method_id', 'must be 1 to 64 letters, digits, ".", "-", "_" or "^"');
    ok = false;
  }
  const methodType = enumField(input, 'payment_method_type', PAYMENT_METHOD_TYPES, fail);
  if (methodType === false) ok = false;
  return ok && cvc !== false && methodType !== false
    ? { kind: 'vault', customerId, paymentMethodId: methodId, paymentMethodType: methodType, cvc }
    : null;
}

/** The CVC's shape (its length per brand is checked with the card): null when absent, false when invalid. */
function validateCvc(input: TransactionInput, hasAch: boolean, fail: Fail): string | null | false {
  const cvc = input.cc_cvc;
  if (cvc === undefined) return null;
  if (hasAch) {
    fail('cc_cvc', 'is only allowed with a card payment');
    return false;
  }
  if (!/^[0-9]{3,4}$/.test(cvc)) {
    fail('cc_cvc', 'must be 3 or 4 digits');
    return false;
  }
  return cvc;
}

function validateCard(input: TransactionInput, cvc: string | null | false, now: Date, fail: Fail): PaymentSource | null {
  let ok = cvc !== false;
  const number = cardDigits(input.cc_number ?? '');
  if (input.cc_number === undefined) {
    fail('cc_number', 'is required with cc_expiration');
    ok = false;
  } else if (!/^[0-9]+$/.test(number)) {
    fail('cc_number', 'must contain only digits');
    ok = false;
  } else if (number.length < 12 || number.length > 19) {
    fail('cc_number', 'must be 12 to 19 digits');
    ok = false;
  } else if (!passesLuhn(number)) {
    fail('cc_number', 'is not a valid card number (Luhn check failed)');
    ok = false;
  } else if (typeof cvc === 'string' && cvc.length !== (isAmex(number) ? 4 : 3)) {
    fail('cc_cvc', isAmex(number) ? 'must be 4 digits for an American Express card' : 'must be 3 digits for this card');
    ok = false;
  }

  const expiration = input.cc_expiration === undefined ? null : checkExpiration(input.cc_expiration, now);
  if (expiration === null) fail('cc_expiration', 'is required with cc_number');
  else if (!expiration.ok) {
    fail('cc_expiration', expiration.problem === 'malformed' ? 'must be MM/YY, MMYY or MM/YYYY' : 'the card has expired');
  }
  return ok && expiration?.ok && cvc !== false ? { kind: 'card', number, expiry: expiration.expiry, cvc } : null;
}

function validateAch(input: TransactionInput, fail: Fail): PaymentSource | null {
  for (const field of ACH_FIELDS) {
    if (input[field] === undefined) fail(field, 'is required for an ACH payment');
  }
  let ok = ACH_FIELDS.every((field) => input[field] !== undefined);
  const accountNumber = input.ach_account_number ?? '';
  if (input.ach_account_number !== undefined && !/^[0-9]{4,17}$/.test(accountNumber)) {
    fail('ach_account_number', 'must be 4 to 17 digits');
    ok = false;
  }
  const routingNumber = input.ach_routing_number ?? '';
  if (input.ach_routing_number !== undefined && !isValidRoutingNumber(routingNumber)) {
    fail('ach_routing_number', 'must be a 9-digit ABA routing number with a valid check digit');
    ok = false;
  }
  const accountType = enumField(input, 'ach_account_type', ACH_ACCOUNT_TYPES, fail);
  const secCode = enumField(input, 'ach_sec_code', SEC_CODES, fail);
  return ok && accountType && secCode ? { kind: 'ach', accountNumber, routingNumber, accountType, secCode } : null;
}

/**
 * A column that takes one of a few words, in any letter case: the word (in the case listed),
 * null when the column is absent, false (after `fail`) when it is something else.
 */
function enumField<T extends string>(input: TransactionInput, field: InputColumn, allowed: readonly T[], fail: Fail): T | null | false {
  const value = input[field];
  if (value === undefined) return null;
  const found = allowed.find((word) => word.toLowerCase() === value.toLowerCase());
  if (found !== undefined) return found;
  fail(field, `must be ${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`);
  return false;
}

/**
 * A request with email_receipt true must have somewhere to send it: email_address, a vault
 * customer's email, or billing_email (then a well-formed one: it becomes the recipient). Checked
 * before the processor is asked, so a sale is never charged with a receipt that cannot go.
 */
export function receiptAddressError(request: { emailReceipt: boolean; emailAddress: string | null; billingEmail: string | null }, customerEmail: string | null): RowError | null {
  if (!request.emailReceipt || request.emailAddress !== null || customerEmail) return null;
  if (request.billingEmail === null) {
    return { field: 'email_receipt, email_address', msg: 'email_receipt is true but there is no address to send the receipt to: give email_address (or billing_email)' };
  }
  if (emailAddressProblem(request.billingEmail) !== null) {
    return { field: 'billing_email', msg: 'must be a well-formed email address: it receives the receipt (email_receipt is true, no email_address)' };
  }
  return null;
}
