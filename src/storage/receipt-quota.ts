/**
 * D1 access for `receipt_send_minutes`: the receipts every ledger shard sent in one UTC minute,
 * against RECEIPT_SENDS_PER_MINUTE (docs/receipts.md, "At the limit"). A shard asks for a grant
 * before it sends; the grant and the count change in one statement, so two shards asking at once
 * never share the same room.
 */

/** Minutes kept: older rows are deleted as new ones are written (about 60 rows). */
const KEEP_MS = 60 * 60_000;

/** The UTC minute of an instant, as its row's key. */
export function minuteOf(at: string): string {
  return at.slice(0, 16);
}

/** Takes up to `wanted` sends from the minute of `now`, at most `perMinute` in the minute; answers how many were granted. */
export async function takeSendGrant(db: D1Database, now: string, wanted: number, perMinute: number): Promise<number> {
  if (wanted <= 0) return 0;
  const minute = minuteOf(now);
  const oldest = minuteOf(new Date(Date.parse(now) - KEEP_MS).toISOString());
  const [, granted] = await db.batch([
    db.prepare('INSERT INTO receipt_send_minutes (minute, sent, granted) VALUES (?1, 0, 0) ON CONFLICT (minute) DO NOTHING').bind(minute),
    // Every SET expression reads the row as it was: `granted` is the room taken from the old count.
    db
      .prepare(
        `UPDATE receipt_send_minutes SET granted = MIN(?2, MAX(0, ?3 - sent)), sent = sent + MIN(?2, MAX(0, ?3 - sent))
         WHERE minute = ?1 RETURNING granted`,
      )
      .bind(minute, wanted, perMinute),
    db.prepare('DELETE FROM receipt_send_minutes WHERE minute < ?1').bind(oldest),
  ]);
  const row = granted?.results[0] as { granted: number } | undefined;
  return row?.granted ?? 0;
}

/** Gives back sends granted but not made (the run ended early); never below zero. */
export async function returnSendGrant(db: D1Database, now: string, unused: number): Promise<void> {
  if (unused <= 0) return;
  await db.prepare('UPDATE receipt_send_minutes SET sent = MAX(0, sent - ?2) WHERE minute = ?1').bind(minuteOf(now), unused).run();
}
