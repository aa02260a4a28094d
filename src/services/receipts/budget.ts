/**
 * Receipt budgets (docs/receipts.md, "Budgets"): what one merchant may send, so that receipts cannot
 * be used as a mail relay and no merchant fills the service's pace. Three limits, each settable per
 * merchant through the admin API (`receipt_limits`), NULL meaning the default:
 *
 *   daily          receipts a UTC day (default DEFAULT_DAILY)
 *   per_minute     receipts a UTC minute: its share of RECEIPT_SENDS_PER_MINUTE (default a quarter)
 *   per_recipient  receipts one address gets from the merchant in a UTC day (default DEFAULT_PER_RECIPIENT)
 *
 * They are counted when a receipt is about to be sent (resends included: they go through the same
 * outbox), in the merchant's ReceiptBudget object of the day, which a ledger shard's run asks once.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { BudgetLimits, RecipientHash } from '../../storage/receipt-budget';
import { findReceiptLimits, upsertReceiptLimits, type StoredReceiptLimits } from '../../storage/receipt-limits';

/** Receipts a merchant sends in a UTC day unless the operator sets more: a busy shop's day, far from a relay's. */
export const DEFAULT_DAILY = 10_000;
/** Receipts one address gets from one merchant in a UTC day: the most a transaction may have (resends included). */
export const DEFAULT_PER_RECIPIENT = 10;
/** A merchant's default share of the service's pace: a quarter, so it never fills a minute alone. */
export const DEFAULT_MINUTE_SHARE = 0.25;
/** The highest daily budget the admin API takes: the design point of one merchant, 10 million transactions a day. */
export const MAX_DAILY = 10_000_000;

/** Objects the service-wide pace is split over (ReceiptPace `pace/0` … `pace/3`); each grants its share. */
export const PACE_SHARDS = 4;

export interface ReceiptLimitsView {
  daily: number;
  per_minute: number;
  per_recipient: number;
}

/** The limits in force: the stored ones, the defaults for the rest. */
export function effectiveLimits(stored: StoredReceiptLimits, serviceSendsPerMinute: number): ReceiptLimitsView {
  return {
    daily: stored.daily ?? DEFAULT_DAILY,
    per_minute: stored.per_minute ?? Math.max(1, Math.floor(serviceSendsPerMinute * DEFAULT_MINUTE_SHARE)),
    per_recipient: stored.per_recipient ?? DEFAULT_PER_RECIPIENT,
  };
}

export function budgetLimits(view: ReceiptLimitsView): BudgetLimits {
  return { daily: view.daily, perMinute: view.per_minute, perRecipient: view.per_recipient };
}

/** A recipient as the budget counts it: the first 8 bytes of the SHA-256 of its address in lower case. */
export async function recipientHash(address: string): Promise<RecipientHash> {
  const digest = new DataView(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(address.trim().toLowerCase())));
  return [digest.getUint32(0), digest.getUint32(4)];
}

/** The merchant's budget object of the UTC day of `now`. */
export function budgetName(merchantId: string, now: string): string {
  return `${merchantId}/${now.slice(0, 10)}`;
}

export async function receiptLimits(db: D1Database, merchantId: string, serviceSendsPerMinute: number): Promise<ReceiptLimitsView> {
  return effectiveLimits(await findReceiptLimits(db, merchantId), serviceSendsPerMinute);
}

/** Applies the fields given (null: back to the default) and answers the limits now in force. */
export async function setReceiptLimits(
  db: D1Database,
  merchantId: string,
  changes: Partial<StoredReceiptLimits>,
  serviceSendsPerMinute: number,
  clock: Clock,
): Promise<ReceiptLimitsView> {
  await upsertReceiptLimits(db, merchantId, changes, isoTimestamp(clock()));
  return receiptLimits(db, merchantId, serviceSendsPerMinute);
}

/** The admin API's `receipt_limits`: set the fields given (when any), and answer the limits in force. */
export function merchantReceiptLimits(
  env: Pick<Env, 'DB' | 'RECEIPT_SENDS_PER_MINUTE'>,
  merchantId: string,
  changes: Partial<StoredReceiptLimits> | undefined,
  clock: Clock,
): Promise<ReceiptLimitsView> {
  const perMinute = serviceSendsPerMinute(env.RECEIPT_SENDS_PER_MINUTE);
  return changes === undefined ? receiptLimits(env.DB, merchantId, perMinute) : setReceiptLimits(env.DB, merchantId, changes, perMinute, clock);
}

/** RECEIPT_SENDS_PER_MINUTE, 600 when unset or malformed. */
export function serviceSendsPerMinute(value: string | undefined): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : 600;
}
