/**
 * One attempt of a `transaction_create` event at one endpoint, run by its queue's consumer
 * (queues/transaction-event-consumer.ts) for a message {endpointId, merchantId, event}:
 *
 *   POST <endpoint url>   body: JSON.stringify(event), the same bytes at every attempt
 *     Binbatch-Signature, Binbatch-Event-Id, Signature [, Signature-Previous], X-Webhook-Event-Id:
 *     as every delivery (services/webhooks/delivery.ts); Binbatch-Delivery-Id: whq_<queue message id>,
 *     the same across the retries of one message (these events have no delivery rows).
 *
 * The schedule is the queue's: a failed attempt asks for a retry after the webhook backoff
 * (WEBHOOK_RETRY_DELAYS, ±20 %), and after the last attempt the event is given up. Nothing is
 * stored per event; what happened is summed per endpoint (`summarize`, written once per queue
 * batch) and logged per attempt.
 *
 * The request itself mirrors delivery.ts's `send` (no redirect followed, the same timeout): kept
 * apart while that module's timers change (issue 29), to be shared once both settle.
 */
import { HALF, QUEUES } from '../../lib/platform-limits';
import { isoTimestamp } from '../../lib/time';
import { fluidPaySignatureHeaders, signatureHeader } from '../../lib/webhook-signature';
import { checkWebhookUrl } from '../../lib/webhook-url';
import type { TransactionEventMessage } from '../../schemas/webhooks';
import type { TransactionEventEndpoint, TransactionEventOutcomes } from '../../storage/transaction-events';
import { maxAttempts, retryDelaySeconds } from './config';
import type { WebhookDeps } from './deps';
import { openSigningSecret } from './secrets';

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

async function post(
  deps: WebhookDeps,
  endpoint: TransactionEventEndpoint,
  message: TransactionEventMessage,
  deliveryId: string,
  now: Date,
): Promise<{ statusCode: number | null; error: string | null }> {
  const secrets = await activeSecrets(deps, endpoint, now);
  const body = JSON.stringify(message.event);
  let response: Response;
  try {
    response = await deps.fetch(endpoint.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'binbatch-webhooks/1',
        'Binbatch-Signature': await signatureHeader(secrets, Math.floor(now.getTime() / 1_000), body),
        'Binbatch-Event-Id': message.event.id,
        'Binbatch-Delivery-Id': deliveryId,
        ...(await fluidPaySignatureHeaders(secrets, body)),
        'X-Webhook-Event-Id': message.event.id,
      },
      body,
      // A redirect could lead anywhere, past the URL rules: it counts as a failed attempt.
      redirect: 'manual',
      signal: deps.timeoutSignal(deps.config.timeoutMs),
    });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return { statusCode: null, error: `timed out after ${deps.config.timeoutMs / 1_000} s` };
    return { statusCode: null, error: `network error: ${error.message.slice(0, 200)}` };
  }
  // The answer's body is not wanted (nor stored): release the connection.
  await response.body?.cancel().catch(() => undefined);
  if (response.status >= 200 && response.status < 300) return { statusCode: response.status, error: null };
  const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
  return { statusCode: response.status, error: `HTTP ${response.status}${redirect}` };
}

/** The current secret, and the previous one while its rotation overlap lasts. */
async function activeSecrets(deps: WebhookDeps, endpoint: TransactionEventEndpoint, now: Date): Promise<string[]> {
  const open = (sealed: string) => openSigningSecret(deps.dataKey, endpoint.merchant_id, endpoint.id, sealed);
  const current = await open(endpoint.sealed_secret);
  // CARD_DATA_KEY changed or the row was tampered with: an operator's problem, not the receiver's.
  if (current === null) throw new Error(`the signing secret of endpoint ${endpoint.id} cannot be opened`);
  const secrets = [current];
  const overlapEnds = endpoint.previous_secret_expires_at;
  if (endpoint.sealed_previous_secret !== null && overlapEnds !== null && Date.parse(overlapEnds) > now.getTime()) {
    const previous = await open(endpoint.sealed_previous_secret);
    if (previous !== null) secrets.push(previous);
  }
  return secrets;
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
