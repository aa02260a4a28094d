/** Backoff shared by the dead-letter consumers (queues/dead-letter-consumer.ts, queues/webhook-consumer.ts). */

/**
 * Seconds before a dead-letter consumer tries a message again (its own error: D1 or the object
 * unreachable): 30, 60, 120 … capped at an hour; with wrangler.toml's max_retries of 10, about four
 * hours of tries before the message is dropped (then the batch's watchdog, or the maintenance
 * sweep of stuck deliveries, ends what it was for).
 */
export function deadLetterRetryDelaySeconds(attempts: number): number {
  return Math.min(30 * 2 ** Math.max(0, attempts - 1), 3_600);
}
