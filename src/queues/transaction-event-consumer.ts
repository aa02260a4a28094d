/**
 * Consumers of `binbatch-transaction-events` (one message = FluidPay's `transaction_create` event
 * for one endpoint, services/webhooks/transaction-events.ts) and of its dead-letter queue.
 *
 * The queue holds the schedule: a delivered or given-up event is acked, a failed attempt retried
 * with the webhook backoff, and an error of this Worker retried sooner (internalRetryDelaySeconds).
 * A batch's endpoints are read in one D1 query and its outcomes written in one D1 batch, whatever
 * the number of events: nothing is written per event.
 *
 * Attempts run one after another: each holds a connection for up to the attempt timeout, and one
 * at a time keeps a batch (10 messages, at most 10 × 10 s) far inside Workers' simultaneous
 * connections (6) and the consumer's wall time (15 minutes).
 */
import type { Env } from '../env';
import type { Clock } from '../lib/time';
import { transactionEventMessageSchema, type TransactionEventMessage } from '../schemas/webhooks';
import { webhookDeps } from '../services/webhooks/deps';
import { attemptTransactionEvent, summarize, type AttemptRecord } from '../services/webhooks/transaction-event-delivery';
import { findTransactionEventEndpoints, recordTransactionEventOutcomes, type TransactionEventEndpoint } from '../storage/transaction-events';
import { TRANSACTION_EVENT_MAX_RETRIES } from './names';
import { internalRetryDelaySeconds } from './webhook-consumer';

function parse(message: Message<unknown>): TransactionEventMessage | null {
  const parsed = transactionEventMessageSchema.safeParse(message.body);
  // The event as it came (a parse puts the fields it checks first): sent in the order it was made.
  if (parsed.success) return { ...parsed.data, event: (message.body as TransactionEventMessage).event };
  // Never retried forever: a message this Worker cannot read will not become readable.
  console.error(JSON.stringify({ level: 'error', event: 'transaction_event_message_malformed', message_id: message.id }));
  message.ack();
  return null;
}

export async function consumeTransactionEvents(batch: MessageBatch<unknown>, env: Env, clock: Clock): Promise<void> {
  const deps = webhookDeps(env, clock);
  const messages = batch.messages.flatMap((message) => {
    const body = parse(message);
    return body ? [{ message, body }] : [];
  });
  if (messages.length === 0) return;
  let endpoints: Map<string, TransactionEventEndpoint>;
  try {
    endpoints = await findTransactionEventEndpoints(env.DB, messages.map(({ body }) => body.endpointId));
  } catch {
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_endpoints_unreadable', messages: messages.length }));
    for (const { message } of messages) message.retry({ delaySeconds: internalRetryDelaySeconds(message.attempts) });
    return;
  }
  const records: AttemptRecord[] = [];
  for (const { message, body } of messages) {
    const deliveryId = `whq_${message.id}`;
    const log = { endpoint_id: body.endpointId, event_id: body.event.id, transaction_id: body.event.transaction_id, delivery_id: deliveryId, attempt: message.attempts };
    try {
      const at = deps.clock();
      const outcome = await attemptTransactionEvent(deps, endpoints.get(body.endpointId), body, message.attempts, deliveryId, TRANSACTION_EVENT_MAX_RETRIES + 1);
      if (outcome.result === 'retry') message.retry({ delaySeconds: outcome.delaySeconds });
      else message.ack();
      if (outcome.result === 'skipped') continue;
      records.push({ endpointId: body.endpointId, merchantId: body.merchantId, eventId: body.event.id, transactionId: body.event.transaction_id, at, outcome });
      if (outcome.result !== 'delivered') {
        const level = outcome.result === 'abandoned' ? 'error' : 'warn';
        console[level](JSON.stringify({ level, event: `transaction_event_${outcome.result}`, ...log, status_code: outcome.statusCode, error: outcome.error }));
      }
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', event: 'transaction_event_attempt_error', ...log, error: err instanceof Error ? err.name : 'unknown' }));
      message.retry({ delaySeconds: internalRetryDelaySeconds(message.attempts) });
    }
  }
  try {
    await recordTransactionEventOutcomes(env.DB, summarize(records, endpoints));
  } catch {
    // The attempts happened and their messages are settled: only the summary misses them (logged above).
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_summary_unwritten', endpoints: new Set(records.map((r) => r.endpointId)).size }));
  }
}

/**
 * A message this Worker kept failing on (TRANSACTION_EVENT_MAX_RETRIES): its event is given up,
 * and counted so on its endpoint's summary.
 */
export async function consumeTransactionEventDeadLetters(batch: MessageBatch<unknown>, env: Env, clock: Clock): Promise<void> {
  const records: AttemptRecord[] = [];
  const dead: Message<unknown>[] = [];
  for (const message of batch.messages) {
    const body = parse(message);
    if (!body) continue;
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_dead_lettered', endpoint_id: body.endpointId, event_id: body.event.id, transaction_id: body.event.transaction_id }));
    records.push({
      endpointId: body.endpointId,
      merchantId: body.merchantId,
      eventId: body.event.id,
      transactionId: body.event.transaction_id,
      at: clock(),
      outcome: { result: 'abandoned', statusCode: null, error: 'could not be attempted after repeated internal errors' },
    });
    dead.push(message);
  }
  try {
    await recordTransactionEventOutcomes(env.DB, summarize(records, new Map()));
    for (const message of dead) message.ack();
  } catch {
    for (const message of dead) message.retry({ delaySeconds: 60 });
  }
}
