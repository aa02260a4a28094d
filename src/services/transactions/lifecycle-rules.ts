/**
 * A transaction's life after it was processed (docs/transactions.md, "Lifecycle"), as pure rules:
 * what a record looks like now, which operation its status allows and for how much, and what an
 * approved operation changes. The ledger shard applies them in one synchronous step, so two
 * operations on one transaction never interleave.
 *
 *   authorize ─approved─> authorized ──capture──> pending_settlement ──cutoff──> settled ──refund──> partially_refunded / refunded
 *                              │  └──void──> voided        │ (sale, credit, refund start here)
 *                              └──AUTHORIZATION_EXPIRY_DAYS──> expired     └──void──> voided
 */
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { OperationKind } from '../../storage/ledger-shard';
import type { ChargeResult } from './processors/processor';

const DAY_MS = 86_400_000;

/** Days an authorization may wait for its capture (AUTHORIZATION_EXPIRY_DAYS, default 7, as Visa and Stripe). */
export function authorizationExpiryDays(value: string | undefined): number {
  const days = Number(value);
  return Number.isFinite(days) && days > 0 ? days : 7;
}

/** Authorizations created before this instant have expired at `now`. */
export function expiresBefore(now: Date, days: number): string {
  return new Date(now.getTime() - days * DAY_MS).toISOString();
}

/** The settlement batch of a merchant's processor for one day: the id names both (processor ids are the merchant's own). */
export function settlementBatchId(processorId: string, batchDate: string): string {
  return `stl_${batchDate.replaceAll('-', '')}_${processorId}`;
}

/** A record as it is at `now`: settled by its page's settlement, expired past its authorization's life. */
export function presentRecord(
  record: TransactionRecord,
  pageSettlement: { settledOn: string | null; settledAt: string | null } | null,
  expiredBefore: string | null,
): TransactionRecord {
  let current = record;
  if (pageSettlement?.settledOn && current.status === 'pending_settlement') {
    current = settle(current, pageSettlement.settledOn, String(pageSettlement.settledAt));
  }
  if (expiredBefore !== null && current.status === 'authorized' && String(current.created_at) < expiredBefore) {
    current = { ...current, status: 'expired' };
  }
  return current;
}

/**
 * A pending_settlement record settled in its processor's batch of `batchDate`. One that moved no
 * money (captured 0: only a record made before zero-amount captures were refused) names no batch:
 * a batch lists money, so it may never have been made, and a record never points at a batch that
 * does not exist.
 */
export function settle(record: TransactionRecord, batchDate: string, settledAt: string): TransactionRecord {
  const amount = Number(record.amount_captured);
  return {
    ...record,
    status: 'settled',
    settled_at: settledAt,
    amount_settled: amount,
    settlement_batch_id: amount > 0 ? settlementBatchId(String(record.processor_id), batchDate) : null,
  };
}

/** An operation the record's state refuses: 409 (status) or 400 (amount), with a message naming the rule. */
export type OperationRefusal = { reason: 'wrong_state'; message: string } | { reason: 'amount'; message: string };

const ALLOWS: Record<OperationKind, string> = {
  capture: 'capture is allowed only while authorized',
  void: 'void is allowed only while authorized or pending_settlement',
  refund: 'refund is allowed only once settled (settled or partially_refunded)',
};

/** The amount an operation moves, or why it cannot run on `record` now. */
export function checkOperation(
  kind: OperationKind,
  record: TransactionRecord,
  amountRefunded: number,
  requested: number | null,
): { ok: true; amount: number } | ({ ok: false } & OperationRefusal) {
  const status = String(record.status);
  const type = String(record.type);
  const wrong = (message: string) => ({ ok: false as const, reason: 'wrong_state' as const, message });
  switch (kind) {
    case 'capture': {
      if (status !== 'authorized') return wrong(`transaction is ${status}: ${ALLOWS.capture}`);
      const limit = Number(record.amount_authorized);
      // An authorization of 0 is an account check: it moves no money, so there is nothing to capture
      // (a capture of 0 would settle into a batch that lists nothing).
      if (limit === 0) return wrong('transaction is a zero-amount authorization (an account check): it moves no money and cannot be captured; void it or let it expire');
      const amount = requested ?? limit;
      if (amount > limit) return { ok: false, reason: 'amount', message: `amount must be at most ${limit}, the amount_authorized` };
      return { ok: true, amount };
    }
    case 'void': {
      if (type === 'refund') return wrong(`transaction is a refund (${status}): void is allowed only for a sale, authorize or credit`);
      if (status !== 'authorized' && status !== 'pending_settlement') return wrong(`transaction is ${status}: ${ALLOWS.void}`);
      return { ok: true, amount: Number(status === 'authorized' ? record.amount_authorized : record.amount_captured) };
    }
    case 'refund': {
      if (type !== 'sale' && type !== 'authorize') return wrong(`transaction is a ${type} (${status}): refund is allowed only for a settled sale or capture`);
      if (status !== 'settled' && status !== 'partially_refunded') return wrong(`transaction is ${status}: ${ALLOWS.refund}`);
      const left = Number(record.amount_settled) - amountRefunded;
      // Nothing settled is nothing to refund (a refund of 0 moves no money).
      if (left <= 0) return wrong(`transaction is ${status} with nothing left to refund (amount_settled ${Number(record.amount_settled)}, amount_refunded ${amountRefunded})`);
      const amount = requested ?? left;
      if (amount > left) return { ok: false, reason: 'amount', message: `amount must be at most ${left}, what is left to refund of amount_settled ${Number(record.amount_settled)}` };
      return { ok: true, amount };
    }
  }
}

/** What an approved operation makes of the original, and the refund it creates. */
export interface Applied {
  original: TransactionRecord;
  amountRefunded: number;
  unsettled: boolean;
  refund: TransactionRecord | null;
}

export function applyOperation(
  kind: OperationKind,
  record: TransactionRecord,
  amountRefunded: number,
  amount: number,
  result: ChargeResult,
  meta: { now: string; refundId: string | null; idempotencyKey: string; ipAddress: string | null },
): Applied {
  const approved = result.response === 'approved';
  if (kind === 'refund') {
    const refund: TransactionRecord = {
      ...record,
      id: meta.refundId,
      idempotency_key: meta.idempotencyKey,
      type: 'refund',
      transaction_source: 'api',
      ip_address: meta.ipAddress,
      amount,
      amount_authorized: approved ? amount : 0,
      amount_captured: approved ? amount : 0,
      amount_settled: 0,
      tip: 0,
      service_fee: 0,
      tax_amount: 0,
      shipping_amount: 0,
      settlement_batch_id: null,
      referenced_transaction_id: record.id,
      response: result.response,
      response_code: result.responseCode,
      status: approved ? 'pending_settlement' : result.response === 'declined' ? 'declined' : 'failed',
      created_at: meta.now,
      captured_at: approved ? meta.now : null,
      settled_at: null,
      auth_code: result.authCode,
      processor_response_code: result.processorResponseCode,
      processor_response_text: result.processorResponseText,
      avs_response_code: null,
      cvv_response_code: null,
    };
    if (!approved) return { original: record, amountRefunded, unsettled: false, refund };
    const refunded = amountRefunded + amount;
    const status = refunded >= Number(record.amount_settled) ? 'refunded' : 'partially_refunded';
    return { original: { ...record, status }, amountRefunded: refunded, unsettled: false, refund };
  }
  if (!approved) return { original: record, amountRefunded, unsettled: record.status === 'pending_settlement', refund: null };
  if (kind === 'capture') {
    return {
      original: { ...record, status: 'pending_settlement', amount_captured: amount, captured_at: meta.now },
      amountRefunded,
      unsettled: true,
      refund: null,
    };
  }
  return { original: { ...record, status: 'voided' }, amountRefunded, unsettled: false, refund: null };
}
