/**
 * One shard of the service-wide receipt pace, in the SQLite of a `ReceiptPace` object
 * (durable-objects/receipt-pace.ts; docs/receipts.md, "The pace"): the sends granted in the current
 * UTC minute, out of the shard's share of RECEIPT_SENDS_PER_MINUTE. One row, whatever is sent.
 */

export const RECEIPT_PACE_SCHEMA = `CREATE TABLE IF NOT EXISTS receipt_pace (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     minute TEXT NOT NULL,
     used INTEGER NOT NULL
   );`;

function current(sql: SqlStorage, minute: string): number {
  const row = sql.exec<{ minute: string; used: number }>('SELECT minute, used FROM receipt_pace WHERE id = 1').toArray()[0];
  return row && row.minute === minute ? row.used : 0;
}

function store(sql: SqlStorage, minute: string, used: number): void {
  sql.exec('INSERT INTO receipt_pace (id, minute, used) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET minute = excluded.minute, used = excluded.used', minute, used);
}

/** Takes up to `wanted` sends from the minute of `now`, at most `perMinute` in it; answers how many. */
export function takePace(sql: SqlStorage, now: string, wanted: number, perMinute: number): number {
  const minute = now.slice(0, 16);
  const used = current(sql, minute);
  const granted = Math.max(0, Math.min(wanted, perMinute - used));
  store(sql, minute, used + granted);
  return granted;
}

/** Gives back sends granted in the minute of `now` and not made; never below zero. */
export function returnPace(sql: SqlStorage, now: string, unused: number): void {
  const minute = now.slice(0, 16);
  if (unused <= 0) return;
  store(sql, minute, Math.max(0, current(sql, minute) - unused));
}
