/**
 * One delivery attempt, run by the queue consumer for a message {deliveryId, attempt}:
 *
 *   POST <endpoint url>   body: the event's stored JSON, byte for byte
 *     Content-Type: application/json
 *     Binbatch-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>[,v1=<previous secret's>]
 *     Binbatch-Event-Id: evt_…      Binbatch-Delivery-Id: whd_…
 *     Signature: <base64url HMAC-SHA256(secret, body)>   [Signature-Previous: <previous secret's>]   X-Webhook-Event-Id: evt_…  (FluidPay's)
 *
 * A 2xx answer within the timeout is delivered. Anything else (another status, a redirect, a
 * timeout, a network error) schedules the next attempt after the configured delay, or ends the
 * delivery as failed when none is left. D1 holds the schedule (attempts, next_attempt_at); each
 * message is for one attempt number, so a duplicate or late message finds the delivery moved on
 * and does nothing. Delivery is at least once: a receiver drops events whose id it has seen.
 */
import { isoTimestamp } from '../../lib/time';
import { fluidPaySignatureHeaders, signatureHeader } from '../../lib/webhook-signature';
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
import { openSigningSecret } from './secrets';

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

async function send(
  deps: WebhookDeps,
  delivery: DeliveryForAttempt,
  now: Date,
): Promise<{ statusCode: number | null; error: string | null }> {
  const secrets = await activeSecrets(deps, delivery, now);
  const timestamp = Math.floor(now.getTime() / 1_000);
  const headers = {
    'Content-Type': 'application/json',
    'User-Agent': 'binbatch-webhooks/1',
    'Binbatch-Signature': await signatureHeader(secrets, timestamp, delivery.payload),
    'Binbatch-Event-Id': delivery.event_id,
    'Binbatch-Delivery-Id': delivery.id,
    // FluidPay's verifier (their SDKs' ParseWebhookRequest) reads these.
    ...(await fluidPaySignatureHeaders(secrets, delivery.payload)),
    'X-Webhook-Event-Id': delivery.event_id,
  };
  let response: Response;
  try {
    // The time limit starts here, as the request is sent, not when the attempt began: the consumer
    // keeps its attempts within the invocation's connections, so no request waits for one unsent
    // while its limit runs (queues/webhook-consumer.ts, ATTEMPTS_AT_ONCE).
    const signal = deps.timeoutSignal(deps.config.timeoutMs);
    response = await deps.fetch(delivery.url, {
      method: 'POST',
      headers,
      body: delivery.payload,
      // A redirect could lead anywhere, past the URL rules: it counts as a failed attempt.
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error.name === 'TimeoutError' || error.name === 'AbortError') {
      return { statusCode: null, error: `timed out after ${deps.config.timeoutMs / 1_000} s` };
    }
    return { statusCode: null, error: `network error: ${error.message.slice(0, 200)}` };
  }
  // The answer's body is not wanted (nor stored): release the connection.
  await response.body?.cancel().catch(() => undefined);
  if (response.status >= 200 && response.status < 300) return { statusCode: response.status, error: null };
  const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
  return { statusCode: response.status, error: `HTTP ${response.status}${redirect}` };
}

/** The current secret, and the previous one while its rotation overlap lasts. */
async function activeSecrets(deps: WebhookDeps, delivery: DeliveryForAttempt, now: Date): Promise<string[]> {
  const open = (sealed: string) => openSigningSecret(deps.dataKey, delivery.merchant_id, delivery.endpoint_id, sealed);
  const current = await open(delivery.sealed_secret);
  // CARD_DATA_KEY changed or the row was tampered with: an operator's problem, not the receiver's.
  if (current === null) throw new Error(`the signing secret of endpoint ${delivery.endpoint_id} cannot be opened`);
  const secrets = [current];
  const overlapEnds = delivery.previous_secret_expires_at;
  if (delivery.sealed_previous_secret !== null && overlapEnds !== null && Date.parse(overlapEnds) > now.getTime()) {
    const previous = await open(delivery.sealed_previous_secret);
    if (previous !== null) secrets.push(previous);
  }
  return secrets;
}

/**
 * Ends a delivery whose attempt could not be made at all: its message exhausted the queue's
 * retries on this Worker's own errors. It shows as failed, and the merchant can redeliver it.
 */
export async function abandonDelivery(db: D1Database, message: WebhookDeliveryMessage): Promise<boolean> {
  return markDeliveryFailed(db, message.deliveryId, message.attempt - 1, 'could not be attempted after repeated internal errors; redeliver it');
}
