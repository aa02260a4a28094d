/**
 * Billing a merchant's subscriptions due on or before a day, in bounded steps.
 *
 * Each step leases a page of due subscriptions (storage/recurring-subscriptions.ts, claimDue:
 * one UPDATE … RETURNING over the (merchant_id, next_bill_date, id) index, LIMIT BILL_PAGE) and
 * charges the page in one call of the transaction engine, the same as an API sale (processor,
 * surcharge, ledger, search, settlement, receipts), each record carrying its subscription_id. The
 * step stops after `maxCharges` attempts; what is left is the next step's (the admin call answers
 * `finished: false`, the hourly run goes on in its next hour).
 *
 * A cycle is charged at most once: the charge's idempotency key names the subscription, the cycle's
 * bill date and the attempt (`recurring:{id}:{cycle}:{attempt}`), so a run restarted after a crash,
 * or two runs at once, are answered the recorded charge by the ledger rather than charging again;
 * the outcome is written only while the subscription is still in the state the attempt began from.
 * The ledger remembers a key for its idempotency window (a day); the lease (LEASE_MS) lapses within
 * minutes and the hourly run retries a leased subscription well within it.
 */
import type { Caller, Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { BillResult, LastDecline } from '../../schemas/recurring';
import type { TransactionOutcome, TransactionRequest } from '../../schemas/transaction-columns';
import { findMerchant } from '../../storage/merchants';
import { readApiShards } from '../../storage/api-shards';
import { shardsOn, type ApiShardSchedule } from '../transactions/api-shards';
import { WORKERS } from '../../lib/platform-limits';
import { claimDue, merchantsWithDue, recordBillingStatement, type BillingChanges, type SubscriptionRecord } from '../../storage/recurring-subscriptions';
import { processTransactions } from '../recorded';
import { recordView } from '../fluidpay/record';
import { publishTransactionEvent } from '../webhooks/transaction-events';
import { billingAmount } from './amounts';
import { addDays, nextBillDateAfter, utcDay } from './calendar';
import { isNeverRetry, retryDate } from './declines';
import { scheduleOf } from './subscriptions';
import { DEFAULT_RATE_TIER, TIER_PERIOD_SECONDS, TRANSACTION_TIER_LIMITS, type RateTier } from '../limits/rate-tiers';

/**
 * Subscriptions charged in one engine call. The engine's own work per call is bounded (one ledger
 * lookup and claim per shard, one processor call per charge), so a page of 50 costs about 60
 * subrequests with its webhook sends; a step of BILL_STEP_CHARGES stays under half of the 1,000
 * subrequests planned per invocation (src/lib/platform-limits.ts, WORKERS.subrequestsPlanned).
 */
export const BILL_PAGE = 50;
export const BILL_STEP_CHARGES = 300;
/**
 * A page's subrequests grow with the merchant's API sub-shards of the day (the ledger looks a key
 * up, claims and completes it in its sub-shard, so a page of 50 keys spread over 8 sub-shards makes
 * about 6 more calls for each sub-shard: about 96 at 8, against about 60 at 1). A step takes as many
 * whole pages as keep it under half of the planned subrequests: 300 charges at 1 or 2 sub-shards,
 * 250 at 8.
 */
const PAGE_SUBREQUESTS_BASE = 48;
const PAGE_SUBREQUESTS_PER_SUB_SHARD = 6;
const STEP_SUBREQUESTS = WORKERS.subrequestsPlanned / 2;

export function billStepCharges(subShards: number): number {
  const pages = Math.max(1, Math.floor(STEP_SUBREQUESTS / (PAGE_SUBREQUESTS_BASE + PAGE_SUBREQUESTS_PER_SUB_SHARD * subShards)));
  return Math.min(BILL_STEP_CHARGES, pages * BILL_PAGE);
}
/** How long a run holds the subscriptions it leased: longer than a page takes, short enough that a crashed run's page is billed again within the hour. */
export const LEASE_MS = 5 * 60_000;

/**
 * Charges a second a merchant's billing may make: half of what its rate tier lets its API send
 * (standard 25, high 125, max 500), so a billing day shares the merchant's ledger, processor and
 * settlement with its API traffic without taking more than that traffic is allowed. One billing
 * object's steps run one after another, so the pace is also bounded by how fast a step goes
 * (docs/capacity.md, "Recurring billing").
 */
export function billingPacePerSecond(tier: RateTier | null): number {
  return (TRANSACTION_TIER_LIMITS[tier ?? DEFAULT_RATE_TIER] / TIER_PERIOD_SECONDS) * 0.5;
}

/** When the next step may start: after the step's attempts at the merchant's pace, counted from when it began, and never before now. */
export function nextStepAt(startedAt: number, now: number, result: Pick<BillResult, 'charged' | 'declined' | 'skipped'>, tier: RateTier | null): number {
  const attempts = result.charged + result.declined + result.skipped;
  return Math.max(now, startedAt + Math.ceil((attempts / billingPacePerSecond(tier)) * 1000));
}

export function billingKey(subscription: Pick<SubscriptionRecord, 'id' | 'cycle_date' | 'retries'>): string {
  return `recurring:${subscription.id}:${subscription.cycle_date}:${subscription.retries}`;
}

/** `apiShards`: the merchant's sub-shard schedule, read from D1 as an API key's caller carries it (the ledger places keys by it). */
function callerOf(merchant: { id: string; name: string; enhanced_bin_lookup: boolean; surcharge_rate_bps: number; max_credit_amount: number }, apiShards?: ApiShardSchedule): Caller {
  return {
    ...(apiShards ? { apiShards } : {}),
    merchantId: merchant.id,
    merchantName: merchant.name,
    // No API key made these charges: the billing run did.
    keyId: 'recurring',
    keyType: 'secret',
    enhancedBinLookup: merchant.enhanced_bin_lookup,
    surchargeRateBps: merchant.surcharge_rate_bps,
    maxCreditAmount: merchant.max_credit_amount,
  };
}

/**
 * Bills what is due on or before `day` (a UTC day), at most `maxCharges` attempts in this step, in
 * pages of at most `page` (leased, charged and recorded one page at a time: a step's memory and
 * each D1 answer hold one page, whatever is due). Null when there is no such merchant.
 */
export async function billDue(env: Env, merchantId: string, day: string, clock: Clock, stepCharges?: number, page = BILL_PAGE): Promise<BillResult | null> {
  const merchant = await findMerchant(env.DB, merchantId);
  if (!merchant) return null;
  const apiShards = await readApiShards(env.DB, merchantId);
  const caller = callerOf(merchant, apiShards);
  const maxCharges = stepCharges ?? billStepCharges(shardsOn(apiShards, utcDay(clock())));
  const result: BillResult = { date: day, charged: 0, declined: 0, skipped: 0, completed: 0, finished: false };
  let attempted = 0;
  while (attempted < maxCharges) {
    const now = clock();
    const leased = await claimDue(env.DB, merchantId, day, isoTimestamp(now), isoTimestamp(new Date(now.getTime() + LEASE_MS)), Math.min(page, maxCharges - attempted));
    if (leased.length === 0) {
      result.finished = true;
      break;
    }
    attempted += leased.length;
    await billPage(env, caller, leased, day, clock, result);
  }
  return result;
}

async function billPage(env: Env, caller: Caller, page: SubscriptionRecord[], day: string, clock: Clock, result: BillResult): Promise<void> {
  const charged: { subscription: SubscriptionRecord; request: TransactionRequest }[] = [];
  const writes: D1PreparedStatement[] = [];
  const updatedAt = isoTimestamp(clock());
  for (const subscription of page) {
    const amount = billingAmount(subscription.amount, subscription.add_ons, subscription.discounts, subscription.billings);
    if (amount.total === 0) {
      // Nothing to charge this cycle (discounted to zero): the cycle counts, no transaction is made.
      writes.push(recordBillingStatement(env.DB, caller.merchantId, subscription.id, subscription, approvedChanges(subscription, day, null, updatedAt)));
      result.skipped++;
      continue;
    }
    const input: TransactionRequest['input'] = {
      transaction_type: 'sale',
      customer_id: subscription.customer_id,
      payment_method_id: subscription.payment_method_id,
      payment_method_type: subscription.payment_method_type,
      base_amount: String(amount.total),
    };
    if (subscription.tax_amount > 0) input.tax_amount = String(subscription.tax_amount);
    if (subscription.tax_exempt) input.tax_exempt = 'true';
    if (subscription.po_number !== '') input.po_number = subscription.po_number;
    if (subscription.description !== '') input.description = subscription.description.slice(0, 100);
    charged.push({ subscription, request: { input, idempotencyKey: billingKey(subscription), subscriptionId: subscription.id } });
  }
  const outcomes =
    charged.length === 0 ? [] : await processTransactions(env, caller, charged.map((entry) => entry.request), { source: 'api', ipAddress: null }, clock);
  const announced: Promise<unknown>[] = [];
  charged.forEach(({ subscription }, index) => {
    const outcome = outcomes[index] as TransactionOutcome;
    const changes = outcomeChanges(subscription, outcome, day, updatedAt, result);
    if (changes) writes.push(recordBillingStatement(env.DB, caller.merchantId, subscription.id, subscription, changes));
    if (outcome.ok && !outcome.replayed) announced.push(announce(env, caller.merchantId, outcome.record));
  });
  if (writes.length > 0) await env.DB.batch(writes);
  await Promise.all(announced);
}

/** The billing state after an outcome (counted in `result`); null: leave it leased, the next run asks again. */
function outcomeChanges(subscription: SubscriptionRecord, outcome: TransactionOutcome, day: string, updatedAt: string, result: BillResult): BillingChanges | null {
  if (!outcome.ok) {
    if (outcome.reason !== 'invalid') {
      // Another run holds the key (in progress), or the key was used for a different charge.
      result.skipped++;
      return null;
    }
    // The charge cannot be made (a deleted card, a card refused before the processor): needs attention.
    result.skipped++;
    const msg = outcome.errors.map((error) => `${error.field}: ${error.msg}`).join('; ').slice(0, 500);
    const decline: LastDecline = { transaction_id: '', date: day, response_code: null, processor_response_code: null, processor_response_text: msg, never_retry: false };
    return { ...unchanged(subscription), status: 'error', last_decline: decline, updated_at: updatedAt };
  }
  const { record } = outcome;
  if (record.response === 'approved') {
    result.charged++;
    const changes = approvedChanges(subscription, day, String(record.id), updatedAt);
    if (changes.status === 'completed') result.completed++;
    return changes;
  }
  result.declined++;
  const neverRetry = isNeverRetry(record);
  const retries = subscription.retries + 1;
  const retryOn = neverRetry ? null : retryDate(subscription.cycle_date, retries);
  const decline: LastDecline = {
    transaction_id: String(record.id),
    date: day,
    response_code: record.response_code === null ? null : Number(record.response_code),
    processor_response_code: record.processor_response_code === null ? null : String(record.processor_response_code),
    processor_response_text: record.processor_response_text === null ? null : String(record.processor_response_text),
    never_retry: neverRetry,
  };
  return {
    ...unchanged(subscription),
    status: retryOn === null ? 'failed' : 'failing',
    // Never twice on one billing day: a run billing a late cycle does not retry it at once.
    next_bill_date: retryOn === null ? subscription.next_bill_date : retryOn > day ? retryOn : addDays(day, 1),
    retries,
    last_transaction_id: String(record.id),
    last_decline: decline,
    updated_at: updatedAt,
  };
}

function unchanged(subscription: SubscriptionRecord): BillingChanges {
  const { status, cycle_date, next_bill_date, billings, retries, last_transaction_id, last_decline, updated_at } = subscription;
  return { status, cycle_date, next_bill_date, billings, retries, last_transaction_id, last_decline, updated_at };
}

/** An approved (or zero) billing: the cycle counts; the next begins on the schedule's next day after both the cycle and the billing day, or the subscription is completed. */
function approvedChanges(subscription: SubscriptionRecord, day: string, transactionId: string | null, updatedAt: string): BillingChanges {
  const billings = subscription.billings + 1;
  const done = subscription.duration > 0 && billings >= subscription.duration;
  const next = nextBillDateAfter(scheduleOf(subscription), subscription.cycle_date, day);
  return {
    status: done ? 'completed' : 'active',
    cycle_date: done ? subscription.cycle_date : next,
    next_bill_date: done ? '' : next,
    billings,
    retries: 0,
    last_transaction_id: transactionId ?? subscription.last_transaction_id,
    last_decline: null,
    updated_at: updatedAt,
  };
}

/** A webhook event per billing: transaction_create, as an API sale announces (docs/webhooks.md). */
async function announce(env: Env, merchantId: string, record: Extract<TransactionOutcome, { ok: true }>['record']): Promise<void> {
  try {
    await publishTransactionEvent({ db: env.DB, queue: env.TRANSACTION_EVENT_QUEUE }, merchantId, recordView(record, 0, merchantId));
  } catch (err) {
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_not_queued', merchant_id: merchantId, transaction_id: record.id, reason: err instanceof Error ? err.message.slice(0, 200) : 'unknown' }));
  }
}

/** The billing object of a merchant (durable-objects/recurring-billing.ts). */
export function recurringBillingName(merchantId: string): string {
  return `recurring:${merchantId}`;
}

/** Hands the rest of a merchant's billing of `day` to its billing object, which goes on in alarm ticks. */
export async function continueBilling(env: Pick<Env, 'RECURRING_BILLING'>, merchantId: string, day: string): Promise<void> {
  await env.RECURRING_BILLING.getByName(recurringBillingName(merchantId)).start(merchantId, day);
}

/**
 * The hourly run's job: each merchant with something due today (or before) gets its billing object
 * started; the objects bill in their own alarm ticks, so this job costs one D1 query and one object
 * call per merchant, at most `maxStatements` in all (services/maintenance.ts). Merchants beyond
 * that are started by the next hour's run.
 */
export async function startDueBilling(env: Env, clock: Clock, maxStatements: number): Promise<{ finished: boolean; merchants: number }> {
  const limit = Math.max(0, maxStatements - 1);
  const merchants = await merchantsWithDue(env.DB, utcDay(clock()), limit + 1);
  const started = merchants.slice(0, limit);
  for (const merchantId of started) await continueBilling(env, merchantId, utcDay(clock()));
  return { finished: merchants.length <= limit, merchants: started.length };
}
