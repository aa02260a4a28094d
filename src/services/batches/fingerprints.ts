/**
 * Retention of upload fingerprint claims (`upload_fingerprints`, storage/batches.ts): a claim holds
 * its file's 24-hour duplicate window, and past it is only taken over or removed. Removed by the
 * hourly maintenance, so the table holds about one day of distinct files per merchant.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { deleteFingerprintsBefore } from '../../storage/batches';
import { UPLOAD_REPEAT_WINDOW_MS } from './upload';

/** Claims removed per statement. */
const CLAIMS_PER_STATEMENT = 1_000;

export async function deleteLapsedUploadFingerprints(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ removed: number; finished: boolean }> {
  const cutoff = isoTimestamp(new Date(clock().getTime() - UPLOAD_REPEAT_WINDOW_MS));
  let removed = 0;
  for (let statements = 0; statements < maxStatements; statements++) {
    const deleted = await deleteFingerprintsBefore(env.DB, cutoff, CLAIMS_PER_STATEMENT);
    removed += deleted;
    if (deleted < CLAIMS_PER_STATEMENT) return { removed, finished: true };
  }
  return { removed, finished: false };
}
