/**
 * A search day object's changes (storage/search/day.ts, `changes` and `change_blocks`) written a
 * call at a time: a batch chunk's captures, voids or refunds are up to 500 transactions in one call,
 * and a statement or three per transaction made the day object a tenth of a capture file's work.
 * Here a call reads the stored ranks of its transactions in a statement or two, decides in memory
 * exactly as one write after another would, and writes in a few statements, then one statement per
 * unit whose count of changed transactions moved (a chunk's rows are one or two units).
 *
 * Where a change is kept:
 *   - a call's changes on one unit awaiting no settlement mark (`settledOn` null), at least
 *     BLOCK_MIN_CHANGES of them (a batch chunk's), are one `change_blocks` row: one row written for
 *     the chunk, not 500. A change row of about 700 bytes cost some 11 µs of SQLite each (its
 *     B-tree's pages split every few rows); a block is one row whose bytes run on in overflow pages.
 *   - every other change (an API operation's, a settlement's) is a `changes` row of its own, as
 *     before; a settled-day filter finds those by their `settled_on`, so a change carrying one is
 *     never in a block.
 * A transaction's change is the furthest along (rank) of its row and its unit's block entries; at
 * the same rank a block entry wins, and of two block entries the later. A unit keeps at most
 * MAX_BLOCKS_PER_UNIT blocks: the write that would pass it folds them into one, each transaction's
 * change only, so a unit's blocks hold each of its transactions at most twice.
 *
 * Rows of `changes` travel as a JSON array bound to `json_each` with their records as bytes beside
 * it (storage/ledger-shard/bulk.ts, spannedGroups); two bound parameters however many rows
 * (SQLite's limit is DURABLE_OBJECTS.boundParameters), each at most half of the 2 MB a bound value
 * may hold (DURABLE_OBJECTS.rowBytes), as is a block's `entries`.
 */
import { JSON_PARAMETER_BYTES, jsonArrays, spannedGroups } from '../ledger-shard/bulk';
import { utf8Bytes } from '../ledger-shard/pages';
import { unitKeyString, unpackRecord, type ChangeRow, type ChangeWrite, type PackedRecord, type UnitKey } from './day';

/** A call's changes on one unit go into a block when there are at least this many (fewer: rows of their own). */
export const BLOCK_MIN_CHANGES = 16;

/**
 * The blocks a unit keeps at most; the write that would pass it folds them into one. Two: a unit's
 * transactions are then held at most twice (a capture file's block, a refund file's), about 1.6 KB
 * a changed transaction where a change row kept one copy, so a part holding a `max` merchant's
 * 1.25 million batch rows of a day, all changed, stays about 2 GB, under half an object's 5 GB
 * (docs/capacity.md). A third lifecycle file on the same transactions pays the fold (its unit's two
 * blocks read and written again once).
 */
export const MAX_BLOCKS_PER_UNIT = 2;

/** Whether the object has the blocks table (an object of an older build gets it on its next write). */
function hasBlocks(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'change_blocks'").toArray().length > 0;
}

/** Each transaction's furthest rank in the blocks of these units (one statement; a block's ranks are read, not its records). */
function blockRanks(sql: SqlStorage, units: readonly UnitKey[]): Map<string, number> {
  const ranks = new Map<string, number>();
  if (units.length === 0) return ranks;
  for (const array of jsonArrays(units.map((u) => [u.shard, u.page, u.at]))) {
    const rows = sql.exec<{ ranks: string }>(
      `SELECT b.ranks FROM json_each(?) AS k JOIN change_blocks b ON b.shard = k.value ->> 0 AND b.page = k.value ->> 1 AND b.at = k.value ->> 2`,
      array,
    );
    for (const row of rows) {
      for (const [id, rank] of JSON.parse(row.ranks) as [string, number][]) ranks.set(id, Math.max(ranks.get(id) ?? rank, rank));
    }
  }
  return ranks;
}

/** A block entry: a transaction's id, rank, amount refunded and record (packRecord's array). */
type BlockEntry = [id: string, rank: number, amountRefunded: number, record: PackedRecord];

/**
 * The entries the blocks of `unit` hold (of `ids` only, when given), each transaction's furthest
 * along (the later block's at the same rank). At most MAX_BLOCKS_PER_UNIT rows, each at most
 * JSON_PARAMETER_BYTES.
 */
function blockEntries(sql: SqlStorage, unit: UnitKey, ids?: ReadonlySet<string>): Map<string, BlockEntry> {
  const found = new Map<string, BlockEntry>();
  const rows = sql.exec<{ entries: string }>('SELECT entries FROM change_blocks WHERE shard = ? AND page = ? AND at = ? ORDER BY seq', unit.shard, unit.page, unit.at);
  for (const row of rows) {
    for (const entry of JSON.parse(row.entries) as BlockEntry[]) {
      if (ids && !ids.has(entry[0])) continue;
      const before = found.get(entry[0]);
      if (!before || entry[1] >= before[1]) found.set(entry[0], entry);
    }
  }
  return found;
}

/** The changes of `unit` its blocks hold, as change rows (of `ids` only, when given); none in an object without blocks. */
export function unitBlockChanges(sql: SqlStorage, unit: UnitKey, ids?: ReadonlySet<string>): Map<string, ChangeRow> {
  const found = new Map<string, ChangeRow>();
  if (!hasBlocks(sql)) return found;
  for (const [id, [, rank, amountRefunded, record]] of blockEntries(sql, unit, ids)) {
    found.set(id, { shard: unit.shard, page: unit.page, at: unit.at, id, rank, amountRefunded, settledOn: null, record: unpackRecord(record) });
  }
  return found;
}

/** Each transaction's change: its row's, unless its unit's blocks hold one as far along or further. */
export function mergeChanges(rows: ReadonlyMap<string, ChangeRow>, blocks: ReadonlyMap<string, ChangeRow>): Map<string, ChangeRow> {
  const merged = new Map(rows);
  for (const [id, change] of blocks) {
    const row = merged.get(id);
    if (!row || change.rank >= row.rank) merged.set(id, change);
  }
  return merged;
}

/**
 * Writes each transaction's current record unless a later state is stored or written before it in
 * the same call (two operations answered close together may be indexed out of order), and counts
 * the change on its unit the first time the transaction changes: as if each were written alone, in
 * order. `blocks`: a call's many changes on one unit may be kept as a block (a batch chunk's; a
 * settlement's writes are rows). Answers, for each change, whether it was written.
 */
export function upsertChanges(sql: SqlStorage, changes: readonly ChangeWrite[], options: { blocks: boolean } = { blocks: false }): boolean[] {
  const written = changes.map(() => false);
  if (changes.length === 0) return written;
  const ranks = new Map<string, number>();
  for (const array of jsonArrays([...new Set(changes.map((c) => c.id))])) {
    for (const row of sql.exec<{ id: string; rank: number }>('SELECT id, rank FROM changes WHERE id IN (SELECT value FROM json_each(?))', array)) ranks.set(row.id, row.rank);
  }
  const blocks = hasBlocks(sql);
  if (blocks) {
    const units = new Map<string, UnitKey>();
    for (const c of changes) units.set(unitKeyString(c), { shard: c.shard, page: c.page, at: c.at });
    for (const [id, rank] of blockRanks(sql, [...units.values()])) ranks.set(id, Math.max(ranks.get(id) ?? rank, rank));
  }
  // Per transaction, the row as the writes one after another would leave it: an insert keeps the
  // first write's unit (shard, page, at); each later write replaces the rest.
  const rows = new Map<string, ChangeWrite>();
  const newOnUnit = new Map<string, { unit: UnitKey; count: number }>();
  changes.forEach((change, i) => {
    const before = ranks.get(change.id);
    if (before !== undefined && before > change.rank) return;
    if (before === undefined) {
      const key = unitKeyString(change);
      const counted = newOnUnit.get(key) ?? { unit: { shard: change.shard, page: change.page, at: change.at }, count: 0 };
      counted.count += 1;
      newOnUnit.set(key, counted);
    }
    const earlier = rows.get(change.id);
    rows.set(change.id, earlier ? { ...change, shard: earlier.shard, page: earlier.page, at: earlier.at } : change);
    ranks.set(change.id, change.rank);
    written[i] = true;
  });
  // A unit's many changes awaiting no settlement mark: a block; the rest: rows.
  const byUnit = new Map<string, { unit: UnitKey; changes: ChangeWrite[] }>();
  const single: ChangeWrite[] = [];
  for (const row of rows.values()) {
    if (!(blocks && options.blocks && row.settledOn === null)) {
      single.push(row);
      continue;
    }
    const key = unitKeyString(row);
    const group = byUnit.get(key) ?? { unit: { shard: row.shard, page: row.page, at: row.at }, changes: [] };
    group.changes.push(row);
    byUnit.set(key, group);
  }
  for (const group of byUnit.values()) {
    if (group.changes.length < BLOCK_MIN_CHANGES) single.push(...group.changes);
    else writeBlock(sql, group.unit, group.changes);
  }
  writeRows(sql, single);
  for (const { unit, count } of newOnUnit.values()) {
    sql.exec('UPDATE units SET changed = changed + ? WHERE shard = ? AND page = ? AND at = ?', count, unit.shard, unit.page, unit.at);
  }
  return written;
}

/** Change rows, each record travelling as bytes beside the JSON of the rest of its row (spannedGroups). */
function writeRows(sql: SqlStorage, rows: readonly ChangeWrite[]): void {
  const values = rows.map((c) => ({ values: [c.id, c.shard, c.page, c.at, c.rank, c.amountRefunded, c.settledOn], large: c.packed }));
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
}

/**
 * A unit's changes of one call as a block (several when their JSON passes JSON_PARAMETER_BYTES). A
 * unit that would pass MAX_BLOCKS_PER_UNIT has its blocks folded with these into as few as hold
 * them: each transaction's furthest change (these win at the same rank, being the latest).
 */
function writeBlock(sql: SqlStorage, unit: UnitKey, changes: readonly ChangeWrite[]): void {
  const stored = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM change_blocks WHERE shard = ? AND page = ? AND at = ?', unit.shard, unit.page, unit.at).one().n;
  let entries: readonly ChangeWrite[] = changes;
  if (stored + 1 > MAX_BLOCKS_PER_UNIT) {
    const folded = new Map<string, ChangeWrite>();
    for (const [id, [, rank, amountRefunded, record]] of blockEntries(sql, unit)) {
      folded.set(id, { ...unit, id, rank, amountRefunded, settledOn: null, packed: JSON.stringify(record) });
    }
    for (const change of changes) {
      const before = folded.get(change.id);
      if (!before || change.rank >= before.rank) folded.set(change.id, change);
    }
    sql.exec('DELETE FROM change_blocks WHERE shard = ? AND page = ? AND at = ?', unit.shard, unit.page, unit.at);
    entries = [...folded.values()];
  }
  let texts: string[] = [];
  let ranks: string[] = [];
  let size = 2;
  const flush = () => {
    if (texts.length === 0) return;
    sql.exec('INSERT INTO change_blocks (shard, page, at, ranks, entries) VALUES (?, ?, ?, ?, ?)', unit.shard, unit.page, unit.at, `[${ranks.join(',')}]`, `[${texts.join(',')}]`);
    texts = [];
    ranks = [];
    size = 2;
  };
  for (const change of entries) {
    // The record's JSON (packRecord's array) goes in as it is: no second encoding.
    const id = JSON.stringify(change.id);
    const text = `[${id},${change.rank},${change.amountRefunded},${change.packed}]`;
    const bytes = utf8Bytes(text) + 1;
    if (texts.length > 0 && size + bytes > JSON_PARAMETER_BYTES) flush();
    texts.push(text);
    ranks.push(`[${id},${change.rank}]`);
    size += bytes;
  }
  flush();
}
