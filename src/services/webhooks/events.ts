/**
 * Batch events: `batch.completed` and `batch.failed`, announced once per transition. Publishing
 * records the event (its exact JSON body) and one delivery per subscribed endpoint in one D1
 * transaction, then puts each delivery's first attempt on WEBHOOK_QUEUE; nothing is sent from
 * here (the queue consumer makes the requests, services/webhooks/delivery.ts).
 *
 * Safe to call again for the same batch and type (the transition's effects are re-run when a late
 * call reaches an ended batch): the event is found, no new delivery is made, and only deliveries
 * whose first message never made it onto the queue are sent. An endpoint gets the transitions
 * that happen after it was created, so a re-run never reaches an endpoint made since.
 */
import type { Env } from '../../env';
import { randomId } from '../../lib/crypto';
import { isoTimestamp, systemClock, type Clock } from '../../lib/time';
import type { WebhookDeliveryMessage, WebhookEvent, WebhookEventType } from '../../schemas/webhooks';
import { findBatchWithCaller } from '../../storage/batches';
import { insertEventWithDeliveries, markEnqueued, readEventState, type EventState } from '../../storage/webhooks';
import { toRecord, type BatchRecord } from '../batches/records';
import type { BatchSnapshot } from '../batches/state';
import { batchReceiptCounts, type ReceiptCounts } from '../receipts/receipts';

export interface EventDeps {
  db: D1Database;
  queue: Queue<WebhookDeliveryMessage>;
  clock: Clock;
  /** A batch's receipts by state, for its batch.completed and batch.failed events. */
  receiptCounts?: (merchantId: string, batch: { id: string; created_at: string }) => Promise<ReceiptCounts>;
}

export function eventDeps(env: Env, clock: Clock = systemClock): EventDeps {
  return { db: env.DB, queue: env.WEBHOOK_QUEUE, clock, receiptCounts: (merchantId, batch) => batchReceiptCounts(env, merchantId, batch) };
}

/** Queues accept at most 100 messages per sendBatch call. */
const SEND_BATCH_MAX = 100;

/**
 * Announces a transition of `record` (the batch record as GET /api/filebatch/{id} answers it; its
 * `updated_at` is when the transition happened). Answers whether this call recorded the event
 * and how many first attempts it queued.
 */
export async function publishBatchEvent(
  deps: EventDeps,
  type: WebhookEventType,
  record: BatchRecord,
): Promise<{ recorded: boolean; queued: number }> {
  return publish(deps, type, record, await readEventState(deps.db, record.id, type, record.updated_at));
}

/**
 * The entry point for a batch that has ended: its event, with the record built from the D1 row
 * and the object's final state. No effect for a batch still running. When there is nothing to
 * do (no endpoint wants the event, or it was recorded and queued before) this costs one D1
 * round trip: it runs whenever a late call reaches an ended batch.
 */
export async function publishBatchEnded(deps: EventDeps, batch: BatchSnapshot): Promise<void> {
  if (batch.status !== 'completed' && batch.status !== 'failed') return;
  const type = batch.status === 'completed' ? 'batch.completed' : 'batch.failed';
  const state = await readEventState(deps.db, batch.batchId, type, batch.updatedAt);
  if (state.unsent.length === 0 && (state.recorded || state.subscribers === 0)) return;
  const found = await findBatchWithCaller(deps.db, batch.batchId);
  if (!found) {
    console.error(JSON.stringify({ level: 'error', event: 'webhook_batch_missing', batch_id: batch.batchId }));
    return;
  }
  const record = toRecord(found.batch, batch);
  // The batch's receipts as of the transition: sending is paced behind processing, so many may still be queued.
  const receipts = deps.receiptCounts ? await deps.receiptCounts(found.batch.merchant_id, found.batch) : undefined;
  await publish(deps, type, receipts ? { ...record, receipts } : record, state);
}

async function publish(
  deps: EventDeps,
  type: WebhookEventType,
  record: BatchRecord & { receipts?: ReceiptCounts },
  state: EventState,
): Promise<{ recorded: boolean; queued: number }> {
  let unsent = state.unsent;
  let recorded = false;
  const now = isoTimestamp(deps.clock());
  if (!state.recorded && state.subscribers > 0) {
    const event: WebhookEvent = { id: randomId(24, 'evt_'), type, created_at: now, data: record };
    const inserted = await insertEventWithDeliveries(
      deps.db,
      { id: event.id, merchant_id: record.user_id, type, batch_id: record.id, payload: JSON.stringify(event), created_at: now },
      record.updated_at,
    );
    recorded = inserted !== null;
    // null: another run recorded it between the two reads, and that run sends its deliveries.
    unsent = inserted ?? [];
  }
  for (let i = 0; i < unsent.length; i += SEND_BATCH_MAX) {
    const ids = unsent.slice(i, i + SEND_BATCH_MAX);
    await deps.queue.sendBatch(ids.map((deliveryId) => ({ body: { deliveryId, attempt: 1 }, contentType: 'json' as const })));
    await markEnqueued(deps.db, ids, now);
  }
  return { recorded, queued: unsent.length };
}
