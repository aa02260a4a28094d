/**
 * Webhook history is kept 30 days, like the events of the gateways merchants compare us with: the
 * hourly maintenance removes each event created longer ago, with all its deliveries, once none of
 * them is still being retried (the longest schedule ends within a day, so that is every event but
 * one a redelivery made pending again). The delivery list and redelivery then answer as for an
 * unknown id.
 *
 * A delivery can be left `pending` with no queue message behind it (its message exhausted the
 * queue's retries and the dead-letter queue's, or its first message was never sent): nothing would
 * ever attempt it, and its event would never pass retention. The same maintenance ends such a
 * delivery as failed a day after its attempt was due; the merchant can redeliver it.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { deleteSettledEventsBefore, failDeliveriesDueBefore } from '../../storage/webhooks';

export const WEBHOOK_EVENT_RETENTION_DAYS = 30;

/**
 * Events per page: each takes its deliveries with it (one per endpoint, at most 10, plus
 * redeliveries), so a page's DELETE touches at most ~10,000 delivery rows, a statement of tens of
 * milliseconds that D1 (one query at a time) interleaves with everything else.
 */
export const EVENTS_PER_PAGE = 1_000;

/** D1 statements a page takes: the listing, then the two DELETEs of its transaction. */
const STATEMENTS_PER_PAGE = 3;

/**
 * Answers how many events were removed, and whether it got to the end within `maxStatements` D1
 * statements (the rest waits for the next run). Safe to run again, or twice at once.
 */
export async function deleteExpiredWebhookEvents(
  env: Env,
  clock: Clock,
  maxStatements = Infinity,
  pageSize = EVENTS_PER_PAGE,
): Promise<{ removed: number; finished: boolean }> {
  const cutoff = isoTimestamp(new Date(clock().getTime() - WEBHOOK_EVENT_RETENTION_DAYS * 86_400_000));
  let removed = 0;
  for (let statements = 0; statements + STATEMENTS_PER_PAGE <= maxStatements; statements += STATEMENTS_PER_PAGE) {
    const page = await deleteSettledEventsBefore(env.DB, cutoff, pageSize);
    removed += page.removed;
    if (page.listed < pageSize) return { removed, finished: true };
  }
  return { removed, finished: false };
}

/** A pending delivery whose attempt was due this long ago has no message left behind it. */
export const STUCK_AFTER_MS = 86_400_000;

/** Deliveries ended per statement. */
const STUCK_PER_STATEMENT = 500;

export const STUCK_DELIVERY_ERROR = 'its attempt was lost to repeated internal errors and never made; redeliver it';

/** Ends the deliveries stuck `pending` (see the header) as failed; `maxStatements` as the other jobs. */
export async function failStuckDeliveries(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ failed: number; finished: boolean }> {
  const dueBefore = isoTimestamp(new Date(clock().getTime() - STUCK_AFTER_MS));
  let failed = 0;
  for (let statements = 0; statements < maxStatements; statements++) {
    const ended = await failDeliveriesDueBefore(env.DB, dueBefore, STUCK_DELIVERY_ERROR, STUCK_PER_STATEMENT);
    failed += ended;
    if (ended < STUCK_PER_STATEMENT) return { failed, finished: true };
  }
  return { failed, finished: false };
}
