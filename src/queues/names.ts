/** Queue names as in wrangler.toml: one Worker consumes them all, told apart by `batch.queue`. */
export const CHUNK_QUEUE = 'binbatch-chunks';
export const DEAD_LETTER_QUEUE = 'binbatch-chunks-dlq';
export const WEBHOOK_QUEUE = 'binbatch-webhooks';
export const WEBHOOK_DEAD_LETTER_QUEUE = 'binbatch-webhooks-dlq';
