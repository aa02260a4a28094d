/**
 * An alarm that throws is retried DURABLE_OBJECTS.alarmRetries times (about two minutes of backoff)
 * and then dropped: a chain of alarms (retention, an export's steps and deletion, an index's
 * upkeep) would then stop for good after an outage of R2, D1 or a queue a little longer than that.
 * An alarm run through `rearmAfterFailure` sets itself again instead, ALARM_RETRY_MS later, however
 * often it fails; what it does must be safe to run again (each caller's work is a step that resumes
 * from its own stored state).
 */
import { DURABLE_OBJECTS } from './platform-limits';
import { redactDigits } from './redact';

export const ALARM_RETRY_MS = 60_000;

export async function rearmAfterFailure(storage: DurableObjectStorage, event: string, work: () => Promise<void>, retryMs = ALARM_RETRY_MS): Promise<void> {
  try {
    await work();
  } catch (err) {
    const error = redactDigits(err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error');
    console.log(JSON.stringify({ level: 'error', event, retries: DURABLE_OBJECTS.alarmRetries, retry_in_ms: retryMs, error }));
    await storage.setAlarm(Date.now() + retryMs);
  }
}
