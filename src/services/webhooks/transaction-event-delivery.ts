/**
 * One attempt of a `transaction_create` event at one endpoint, run by its queue's consumer
 * (queues/transaction-event-consumer.ts) for a message {endpointId, merchantId, event}:
 *
 *   POST <endpoint url>   body: JSON.stringify(event), the same bytes at every attempt, signed as
 *     every webhook is (sender.ts); Binbatch-Delivery-Id: whq_<queue message id>, the same across
 *     the retries of one message (these events have no delivery rows).
 *
 * The schedule is the queue's: a failed attempt asks for a retry after the webhook backoff
 * (WEBHOOK_RETRY_DELAYS, ±20 %), and after the last attempt the event is given up. Nothing is
 * stored per event; what happened is summed per endpoint (`summarize`, written once per queue
 * batch) and logged per attempt.
 */
import { HALF, QUEUES } from '../../lib/platform-limits';
import { isoTimestamp } from '../../lib/time';
import { checkWebhookUrl } from '../../lib/webhook-url';
import type { TransactionEventMessage } from '../../schemas/webhooks';
import type { TransactionEventEndpoint, TransactionEventOutcomes } from '../../storage/transaction-events';
import { maxAttempts, retryDelaySeconds } from './config';
import type { WebhookDeps } from './deps';
import { sendSigned, type SendResult } from './sender';

/** A retry's delay is at most half a day (half of Queues' 24-hour delay limit), as delivery.ts's. */
const MAX_RETRY_DELAY_SECONDS = Math.floor(QUEUES.maxDelaySeconds * HALF);

export type TransactionEventAttempt =
  | { result: 'delivered'; statusCode: number }
  | { result: 'retry'; delaySeconds: number; statusCode: number | null; error: string }
  | { result: 'abandoned'; statusCode: number | null; error: string }
  /** The endpoint was deleted, or no longer takes the event: nothing to send. */
  | { result: 'skipped'; reason: 'endpoint_gone' };

/**
 * Attempt number `attempt` (the queue's count, from 1) of `message` at `endpoint` (undefined: not
 * found). `lastAttempt` caps the configured attempts by what the queue will hand over.
 */
export async function attemptTransactionEvent(
  deps: WebhookDeps,
  endpoint: TransactionEventEndpoint | undefined,
  message: TransactionEventMessage,
  attempt: number,
  deliveryId: string,
  lastAttempt: number,
): Promise<TransactionEventAttempt> {
  if (!endpoint || endpoint.merchant_id !== message.merchantId || !endpoint.events.includes('transaction_create')) {
    return { result: 'skipped', reason: 'endpoint_gone' };
  }
  const now = deps.clock();
  const verdict = checkWebhookUrl(endpoint.url, deps.config.allowLocal);
  const sent = verdict.ok ? await post(deps, endpoint, message, deliveryId, now) : { statusCode: null, error: `url refused: ${verdict.rule}` };
  if (sent.statusCode !== null && sent.statusCode >= 200 && sent.statusCode < 300) return { result: 'delivered', statusCode: sent.statusCode };
  const error = sent.error ?? `HTTP ${sent.statusCode}`;
  // A URL the rules refuse will not become acceptable by waiting.
  const delay = !verdict.ok || attempt >= Math.min(maxAttempts(deps.config), lastAttempt) ? null : retryDelaySeconds(deps.config, attempt, deps.random);
  if (delay === null) return { result: 'abandoned', statusCode: sent.statusCode, error };
  return { result: 'retry', delaySeconds: Math.min(delay, MAX_RETRY_DELAY_SECONDS), statusCode: sent.statusCode, error };
}

function post(deps: WebhookDeps, endpoint: TransactionEventEndpoint, message: TransactionEventMessage, deliveryId: string, now: Date): Promise<SendResult> {
  const secrets = {
    merchantId: endpoint.merchant_id,
    endpointId: endpoint.id,
    sealedSecret: endpoint.sealed_secret,
    sealedPreviousSecret: endpoint.sealed_previous_secret,
    previousSecretExpiresAt: endpoint.previous_secret_expires_at,
  };
  return sendSigned(deps, secrets, { url: endpoint.url, body: JSON.stringify(message.event), eventId: message.event.id, deliveryId }, now);
}

/** One attempt's result, for the endpoint's summary. */
export interface AttemptRecord {
  endpointId: string;
  merchantId: string;
  eventId: string;
  transactionId: string;
  at: Date;
  outcome: { result: 'delivered' } | { result: 'retry' | 'abandoned'; statusCode: number | null; error: string };
}

/** A healthy endpoint's summary is rewritten at most this often (a failing one at every queue batch). */
export const HEALTHY_WRITE_INTERVAL_MS = 60_000;

/**
 * Sums a queue batch's attempts per endpoint, in the order they ran, into what to add to each
 * summary; an endpoint whose attempts all went through and whose summary says so (delivered less
 * than a minute ago, not failing) has nothing worth a write.
 */
export function summarize(records: readonly AttemptRecord[], endpoints: ReadonlyMap<string, TransactionEventEndpoint>): TransactionEventOutcomes[] {
  const byEndpoint = new Map<string, TransactionEventOutcomes & { lastDelivery: Date | null }>();
  for (const record of records) {
    const at = isoTimestamp(record.at);
    let sum = byEndpoint.get(record.endpointId);
    if (!sum) {
      sum = {
        endpointId: record.endpointId,
        merchantId: record.merchantId,
        deliveredAt: null,
        failingSince: null,
        failedAttempts: 0,
        abandonedEvents: 0,
        lastFailure: null,
        lastAbandoned: null,
        lastDelivery: null,
      };
      byEndpoint.set(record.endpointId, sum);
    }
    if (record.outcome.result === 'delivered') {
      sum.deliveredAt = at;
      sum.lastDelivery = record.at;
      sum.failingSince = null;
      continue;
    }
    sum.failedAttempts++;
    sum.failingSince ??= at;
    sum.lastFailure = { at, statusCode: record.outcome.statusCode, error: record.outcome.error, eventId: record.eventId, transactionId: record.transactionId };
    if (record.outcome.result === 'abandoned') {
      sum.abandonedEvents++;
      sum.lastAbandoned = { at, transactionId: record.transactionId };
    }
  }
  return [...byEndpoint.values()]
    .filter((sum) => {
      if (sum.failedAttempts > 0 || sum.lastDelivery === null) return true;
      const stored = endpoints.get(sum.endpointId);
      const recorded = stored?.last_delivered_at ? Date.parse(stored.last_delivered_at) : Number.NEGATIVE_INFINITY;
      return stored?.failing_since !== null || sum.lastDelivery.getTime() - recorded >= HEALTHY_WRITE_INTERVAL_MS;
    })
    .map(({ lastDelivery: _lastDelivery, ...sum }) => sum);
}
