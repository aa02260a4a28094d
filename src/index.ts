/** Wiring only: HTTP goes to the Hono app, queue batches to their consumers, the hourly cron to the maintenance jobs (services/maintenance.ts). */
import { app } from './app';
import type { Env } from './env';
import { systemClock } from './lib/time';
import { consumeChunks } from './queues/chunk-consumer';
import { consumeDeadLetters } from './queues/dead-letter-consumer';
import { CHUNK_QUEUE, DEAD_LETTER_QUEUE, TRANSACTION_EVENT_DEAD_LETTER_QUEUE, TRANSACTION_EVENT_QUEUE, WEBHOOK_DEAD_LETTER_QUEUE, WEBHOOK_QUEUE } from './queues/names';
import { consumeTransactionEventDeadLetters, consumeTransactionEvents } from './queues/transaction-event-consumer';
import { consumeWebhookDeadLetters, consumeWebhookDeliveries } from './queues/webhook-consumer';
import { isPagePath, pages } from './routes/pages';
import { runMaintenance } from './services/maintenance';

export { BatchProgress } from './durable-objects/batch-progress';
export { LedgerShard } from './durable-objects/ledger-shard';
export { MerchantSettlement } from './durable-objects/merchant-settlement';
export { ReceiptBudget } from './durable-objects/receipt-budget';
export { ReceiptPace } from './durable-objects/receipt-pace';
export { PendingUpload } from './durable-objects/pending-upload';
export { RecurringBilling } from './durable-objects/recurring-billing';
export { CardDeclines } from './durable-objects/card-declines';
export { SandboxAcquirer } from './durable-objects/sandbox-acquirer';
export { SearchDay } from './durable-objects/search/day';
export { SearchDirectory } from './durable-objects/search/directory';
export { SearchKeys } from './durable-objects/search/keys';
export { TransactionExport } from './durable-objects/search/export';

export default {
  // Browser pages (the hosted tokenizer, the docs page's files) have headers of their own; everything else is the API.
  fetch: (request, env, ctx) => (isPagePath(new URL(request.url).pathname) ? pages : app).fetch(request, env, ctx),

  async queue(batch, env) {
    if (batch.queue === DEAD_LETTER_QUEUE) return consumeDeadLetters(batch, env);
    if (batch.queue === CHUNK_QUEUE) return consumeChunks(batch, env, systemClock);
    if (batch.queue === WEBHOOK_QUEUE) return consumeWebhookDeliveries(batch, env, systemClock);
    if (batch.queue === WEBHOOK_DEAD_LETTER_QUEUE) return consumeWebhookDeadLetters(batch, env);
    if (batch.queue === TRANSACTION_EVENT_QUEUE) return consumeTransactionEvents(batch, env, systemClock);
    if (batch.queue === TRANSACTION_EVENT_DEAD_LETTER_QUEUE) return consumeTransactionEventDeadLetters(batch, env, systemClock);
    console.error(JSON.stringify({ level: 'error', event: 'unknown_queue', queue: batch.queue }));
    batch.retryAll();
  },

  async scheduled(controller, env) {
    // The scheduled time is the clock: tests pick it with createScheduledController.
    await runMaintenance(env, () => new Date(controller.scheduledTime));
  },
} satisfies ExportedHandler<Env, unknown>;
