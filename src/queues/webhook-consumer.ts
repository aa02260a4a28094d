/**
 * Consumers of `binbatch-webhooks` (one message = one delivery attempt, services/webhooks/delivery.ts)
 * and of its dead-letter queue. The attempt's outcome, whatever the receiver answered, is recorded
 * in D1 and the message acked: the schedule lives in D1, not in the queue's own retries. Those
 * are only for this Worker's failures (D1 unreachable), and a message that exhausts them ends its
 * delivery as failed, visible in the deliveries list.
 */
import type { Env } from '../env';
import { mapWithConcurrency } from '../lib/concurrency';
import { HALF, WORKERS } from '../lib/platform-limits';
import type { Clock } from '../lib/time';
import { webhookDeliveryMessageSchema } from '../schemas/webhooks';
import { abandonDelivery, attemptDelivery } from '../services/webhooks/delivery';
import { webhookDeps, type WebhookDeps } from '../services/webhooks/deps';
import { deadLetterRetryDelaySeconds } from './backoff';

/** Seconds before the queue retries a message this Worker failed on: 10, 20, 40 … capped at 10 minutes. */
export function internalRetryDelaySeconds(attempts: number): number {
  return Math.min(10 * 2 ** Math.max(0, attempts - 1), 600);
}

/**
 * Attempts made at once by one invocation. An invocation may have 6 connections open; a request
 * beyond them waits, unsent, for one to close, while its 10 s time limit runs: ten slow receivers
 * started together would time out the four that waited. Each attempt holds one connection at a time
 * (its request, then, if it failed, the next attempt's queue message), so at most this many are open:
 * half the limit, the rest left to whatever else the runtime opens.
 */
export const ATTEMPTS_AT_ONCE = Math.floor(WORKERS.simultaneousConnections * HALF);

export async function consumeWebhookDeliveries(batch: MessageBatch<unknown>, env: Env, clock: Clock, deps: WebhookDeps = webhookDeps(env, clock)): Promise<void> {
  // Attempts wait on other servers: side by side, within the connection limit (each one's time
  // limit starts as its request is sent: services/webhooks/delivery.ts).
  await mapWithConcurrency(
    batch.messages,
    ATTEMPTS_AT_ONCE,
    async (message) => {
      const parsed = webhookDeliveryMessageSchema.safeParse(message.body);
      if (!parsed.success) {
        console.error(JSON.stringify({ level: 'error', event: 'webhook_message_malformed', message_id: message.id }));
        message.ack();
        return;
      }
      const { deliveryId, attempt } = parsed.data;
      try {
        const outcome = await attemptDelivery(deps, parsed.data);
        if (outcome.result === 'retry_scheduled' || outcome.result === 'failed') {
          console.warn(
            JSON.stringify({
              level: 'warn',
              event: `webhook_attempt_${outcome.result}`,
              delivery_id: deliveryId,
              attempt,
              status_code: outcome.statusCode,
              error: outcome.error,
            }),
          );
        }
        message.ack();
      } catch (err) {
        console.error(
          JSON.stringify({
            level: 'error',
            event: 'webhook_attempt_error',
            delivery_id: deliveryId,
            attempt,
            error: err instanceof Error ? err.name : 'unknown',
          }),
        );
        message.retry({ delaySeconds: internalRetryDelaySeconds(message.attempts) });
      }
    },
  );
}

export async function consumeWebhookDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const parsed = webhookDeliveryMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      console.error(JSON.stringify({ level: 'error', event: 'webhook_dead_letter_malformed', message_id: message.id }));
      message.ack();
      continue;
    }
    try {
      await abandonDelivery(env.DB, parsed.data);
      message.ack();
    } catch {
      console.error(JSON.stringify({ level: 'error', event: 'webhook_dead_letter_failed', delivery_id: parsed.data.deliveryId }));
      message.retry({ delaySeconds: deadLetterRetryDelaySeconds(message.attempts) });
    }
  }
}
