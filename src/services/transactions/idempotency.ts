/**
 * The idempotency window: a request's key and fingerprint (request_hash) are honoured for 24 hours
 * after the transaction was recorded, as Stripe does. Within it, the same key and request answer
 * the recorded transaction and another request under the key is a conflict. After it, an API key
 * may be used again for a new request, and the fingerprint, derived from the card number, is not
 * kept any longer than it is useful; the transaction record itself stays.
 *
 * Two mechanisms keep that exact and bounded: the engine frees the expired keys it is about to
 * look up (storage `findTransactionsByIdempotencyKeys`), and the daily cron sweeps every row past
 * the window (`sweepIdempotencyWindow`).
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { sweepExpiredRequestHashes } from '../../storage/transactions';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Sweeps this many rows per statement, to keep each one short. */
const SWEEP_BATCH = 500;

/** Records created before this time are past the window. */
export function idempotencyCutoff(now: Date): string {
  return isoTimestamp(new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS));
}

/**
 * Clears the request hash of every transaction past the window, in at most `maxStatements`
 * statements; answers how many it cleared, and whether it got to the end (the rest waits for the next run).
 */
export async function sweepIdempotencyWindow(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ cleared: number; finished: boolean }> {
  const cutoff = idempotencyCutoff(clock());
  let swept = 0;
  for (let statements = 0; statements < maxStatements; statements++) {
    const changed = await sweepExpiredRequestHashes(env.DB, cutoff, SWEEP_BATCH);
    swept += changed;
    if (changed < SWEEP_BATCH) return { cleared: swept, finished: true };
  }
  return { cleared: swept, finished: false };
}
