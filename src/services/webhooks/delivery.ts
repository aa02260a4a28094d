/**
 * One delivery attempt, run by the queue consumer for a message {deliveryId, attempt}: the event's
 * stored JSON, byte for byte, POSTed and signed as every webhook is (sender.ts), with
 * Binbatch-Delivery-Id whd_….
 *
 * A 2xx answer within the timeout is delivered. Anything else (another status, a redirect, a
 * timeout, a network error) schedules the next attempt after the configured delay, or ends the
 * delivery as failed when none is left. D1 holds the schedule (attempts, next_attempt_at); each
 * message is for one attempt number, so a duplicate or late message finds the delivery moved on
 * and does nothing. Delivery is at least once: a receiver drops events whose id it has seen.
 */
import { isoTimestamp } from '../../lib/time';
import { checkWebhookUrl } from '../../lib/webhook-url';
import type { WebhookDeliveryMessage } from '../../schemas/webhooks';
import {
  findDeliveryForAttempt,
  markDeliveryFailed,
  recordAttempt,
  type AttemptRecord,
  type DeliveryForAttempt,
} from '../../storage/webhooks';
import { maxAttempts, retryDelaySeconds } from './config';
import type { WebhookDeps } from './deps';
import { sendSigned, type SendResult } from './sender';

/** The longest delay a queue message can carry (Queues allows 24 hours now, 12 before); longer waits are re-deferred. */
export const MAX_QUEUE_DELAY_SECONDS = 43_200;

export type AttemptOutcome =
  | { result: 'delivered' | 'retry_scheduled' | 'failed'; attempt: number; statusCode: number | null; error: string | null }
  | { result: 'deferred'; delaySeconds: number }
  | { result: 'skipped'; reason: 'unknown_delivery' | 'finished' | 'already_attempted' | 'out_of_order' };

export async function attemptDelivery(deps: WebhookDeps, message: WebhookDeliveryMessage): Promise<AttemptOutcome> {
  const delivery = await findDeliveryForAttempt(deps.db, message.deliveryId);
  // Gone with its endpoint (deleted): nothing to send.
  if (!delivery) return { result: 'skipped', reason: 'unknown_delivery' };
  if (delivery.status !== 'pending') return { result: 'skipped', reason: 'finished' };
  if (delivery.attempts === message.attempt) {
    // This attempt was recorded but its run stopped before queueing the next one (or the queue
    // handed the message over twice): make sure the next attempt is on its way.
    await scheduleNext(deps, delivery.id, message.attempt + 1, delivery.next_attempt_at);
    return { result: 'skipped', reason: 'already_attempted' };
  }
  if (delivery.attempts !== message.attempt - 1) return { result: 'skipped', reason: 'out_of_order' };

  const now = deps.clock();
  const due = delivery.next_attempt_at === null ? now.getTime() : Date.parse(delivery.next_attempt_at);
  if (due - now.getTime() > 1_000) {
    // Waits longer than a queue delay arrive early: put the same attempt back until it is due.
    const delaySeconds = Math.min(Math.ceil((due - now.getTime()) / 1_000), MAX_QUEUE_DELAY_SECONDS);
    await deps.queue.send(message, { delaySeconds, contentType: 'json' });
    return { result: 'deferred', delaySeconds };
  }

  const attempt = message.attempt;
  const verdict = checkWebhookUrl(delivery.url, deps.config.allowLocal);
  const sent = verdict.ok ? await send(deps, delivery, now) : { statusCode: null, error: `url refused: ${verdict.rule}` };
  const delivered = sent.statusCode !== null && sent.statusCode >= 200 && sent.statusCode < 300;
  // A URL the rules refuse will not become acceptable by waiting.
  const delay = delivered || !verdict.ok ? null : retryDelaySeconds(deps.config, attempt, deps.random);
  const record: AttemptRecord = {
    status: delivered ? 'delivered' : delay === null ? 'failed' : 'pending',
    lastStatusCode: sent.statusCode,
    lastError: sent.error,
    nextAttemptAt: delay === null ? null : isoTimestamp(new Date(now.getTime() + delay * 1_000)),
    deliveredAt: delivered ? isoTimestamp(now) : null,
  };
  if (!(await recordAttempt(deps.db, delivery.id, attempt - 1, record))) {
    return { result: 'skipped', reason: 'already_attempted' };
  }
  if (record.status === 'pending') await scheduleNext(deps, delivery.id, attempt + 1, record.nextAttemptAt);
  return {
    result: delivered ? 'delivered' : record.status === 'failed' ? 'failed' : 'retry_scheduled',
    attempt,
    statusCode: sent.statusCode,
    error: sent.error,
  };
}

async function scheduleNext(deps: WebhookDeps, deliveryId: string, attempt: number, nextAttemptAt: string | null): Promise<void> {
  if (attempt > maxAttempts(deps.config)) return;
  const wait = nextAttemptAt === null ? 0 : Math.max(0, Date.parse(nextAttemptAt) - deps.clock().getTime());
  const delaySeconds = Math.min(Math.ceil(wait / 1_000), MAX_QUEUE_DELAY_SECONDS);
  await deps.queue.send({ deliveryId, attempt }, { delaySeconds, contentType: 'json' });
}

function send(deps: WebhookDeps, delivery: DeliveryForAttempt, now: Date): Promise<SendResult> {
  const secrets = {
    merchantId: delivery.merchant_id,
    endpointId: delivery.endpoint_id,
    sealedSecret: delivery.sealed_secret,
    sealedPreviousSecret: delivery.sealed_previous_secret,
    previousSecretExpiresAt: delivery.previous_secret_expires_at,
  };
  return sendSigned(deps, secrets, { url: delivery.url, body: delivery.payload, eventId: delivery.event_id, deliveryId: delivery.id }, now);
}

/**
 * Ends a delivery whose attempt could not be made at all: its message exhausted the queue's
 * retries on this Worker's own errors. It shows as failed, and the merchant can redeliver it.
 */
export async function abandonDelivery(db: D1Database, message: WebhookDeliveryMessage): Promise<boolean> {
  return markDeliveryFailed(db, message.deliveryId, message.attempt - 1, 'could not be attempted after repeated internal errors; redeliver it');
}
