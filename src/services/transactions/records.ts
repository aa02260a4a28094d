/**
 * Transaction records: the result CSV's columns, typed (docs/transactions.md, "The record").
 * Money is integer minor units, timestamps ISO 8601 with milliseconds and Z, booleans true/false,
 * absent values null. Card numbers appear only masked; CVCs never.
 */
import { formatExpiry, parseExpiry, type Expiry } from '../../lib/expiry';
import { describeFieldErrors } from '../../lib/field-errors';
import { containsCardNumber } from '../../lib/card-number';
import { maskAccountNumber, maskCardNumber } from '../../lib/mask';
import type { RowError, TransactionContext, TransactionInput, TransactionRecord } from '../../schemas/transaction-columns';
import { CUSTOMER_ID_PATTERN } from '../../schemas/vault';
import type { ChargeResult } from './processors/processor';
import type { Amounts } from './amounts';
import type { CardMetadata } from './deps';
import type { ProcessorRecord } from '../../storage/processors';
import { CLAIMED_STATUS } from '../../storage/ledger-shard';
import {
  CONTACT_COLUMNS,
  TRANSACTION_TYPES,
  cardDigits,
  parseAmount,
  parseBoolean,
  type AchAccountType,
  type SecCode,
  type ValidTransaction,
} from './validation';

/** Merchants have no currency setting yet: every amount is in US dollars (cents). */
export const CURRENCY = 'USD';

/** Response code of a request refused by validation: no processor was asked. */
export const INVALID_RESPONSE_CODE = 400;

export type ResolvedPayment =
  | { kind: 'card'; number: string; expiry: Expiry; cvc: string | null; card: CardMetadata }
  | { kind: 'ach'; accountNumber: string; routingNumber: string; accountType: AchAccountType; secCode: SecCode };

/** A request ready for its processor: everything the record holds except the processor's answer. */
export interface ProcessedTransaction {
  id: string;
  /** A subscription's billing: its id (services/recurring/billing.ts). */
  subscriptionId?: string | null;
  idempotencyKey: string;
  createdAt: string;
  context: TransactionContext;
  userName: string;
  tx: ValidTransaction;
  amounts: Amounts;
  payment: ResolvedPayment;
  /** How the request named the payment: a card, an ACH account, or a vault customer. */
  paymentMethod: 'card' | 'ach' | 'customer';
  customerId: string | null;
  emailAddress: string | null;
  processor: ProcessorRecord;
}

/** First 6 digits, or 8 when the BIN record that matched is 8 digits or longer; then the last 4. */
export function maskedCard(number: string, matchedLength: number): string {
  return maskCardNumber(number, matchedLength >= 8 ? 8 : 6);
}

export function statusFor(type: ValidTransaction['type'], response: ChargeResult['response']): string {
  // An approved verification is final: nothing to capture, void, settle or refund.
  if (response === 'approved') return type === 'authorize' ? 'authorized' : type === 'verification' ? 'verified' : 'pending_settlement';
  return response === 'declined' ? 'declined' : 'failed';
}

function emptyRecord(): TransactionRecord {
  return {
    id: null,
    user_name: null,
    idempotency_key: null,
    type: null,
    transaction_source: null,
    ip_address: null,
    amount: null,
    amount_authorized: null,
    amount_captured: null,
    amount_settled: null,
    tip: null,
    service_fee: null,
    tax_amount: null,
    tax_exempt: null,
    shipping_amount: null,
    po_number: null,
    order_id: null,
    settlement_batch_id: null,
    referenced_transaction_id: null,
    payment_method: null,
    payment_type: null,
    response: null,
    response_code: null,
    status: null,
    processor_type: null,
    processor_id: null,
    processor_name: null,
    subscription_id: null,
    currency_iso_code: null,
    customer_id: null,
    email_address: null,
    billing_first_name: null,
    billing_last_name: null,
    billing_company: null,
    billing_address_line_1: null,
    billing_address_line_2: null,
    billing_city: null,
    billing_state: null,
    billing_postal_code: null,
    billing_country: null,
    billing_email: null,
    billing_phone: null,
    billing_fax: null,
    shipping_first_name: null,
    shipping_last_name: null,
    shipping_company: null,
    shipping_address_line_1: null,
    shipping_address_line_2: null,
    shipping_city: null,
    shipping_state: null,
    shipping_postal_code: null,
    shipping_country: null,
    shipping_email: null,
    shipping_phone: null,
    shipping_fax: null,
    created_at: null,
    captured_at: null,
    settled_at: null,
    card_type: null,
    entry_type: null,
    masked_account: null,
    expiration: null,
    auth_code: null,
    processor_response_code: null,
    processor_response_text: null,
    sec_code: null,
    account_type: null,
    avs_response_code: null,
    cvv_response_code: null,
  };
}

/**
 * The record of a claim: the transaction as it will be recorded, written before the processor is
 * asked, with status `processing` and the columns only the processor's answer decides left empty
 * (docs/transactions.md, "Idempotency"). `settledRecord` fills them in.
 */
export function pendingRecord(p: ProcessedTransaction): TransactionRecord {
  const { tx, amounts, payment } = p;
  const record = emptyRecord();
  Object.assign(record, {
    id: p.id,
    user_name: p.userName,
    idempotency_key: p.idempotencyKey,
    type: tx.type,
    transaction_source: p.context.source,
    ip_address: p.context.ipAddress,
    subscription_id: p.subscriptionId ?? null,
    amount: amounts.amount,
    amount_authorized: 0,
    amount_captured: 0,
    amount_settled: 0,
    tip: 0,
    // The result CSV has no surcharge column; the surcharge (given or computed) is the service fee.
    service_fee: amounts.surcharge,
    tax_amount: amounts.taxAmount,
    tax_exempt: tx.taxExempt,
    shipping_amount: amounts.shippingAmount,
    po_number: tx.poNumber,
    order_id: tx.orderId,
    payment_method: p.paymentMethod,
    payment_type: payment.kind,
    response: CLAIMED_STATUS,
    response_code: 0,
    status: CLAIMED_STATUS,
    processor_type: p.processor.type,
    processor_id: p.processor.id,
    processor_name: p.processor.name,
    currency_iso_code: CURRENCY,
    customer_id: p.customerId,
    email_address: p.emailAddress,
    created_at: p.createdAt,
  } satisfies Partial<TransactionRecord>);
  for (const column of CONTACT_COLUMNS) record[column] = tx.contact[column];
  if (payment.kind === 'card') {
    record.card_type = payment.card.card_type?.toLowerCase() ?? null;
    record.entry_type = 'keyed';
    record.masked_account = maskedCard(payment.number, payment.card.matched_length);
    record.expiration = formatExpiry(payment.expiry);
  } else {
    record.masked_account = maskAccountNumber(payment.accountNumber);
    record.sec_code = payment.secCode;
    record.account_type = payment.accountType;
  }
  return record;
}

/** A claim's record completed with the processor's answer (the same whether it came now or from `lookup`). */
export function settledRecord(pending: TransactionRecord, result: ChargeResult): TransactionRecord {
  const approved = result.response === 'approved';
  const type = pending.type as ValidTransaction['type'];
  const captured = approved && type !== 'authorize' && type !== 'verification';
  return {
    ...pending,
    amount_authorized: result.amountAuthorized,
    amount_captured: captured ? result.amountAuthorized : 0,
    response: result.response,
    response_code: result.responseCode,
    status: statusFor(type, result.response),
    captured_at: captured ? pending.created_at : null,
    auth_code: result.authCode,
    processor_response_code: result.processorResponseCode,
    processor_response_text: result.processorResponseText,
    avs_response_code: result.avsResponseCode,
    cvv_response_code: result.cvvResponseCode,
  };
}

export const NOT_PROCESSED_TEXT = 'not processed: the batch failed before this row ran; nothing was charged';

/**
 * The result line of a batch row that never ran (its chunk did not finish before the batch
 * failed): response `error`, no processor, nothing charged (a partial download reports it).
 */
export function notProcessedRecord(meta: { idempotencyKey: string; ipAddress: string | null; userName: string }): TransactionRecord {
  const record = emptyRecord();
  Object.assign(record, {
    user_name: meta.userName,
    idempotency_key: meta.idempotencyKey,
    transaction_source: 'batch',
    ip_address: meta.ipAddress,
    response: 'error',
    status: 'failed',
    processor_response_text: NOT_PROCESSED_TEXT,
  } satisfies Partial<TransactionRecord>);
  return record;
}

/** A refused row's value shown back in its result line, unless it holds a card number. */
function echo(value: string): string | null {
  return containsCardNumber(value) ? null : value;
}

/**
 * The result line of a request refused before processing (response "error", code 400). It shows
 * what could be read safely from the request: well-formed values, the card number only masked.
 */
export function invalidRecord(
  input: TransactionInput,
  errors: RowError[],
  meta: { idempotencyKey: string; createdAt: string; context: TransactionContext; userName: string },
): TransactionRecord {
  const record = emptyRecord();
  const amount = (value: string | undefined) => {
    const parsed = value === undefined ? null : parseAmount(value);
    return parsed?.ok ? parsed.value : null;
  };
  const typeText = input.transaction_type?.toLowerCase();
  const digits = input.cc_number === undefined ? '' : cardDigits(input.cc_number);
  const expiry = input.cc_expiration === undefined ? null : parseExpiry(input.cc_expiration);
  const paymentType = input.cc_number !== undefined ? 'card' : input.ach_account_number !== undefined ? 'ach' : null;
  const achDigits = input.ach_account_number ?? '';
  Object.assign(record, {
    user_name: meta.userName,
    idempotency_key: meta.idempotencyKey,
    type: TRANSACTION_TYPES.find((t) => t === typeText) ?? null,
    transaction_source: meta.context.source,
    ip_address: meta.context.ipAddress,
    amount: amount(input.amount),
    tax_amount: amount(input.tax_amount),
    tax_exempt: input.tax_exempt === undefined ? null : parseBoolean(input.tax_exempt),
    shipping_amount: amount(input.shipping_amount),
    po_number: input.po_number !== undefined && /^[A-Za-z0-9]{1,17}$/.test(input.po_number) ? echo(input.po_number) : null,
    order_id: input.order_id !== undefined && /^[A-Za-z0-9]{1,17}$/.test(input.order_id) ? echo(input.order_id) : null,
    payment_method: input.customer_id !== undefined ? 'customer' : paymentType,
    payment_type: paymentType,
    response: 'error',
    response_code: INVALID_RESPONSE_CODE,
    status: 'failed',
    currency_iso_code: CURRENCY,
    customer_id: input.customer_id !== undefined && CUSTOMER_ID_PATTERN.test(input.customer_id) ? echo(input.customer_id) : null,
    created_at: meta.createdAt,
    // Masked only when it looks like a card number; anything else is not echoed at all.
    masked_account:
      /^[0-9]{12,19}$/.test(digits) ? maskCardNumber(digits) : /^[0-9]{4,17}$/.test(achDigits) ? maskAccountNumber(achDigits) : null,
    expiration: expiry ? formatExpiry(expiry) : null,
    processor_response_text: describeFieldErrors(errors),
  } satisfies Partial<TransactionRecord>);
  for (const column of CONTACT_COLUMNS) {
    const value = input[column];
    record[column] = value !== undefined && value.length <= 255 ? echo(value) : null;
  }
  return record;
}
