/**
 * The hourly backstop for export files (services/maintenance.ts): an export's own object deletes
 * its file at `deleteAt` (BATCH_RETENTION_DAYS after it finished), and its alarm re-arms after a
 * failure; this deletes any file an object still missed (its object's storage lost, an alarm that
 * could not even be set again), so personal data in an export never outlives its retention by more
 * than a day and an hour.
 *
 * R2 lists at most 1,000 keys a call, each with its upload time; a file older than the retention
 * and one day (an export is written within hours) is past its `deleteAt`. A run lists at most
 * `maxStatements / 2` pages, starting at a point that turns with the hour (the merchant ids' first
 * character), so all files are looked at over a day even when there are more than one run reaches.
 */
import type { Env } from '../../env';
import { R2 } from '../../lib/platform-limits';
import type { Clock } from '../../lib/time';
import { exportRetentionDays } from './exports';

const DAY_MS = 86_400_000;

const PREFIX = 'exports/';
/** Merchant ids are lowercase base32: the first character of the key after the prefix. */
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

export async function deleteExpiredExportFiles(env: Env, clock: Clock, maxStatements: number): Promise<{ finished: boolean } & Record<string, number | boolean>> {
  const now = clock();
  const olderThan = now.getTime() - (exportRetentionDays(env) + 1) * DAY_MS;
  const start = `${PREFIX}${ALPHABET[now.getUTCHours() % ALPHABET.length]}`;
  let calls = 0;
  let seen = 0;
  let deleted = 0;
  // From the hour's starting point to the end, then from the beginning back to it.
  for (const pass of [{ startAfter: start, before: null as string | null }, { startAfter: undefined, before: start }]) {
    let cursor: string | undefined;
    for (;;) {
      if (calls + 2 > maxStatements) return { finished: false, seen, deleted, calls };
      const listing = await env.FILES.list({ prefix: PREFIX, limit: R2.keysPerDelete, ...(cursor ? { cursor } : pass.startAfter ? { startAfter: pass.startAfter } : {}) });
      calls++;
      const inPass = pass.before === null ? listing.objects : listing.objects.filter((object) => object.key <= (pass.before as string));
      seen += inPass.length;
      const expired = inPass.filter((object) => object.uploaded.getTime() < olderThan).map((object) => object.key);
      if (expired.length > 0) {
        await env.FILES.delete(expired);
        calls++;
        deleted += expired.length;
      }
      if (!listing.truncated || inPass.length < listing.objects.length) break;
      cursor = listing.cursor;
    }
  }
  return { finished: true, seen, deleted, calls };
}
