/**
 * Webhook history is kept 30 days, like the events of the gateways merchants compare us with: the
 * daily cron removes each event created longer ago, with all its deliveries, once none of them is
 * still being retried (the longest schedule ends within a day, so that is every event but one a
 * redelivery made pending again). The delivery list and redelivery then answer as for an unknown id.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { deleteSettledEventsBefore } from '../../storage/webhooks';

export const WEBHOOK_EVENT_RETENTION_DAYS = 30;

/** Events per D1 transaction: each takes its deliveries (at most one per endpoint, 10, plus redeliveries) with it. */
const SWEEP_PAGE = 100;

/** D1 statements a page takes: the listing, then the two DELETEs of its transaction. */
const STATEMENTS_PER_PAGE = 3;

/**
 * Answers how many events were removed, and whether it got to the end within `maxStatements` D1
 * statements (the rest waits for the next run). Safe to run again, or twice at once.
 */
export async function deleteExpiredWebhookEvents(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ removed: number; finished: boolean }> {
  const cutoff = isoTimestamp(new Date(clock().getTime() - WEBHOOK_EVENT_RETENTION_DAYS * 86_400_000));
  let removed = 0;
  for (let statements = 0; statements + STATEMENTS_PER_PAGE <= maxStatements; statements += STATEMENTS_PER_PAGE) {
    const page = await deleteSettledEventsBefore(env.DB, cutoff, SWEEP_PAGE);
    removed += page;
    if (page < SWEEP_PAGE) return { removed, finished: true };
  }
  return { removed, finished: false };
}
