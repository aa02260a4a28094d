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

/** Answers how many events were removed. Safe to run again, or twice at once. */
export async function deleteExpiredWebhookEvents(env: Env, clock: Clock): Promise<number> {
  const cutoff = isoTimestamp(new Date(clock().getTime() - WEBHOOK_EVENT_RETENTION_DAYS * 86_400_000));
  let removed = 0;
  for (;;) {
    const page = await deleteSettledEventsBefore(env.DB, cutoff, SWEEP_PAGE);
    removed += page;
    if (page < SWEEP_PAGE) return removed;
  }
}
