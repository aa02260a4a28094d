/**
 * Who gets a receipt and what it says (docs/receipts.md, "Who gets what"), as pure rules over a
 * transaction's stored record. The ledger shard calls them inside the step that records the state
 * change, so the receipt is queued with it or not at all.
 *
 *   approved sale, authorize or credit with email_receipt true   a receipt of its kind
 *   approved refund or void of such a transaction                 a receipt of its own
 *   declined or failed, capture                                   nothing
 *
 * The recipient is `email_address` (a vault customer's email when the request named none), else
 * `billing_email`; a request with the flag and neither is refused before it is charged.
 */
import type { RowError, TransactionRecord } from '../../schemas/transaction-columns';
import { emailAddressProblem } from '../../schemas/text-fields';
import type { StoredTransaction } from '../../storage/ledger-shard';
import type { ReceiptEntry, ReceiptFacts, ReceiptKind } from '../../storage/receipt-outbox';

/** The kind of receipt an approved transaction of this type gets. */
export function receiptKindOf(type: unknown): ReceiptKind | null {
  switch (type) {
    case 'sale':
      return 'sale';
    case 'authorize':
      return 'authorization';
    case 'credit':
      return 'credit';
    case 'refund':
      return 'refund';
    default:
      return null;
  }
}

/** Where a transaction's receipts go: its email_address, else its billing_email. */
export function receiptAddress(record: TransactionRecord): string | null {
  const to = record.email_address ?? record.billing_email;
  return typeof to === 'string' && to !== '' ? to : null;
}

/** The receipt's identity: the transaction and the kind, and for the n-th sent on request, n. */
export function receiptId(transactionId: string, kind: ReceiptKind, resend: number | null = null): string {
  return resend === null ? `${transactionId}:${kind}` : `${transactionId}:${kind}:${resend}`;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function money(value: unknown): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

/** What a receipt of `stored` says; `overrides` for a refund or void (its amount, time, auth code). */
export function receiptFacts(stored: StoredTransaction, overrides: Partial<ReceiptFacts> = {}): ReceiptFacts {
  const { record, extras } = stored;
  const paymentType = record.payment_type === 'ach' ? 'ach' : 'card';
  const name = [text(record.billing_first_name), text(record.billing_last_name)].filter((part) => part !== null).join(' ');
  return {
    at: String(record.created_at),
    amount: money(record.amount),
    currency: text(record.currency_iso_code) ?? 'USD',
    surcharge: money(record.service_fee),
    tax: money(record.tax_amount),
    shipping: money(record.shipping_amount),
    discount: money(extras.discount_amount),
    authCode: text(record.auth_code),
    paymentType,
    brand: paymentType === 'card' ? text(extras.card_brand) : null,
    // The masked account ends with the last four digits; nothing else of it is kept.
    last4: /([0-9]{4})$/.exec(String(record.masked_account ?? ''))?.[1] ?? null,
    orderId: text(record.order_id),
    poNumber: text(record.po_number),
    description: text(extras.description),
    customerName: name === '' ? null : name,
    referencedTransactionId: text(record.referenced_transaction_id),
    ...overrides,
  };
}

/** A new receipt, queued and due at `at`. */
export function queuedReceipt(input: { id: string; transactionId: string; kind: ReceiptKind; to: string; at: string; requestKey?: string | null; facts: ReceiptFacts }): ReceiptEntry {
  return {
    id: input.id,
    transactionId: input.transactionId,
    kind: input.kind,
    to: input.to,
    status: 'queued',
    attempts: 0,
    queuedAt: input.at,
    nextAttemptAt: input.at,
    sentAt: null,
    failedAt: null,
    lastError: null,
    requestKey: input.requestKey ?? null,
    facts: input.facts,
  };
}

/** The receipts a set of just-completed records asks for: approved, flagged, with an address. */
export function receiptsForRecords(records: readonly StoredTransaction[]): ReceiptEntry[] {
  const receipts: ReceiptEntry[] = [];
  for (const stored of records) {
    const { record } = stored;
    const kind = receiptKindOf(record.type);
    const to = receiptAddress(record);
    if (!stored.extras.email_receipt || record.response !== 'approved' || kind === null || to === null) continue;
    const id = String(record.id);
    receipts.push(queuedReceipt({ id: receiptId(id, kind), transactionId: id, kind, to, at: String(record.created_at), facts: receiptFacts(stored) }));
  }
  return receipts;
}

/**
 * The receipt an approved refund or void of `original` sends (its customer asked for receipts):
 * a refund's is the refund transaction's, a void's the original's. A capture sends none.
 */
export function operationReceipt(
  kind: 'capture' | 'void' | 'refund',
  original: StoredTransaction,
  result: { refund: TransactionRecord | null; amount: number; authCode: string | null; at: string },
): ReceiptEntry | null {
  const to = receiptAddress(original.record);
  if (!original.extras.email_receipt || to === null || kind === 'capture') return null;
  if (kind === 'refund') {
    if (!result.refund) return null;
    const refund: StoredTransaction = { ...original, record: result.refund };
    const id = String(result.refund.id);
    return queuedReceipt({ id: receiptId(id, 'refund'), transactionId: id, kind: 'refund', to, at: result.at, facts: receiptFacts(refund, { at: result.at }) });
  }
  const id = String(original.record.id);
  return queuedReceipt({
    id: receiptId(id, 'void'),
    transactionId: id,
    kind: 'void',
    to,
    at: result.at,
    facts: receiptFacts(original, { at: result.at, amount: result.amount, authCode: result.authCode ?? text(original.record.auth_code), referencedTransactionId: id }),
  });
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
