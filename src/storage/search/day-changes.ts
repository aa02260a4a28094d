/**
 * A search day object's change rows (storage/search/day.ts, `changes`) written a call at a time: a
 * batch chunk's captures, voids or refunds are up to 500 transactions in one call, and a statement
 * or three per transaction made the day object a tenth of a capture file's work. Here a call reads
 * the stored ranks of its transactions in one statement, decides in memory exactly as one write
 * after another would, and writes the rows in one statement per JSON array (bound to `json_each`:
 * two bound parameters however many rows, SQLite's limit being DURABLE_OBJECTS.boundParameters; each
 * array at most half of the 2 MB a bound string may hold, DURABLE_OBJECTS.rowBytes), then one
 * statement per unit whose count of changed transactions moved (a chunk's rows are one or two units).
 * The records travel as bytes beside the JSON, the second parameter (storage/ledger-shard/bulk.ts, spannedGroups).
 */
import { jsonArrays, spannedGroups } from '../ledger-shard/bulk';
import type { ChangeWrite, UnitKey } from './day';

/**
 * Writes each transaction's current record unless a later state is stored or written before it in
 * the same call (two operations answered close together may be indexed out of order), and counts
 * the change on its unit the first time the transaction changes: as if each were written alone, in
 * order. Answers, for each change, whether it was written.
 */
export function upsertChanges(sql: SqlStorage, changes: readonly ChangeWrite[]): boolean[] {
  const written = changes.map(() => false);
  if (changes.length === 0) return written;
  const ranks = new Map<string, number>();
  for (const array of jsonArrays([...new Set(changes.map((c) => c.id))])) {
    for (const row of sql.exec<{ id: string; rank: number }>('SELECT id, rank FROM changes WHERE id IN (SELECT value FROM json_each(?))', array)) ranks.set(row.id, row.rank);
  }
  // Per transaction, the row as the writes one after another would leave it: an insert keeps the
  // first write's unit (shard, page, at); each later write replaces the rest.
  const rows = new Map<string, ChangeWrite>();
  const newOnUnit = new Map<string, { unit: UnitKey; count: number }>();
  changes.forEach((change, i) => {
    const before = ranks.get(change.id);
    if (before !== undefined && before > change.rank) return;
    if (before === undefined) {
      const key = `${change.shard}\n${change.page}\n${change.at}`;
      const counted = newOnUnit.get(key) ?? { unit: { shard: change.shard, page: change.page, at: change.at }, count: 0 };
      counted.count += 1;
      newOnUnit.set(key, counted);
    }
    const earlier = rows.get(change.id);
    rows.set(change.id, earlier ? { ...change, shard: earlier.shard, page: earlier.page, at: earlier.at } : change);
    ranks.set(change.id, change.rank);
    written[i] = true;
  });
  // Each record travels as bytes beside the JSON of the rest of its row (spannedGroups), not escaped inside it.
  const values = [...rows.values()].map((c) => ({ values: [c.id, c.shard, c.page, c.at, c.rank, c.amountRefunded, c.settledOn], large: c.packed }));
  for (const { json, bytes } of spannedGroups(values)) {
    sql.exec(
      `INSERT INTO changes (id, shard, page, at, rank, amount_refunded, settled_on, record)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, CAST(substr(?2, value ->> 7, value ->> 8) AS TEXT)
       FROM json_each(?1) WHERE true
       ON CONFLICT (id) DO UPDATE SET rank = excluded.rank, amount_refunded = excluded.amount_refunded, settled_on = excluded.settled_on, record = excluded.record`,
      json,
      bytes,
    );
  }
  for (const { unit, count } of newOnUnit.values()) {
    sql.exec('UPDATE units SET changed = changed + ? WHERE shard = ? AND page = ? AND at = ?', count, unit.shard, unit.page, unit.at);
  }
  return written;
}
