/**
 * The idempotency window: a request's key and fingerprint (request_hash) are honoured for 24 hours
 * after the transaction was recorded, as Stripe does. Within it, the same key and request answer
 * the recorded transaction and another request under the key is a conflict. After it, an API key
 * may be used again for a new request.
 *
 * No sweep keeps it: API transactions live in day shards (ledger.ts), so a key is only ever looked
 * up in today's and yesterday's shard, and a record of yesterday's older than the window is not a
 * match. A day shard drops its request hashes on its own once its last window is over (its alarm,
 * durable-objects/ledger-shard/); a batch row keeps none (its key names one line of one file).
 */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
