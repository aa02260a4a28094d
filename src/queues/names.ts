/** Queue names as in wrangler.toml: one Worker consumes them all, told apart by `batch.queue`. */
export const CHUNK_QUEUE = 'binbatch-chunks';
export const DEAD_LETTER_QUEUE = 'binbatch-chunks-dlq';
export const WEBHOOK_QUEUE = 'binbatch-webhooks';
export const WEBHOOK_DEAD_LETTER_QUEUE = 'binbatch-webhooks-dlq';
export const TRANSACTION_EVENT_QUEUE = 'binbatch-transaction-events';
export const TRANSACTION_EVENT_DEAD_LETTER_QUEUE = 'binbatch-transaction-events-dlq';
/** wrangler.toml `max_retries` of TRANSACTION_EVENT_QUEUE: a message is delivered at most this + 1 times. */
export const TRANSACTION_EVENT_MAX_RETRIES = 20;
