/**
 * Receipts as the API shows them (docs/receipts.md): a transaction's receipts and their state
 * (GET /api/transaction/{id}), a receipt sent again on request (POST /api/transaction/{id}/receipt),
 * a batch's receipts counted (the console's summary, the batch.completed webhook).
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { findMerchantBatch } from '../../storage/batches';
import type { ReceiptKind } from '../../storage/receipt-outbox';
import { CLAIMED_STATUS } from '../../storage/ledger-shard';
import { locateTransaction } from '../transactions/engine';
import { shardFor } from '../transactions/ledger';
import { authorizationExpiryDays, expiresBefore } from '../transactions/lifecycle-rules';
import { budgetName, receiptLimits, recipientHash, serviceSendsPerMinute } from './budget';
import { movedMoney, queuedReceipt, receiptAddress, receiptFacts, receiptId, receiptKindOf } from './facts';
import type { ReceiptStateView } from '../../schemas/receipts';
import { MAX_RECEIPTS_PER_TRANSACTION, type ReceiptState } from './shard';

export type { ReceiptStateView };

/** A receipt's state as the API answers it (snake_case, as every field of the API). */
export function receiptView(state: ReceiptState): ReceiptStateView {
  return {
    id: state.id,
    transaction_id: state.transactionId,
    kind: state.kind,
    to: state.to,
    status: state.status,
    attempts: state.attempts,
    queued_at: state.queuedAt,
    next_attempt_at: state.nextAttemptAt,
    sent_at: state.sentAt,
    failed_at: state.failedAt,
    last_error: state.lastError,
  };
}

export interface ReceiptCounts {
  queued: number;
  sent: number;
  failed: number;
}

/** Where a located transaction's receipts are: its page (a batch row's by floor), and rows under its own id. */
function receiptPages(id: string, query: { exact: string[]; floor: string[] }): { exact: string[]; floor: string[] } {
  return { exact: [...query.exact, id], floor: query.floor };
}

/** A merchant's transaction's receipts, oldest first; [] for an unknown or archived transaction. */
export async function transactionReceipts(env: Env, merchantId: string, id: string, clock: Clock): Promise<ReceiptStateView[]> {
  const located = await locateTransaction(env, merchantId, id, clock());
  if (!located.ok) return [];
  const states = await located.shard.stub.receiptStates(located.shard.identity, [id], receiptPages(id, located.query));
  return states.map(receiptView);
}

export type ResendResult =
  | { ok: true; receipt: ReceiptStateView; replayed: boolean }
  | { ok: false; reason: 'not_found' | 'archived' | 'no_receipt' | 'no_address' | 'limit'; message: string };

/**
 * Queues the transaction's receipt again, to `to` or to its own address: what it says is the
 * transaction as it is now (a voided one sends a void receipt). Only approved transactions have
 * receipts. The same Idempotency-Key answers the receipt it queued the first time.
 */
export async function resendReceipt(
  env: Env,
  merchantId: string,
  id: string,
  request: { to: string | null; requestKey: string | null },
  clock: Clock,
): Promise<ResendResult> {
  const now = clock();
  const located = await locateTransaction(env, merchantId, id, now);
  if (!located.ok) {
    return located.reason === 'archived'
      ? { ok: false, reason: 'archived', message: `transaction archived: ${located.archive}` }
      : { ok: false, reason: 'not_found', message: 'transaction not found' };
  }
  const { shard, query } = located;
  const current = { expiredBefore: expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS)) };
  const stored = (await shard.stub.find(shard.identity, { ...query, current })).find((s) => s.record.id === id);
  if (!stored || stored.record.status === CLAIMED_STATUS) return { ok: false, reason: 'not_found', message: 'transaction not found' };
  const { record } = stored;
  const kind: ReceiptKind | null = record.status === 'voided' ? 'void' : receiptKindOf(record.type);
  if (record.response !== 'approved' || kind === null) {
    return { ok: false, reason: 'no_receipt', message: `transaction is ${String(record.status)}: only an approved transaction has a receipt` };
  }
  if (!movedMoney(record)) {
    return { ok: false, reason: 'no_receipt', message: `transaction ${String(record.id)} moved no money (amount 0): it has no receipt` };
  }
  const to = request.to ?? receiptAddress(record);
  if (to === null) {
    return { ok: false, reason: 'no_address', message: 'the transaction has no email_address or billing_email: give `email`' };
  }
  const at = isoTimestamp(now);
  // An address that has had its receipts from the merchant today is told now, not by a failed receipt later.
  const perRecipient = (await receiptLimits(env.DB, merchantId, serviceSendsPerMinute(env.RECEIPT_SENDS_PER_MINUTE))).per_recipient;
  const got = await env.RECEIPT_BUDGET.getByName(budgetName(merchantId, at)).recipient(await recipientHash(to));
  const refusal = got >= perRecipient ? `this address has had ${got} receipts from the merchant today, the most allowed (receipt_limits.per_recipient ${perRecipient}): try tomorrow` : null;
  const facts = receiptFacts(stored, kind === 'void' ? { referencedTransactionId: id } : {});
  const entry = queuedReceipt({ id: receiptId(id, kind), transactionId: id, kind, to, at, requestKey: request.requestKey, facts });
  // The refusal applies to a new receipt only: the same Idempotency-Key still answers the one it queued.
  const outcome = await shard.stub.queueResend(shard.identity, entry, receiptPages(id, query), refusal);
  if (outcome.outcome === 'refused') return { ok: false, reason: 'limit', message: outcome.message };
  if (outcome.outcome === 'limit') {
    return { ok: false, reason: 'limit', message: `this transaction has had ${outcome.count} receipts, the most one may have (${MAX_RECEIPTS_PER_TRANSACTION})` };
  }
  return { ok: true, receipt: receiptView(outcome.receipt), replayed: outcome.outcome === 'replayed' };
}

/** A batch's receipts by state, from its ledger shard (one shard holds one batch's rows). */
export function batchReceiptCounts(env: Env, merchantId: string, batch: { id: string; created_at: string }): Promise<ReceiptCounts> {
  const shard = shardFor(env, { kind: 'batch', merchantId, batchId: batch.id }, batch.created_at);
  return shard.stub.receiptCounts(shard.identity);
}

/** The same, for a merchant's batch by id; null for an unknown batch. */
export async function merchantBatchReceiptCounts(env: Env, merchantId: string, batchId: string): Promise<ReceiptCounts | null> {
  const batch = await findMerchantBatch(env.DB, merchantId, batchId);
  return batch ? batchReceiptCounts(env, merchantId, batch) : null;
}
