/**
 * `transaction_create`: FluidPay's webhook event for a transaction as it is created, for the
 * transactions of POST /api/transaction only, and only to endpoints that named the type.
 *
 * Bounded, since D1 keeps no row per transaction (docs/capacity.md): a merchant with no
 * subscribed endpoint costs no row and no queue message (and, within one isolate, no D1 read
 * for 10 seconds after the last check); one that subscribed gets at most
 * TRANSACTION_EVENTS_PER_DAY events a UTC day, then none until the next day (its transactions
 * stay readable with GET /api/transaction/{id}; a batch's rows are announced by batch.completed).
 * The event is recorded once per transaction, also when a replay of the request publishes again.
 */
import { randomId } from '../../lib/crypto';
import { MemoryCache } from '../../lib/memory-cache';
import { isoTimestamp } from '../../lib/time';
import type { TransactionEvent } from '../../schemas/webhooks';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { markEnqueued } from '../../storage/webhooks';
import { hasTransactionSubscribers, recordTransactionEvent } from '../../storage/transaction-events';
import type { EventDeps } from './events';

/** At most this many transaction_create events a merchant a UTC day: ~3 KB each, 30 days of them stay in D1. */
export const TRANSACTION_EVENTS_PER_DAY = 1_000;

/** Queues accept at most 100 messages per sendBatch call (an event has at most 10 deliveries, one per endpoint). */
const SEND_BATCH_MAX = 100;

/** Whether a merchant has a subscribed endpoint, per isolate for 10 s: most merchants have none. */
const subscribers = new MemoryCache<boolean>(10_000, 10_000);

/** Forgets what this isolate knows of a merchant's subscriptions (its endpoints changed). */
export function forgetSubscriptions(merchantId: string): void {
  subscribers.delete(merchantId);
}

export async function publishTransactionEvent(deps: EventDeps, merchantId: string, record: TransactionRecordView): Promise<{ queued: number; outcome: 'none' | 'recorded' | 'exists' | 'over_bound' }> {
  let subscribed = subscribers.get(merchantId);
  if (subscribed === undefined) subscribed = subscribers.set(merchantId, await hasTransactionSubscribers(deps.db, merchantId));
  if (!subscribed) return { queued: 0, outcome: 'none' };
  const now = deps.clock();
  const event: TransactionEvent = {
    id: randomId(24, 'evt_'),
    status: 'success',
    msg: 'success',
    type: 'transaction_create',
    account_type: 'merchant',
    account_type_id: merchantId,
    transaction_id: record.id,
    action_at: record.created_at,
    data: record,
  };
  const recorded = await recordTransactionEvent(
    deps.db,
    { id: event.id, merchantId, transactionId: record.id, payload: JSON.stringify(event), createdAt: isoTimestamp(now) },
    `${isoTimestamp(now).slice(0, 10)}T00:00:00.000Z`,
    TRANSACTION_EVENTS_PER_DAY,
  );
  if (recorded.outcome === 'over_bound') {
    console.warn(JSON.stringify({ level: 'warn', event: 'transaction_event_bound', merchant_id: merchantId, per_day: TRANSACTION_EVENTS_PER_DAY }));
    return { queued: 0, outcome: 'over_bound' };
  }
  const ids = recorded.outcome === 'recorded' ? recorded.deliveries : recorded.unsent;
  for (let i = 0; i < ids.length; i += SEND_BATCH_MAX) {
    const page = ids.slice(i, i + SEND_BATCH_MAX);
    await deps.queue.sendBatch(page.map((deliveryId) => ({ body: { deliveryId, attempt: 1 }, contentType: 'json' as const })));
    await markEnqueued(deps.db, page, isoTimestamp(now));
  }
  return { queued: ids.length, outcome: recorded.outcome };
}
