/**
 * `transaction_create`: FluidPay's webhook event for a transaction as it is created, for the
 * transactions of POST /api/transaction, to the endpoints that named the type (docs/webhooks.md).
 *
 * No D1 row is written per event, and there is no daily bound: the event travels in its queue
 * message, one message per subscribed endpoint, and its attempts are the queue's own retries with
 * the webhook backoff (services/webhooks/transaction-event-delivery.ts). What an endpoint keeps of
 * its events is a summary row (storage/transaction-events.ts) and the log line of each attempt.
 *
 * Published once, by the request that created the transaction, after the ledger recorded it and
 * before it answers: a replay of the request publishes nothing. If the Worker dies (or the queue
 * refuses the send) between the two, that event is not sent; from the moment it is on the queue it
 * is delivered at least once. The event id is derived from the transaction id, so every delivery of
 * it, and any duplicate the queue hands over, carries the same id.
 */
import { HALF, QUEUES } from '../../lib/platform-limits';
import { MemoryCache } from '../../lib/memory-cache';
import type { TransactionEvent, TransactionEventHealth, TransactionEventMessage, WebhookEventType } from '../../schemas/webhooks';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { listTransactionEventEndpointIds, type TransactionEventHealthRow } from '../../storage/transaction-events';

export interface TransactionEventDeps {
  db: D1Database;
  queue: Queue<TransactionEventMessage>;
}

/**
 * The bytes one message may plan on (half of Queues' 128 KB). A record is a few KB; its largest,
 * every contact column at 255 three-byte characters and mirrored in its address object, makes a
 * message of 40 KB (test/integration/transaction-events.test.ts builds it), so this never refuses one.
 */
export const TRANSACTION_EVENT_MESSAGE_BUDGET = Math.floor(QUEUES.messageBytes * HALF);
/** What one sendBatch call may carry (half of Queues' 256 KB a call, and at most 100 messages). */
const SEND_BATCH_BUDGET = Math.floor(QUEUES.bytesPerSendBatch * HALF);

/** A merchant's subscribed endpoints, per isolate for 10 s: most merchants have none, and a transaction costs no D1 read then. */
const subscribers = new MemoryCache<string[]>(10_000, 10_000);

/** Forgets what this isolate knows of a merchant's endpoints (they changed); other isolates catch up within 10 s. */
export function forgetSubscriptions(merchantId: string): void {
  subscribers.delete(merchantId);
}

/** The event for a transaction record, as FluidPay's clients decode it (their `WebhookEvent`). */
export function transactionEventFor(merchantId: string, record: TransactionRecordView): TransactionEvent {
  return {
    id: `evt_${record.id}`,
    status: 'success',
    msg: 'success',
    type: 'transaction_create',
    account_type: 'merchant',
    account_type_id: merchantId,
    transaction_id: record.id,
    action_at: record.created_at,
    data: record,
  };
}

export type PublishOutcome = { queued: number } | { queued: 0; refused: 'too_large'; bytes: number };

/** Puts the transaction's event on the queue, once for each endpoint of the merchant that takes it. */
export async function publishTransactionEvent(deps: TransactionEventDeps, merchantId: string, record: TransactionRecordView): Promise<PublishOutcome> {
  const endpoints = subscribers.get(merchantId) ?? subscribers.set(merchantId, await listTransactionEventEndpointIds(deps.db, merchantId));
  if (endpoints.length === 0) return { queued: 0 };
  const event = transactionEventFor(merchantId, record);
  const bodies: TransactionEventMessage[] = endpoints.map((endpointId) => ({ endpointId, merchantId, event }));
  // The messages differ only in their endpoint id (whe_ and 20 characters): one size for all.
  const bytes = new TextEncoder().encode(JSON.stringify(bodies[0])).byteLength;
  if (bytes > TRANSACTION_EVENT_MESSAGE_BUDGET) return { queued: 0, refused: 'too_large', bytes };
  // Packed into sendBatch calls within their byte and message limits (10 endpoints at most: 1 to 4 calls).
  const perCall = Math.max(1, Math.min(QUEUES.messagesPerSendBatch, Math.floor(SEND_BATCH_BUDGET / bytes)));
  for (let i = 0; i < bodies.length; i += perCall) {
    await deps.queue.sendBatch(bodies.slice(i, i + perCall).map((body) => ({ body, contentType: 'json' as const })));
  }
  return { queued: bodies.length };
}

/**
 * The events of many transactions (a ledger shard's sweep of abandoned claims records up to a
 * step's worth at once), packed into sendBatch calls across transactions: at most
 * ceil(messages / messages per call) calls, so a step of N transactions for E endpoints costs at
 * most N × E / 3 sends (a 40 KB message, 3 to a call) and usually a 40th of that, never a call per
 * transaction and endpoint. A record whose message is over the budget is answered, not sent.
 */
export async function publishTransactionEvents(deps: TransactionEventDeps, merchantId: string, records: readonly TransactionRecordView[]): Promise<{ queued: number; refused: string[] }> {
  if (records.length === 0) return { queued: 0, refused: [] };
  const endpoints = subscribers.get(merchantId) ?? subscribers.set(merchantId, await listTransactionEventEndpointIds(deps.db, merchantId));
  if (endpoints.length === 0) return { queued: 0, refused: [] };
  const refused: string[] = [];
  const pack: { body: TransactionEventMessage; contentType: 'json' }[] = [];
  let packBytes = 0;
  let queued = 0;
  const flush = async () => {
    if (pack.length === 0) return;
    await deps.queue.sendBatch(pack.splice(0));
    packBytes = 0;
  };
  for (const record of records) {
    const event = transactionEventFor(merchantId, record);
    for (const endpointId of endpoints) {
      const body: TransactionEventMessage = { endpointId, merchantId, event };
      const bytes = new TextEncoder().encode(JSON.stringify(body)).byteLength;
      if (bytes > TRANSACTION_EVENT_MESSAGE_BUDGET) {
        refused.push(record.id);
        break;
      }
      if (pack.length >= QUEUES.messagesPerSendBatch || packBytes + bytes > SEND_BATCH_BUDGET) await flush();
      pack.push({ body, contentType: 'json' });
      packBytes += bytes;
      queued++;
    }
  }
  await flush();
  return { queued, refused };
}

/**
 * What an endpoint shows of its transaction events (GET /api/webhooks): its summary, zeros before
 * its first attempt, and null when it does not take them.
 */
export function transactionEventHealthOf(events: readonly WebhookEventType[], row: TransactionEventHealthRow | undefined): TransactionEventHealth | null {
  if (!events.includes('transaction_create')) return null;
  return {
    last_delivered_at: row?.last_delivered_at ?? null,
    failing_since: row?.failing_since ?? null,
    failed_attempts: row?.failed_attempts ?? 0,
    abandoned_events: row?.abandoned_events ?? 0,
    last_failure:
      row?.last_failure_at && row.last_failure_error && row.last_failure_event_id && row.last_failure_transaction_id
        ? {
            at: row.last_failure_at,
            status_code: row.last_failure_status_code,
            error: row.last_failure_error,
            event_id: row.last_failure_event_id,
            transaction_id: row.last_failure_transaction_id,
          }
        : null,
    last_abandoned: row?.last_abandoned_at && row.last_abandoned_transaction_id ? { at: row.last_abandoned_at, transaction_id: row.last_abandoned_transaction_id } : null,
  };
}
