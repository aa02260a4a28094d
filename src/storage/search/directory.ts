/**
 * The SQLite tables of a merchant's search directory (durable-objects/search/directory.ts): where
 * the merchant's search data is, so that a search asks only the day objects that hold something
 * (docs/capacity.md, "Search").
 *
 *   days          the UTC days whose day object holds units
 *   shard_days    for each ledger shard, the days its units are in (a batch that ran past midnight
 *                 or was paused, an API day's refunds made on later days)
 *   settled_days  for each settlement day, the days holding transactions settled then
 *   day_parts     for each day, the parts of its index (services/search/names.ts, `searchPartOf`)
 *                 that hold units; a week's parts are those of its days
 *
 * A (shard, day) listed before the index was split into parts (`legacy`) keeps all its units,
 * changes, marks and references in part 0, where the earlier build wrote them, for good: a batch
 * running as the split is deployed, or a transaction captured or settled after it, is written where
 * its units already are, never half in one part and half in another.
 *   meta          the merchant
 *
 * Rows leave TRANSACTION_RETENTION_DAYS after their day, with the day objects they point at.
 */
import { hasTables, migrate, recordedVersion } from '../do-schema';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     merchant_id TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS days (day TEXT PRIMARY KEY) WITHOUT ROWID;
   CREATE TABLE IF NOT EXISTS shard_days (
     shard TEXT NOT NULL,
     day TEXT NOT NULL,
     PRIMARY KEY (shard, day)
   ) WITHOUT ROWID;
   CREATE TABLE IF NOT EXISTS settled_days (
     settled_on TEXT NOT NULL,
     day TEXT NOT NULL,
     PRIMARY KEY (settled_on, day)
   ) WITHOUT ROWID;`,
  // The index split into parts by ledger shard: the days listed before were all in part 0.
  `CREATE TABLE IF NOT EXISTS day_parts (
     day TEXT NOT NULL,
     part INTEGER NOT NULL,
     PRIMARY KEY (day, part)
   ) WITHOUT ROWID;
   INSERT OR IGNORE INTO day_parts (day, part) SELECT day, 0 FROM days;
   ALTER TABLE shard_days ADD COLUMN legacy INTEGER NOT NULL DEFAULT 0;
   UPDATE shard_days SET legacy = 1;`,
];
export const SEARCH_DIRECTORY_SCHEMA_VERSION = MIGRATIONS.length;

export function readDirectoryMerchant(sql: SqlStorage): string | null {
  if (!hasTables(sql)) return null;
  return sql.exec<{ merchant_id: string }>('SELECT merchant_id FROM meta').toArray()[0]?.merchant_id ?? null;
}

/** Whether the tables are of an older schema version than this build's. */
export function directoryNeedsUpgrade(sql: SqlStorage): boolean {
  return hasTables(sql) && recordedVersion(sql) < SEARCH_DIRECTORY_SCHEMA_VERSION;
}

export function initialiseDirectory(sql: SqlStorage, merchantId: string): void {
  migrate(sql, MIGRATIONS);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, merchant_id) VALUES (1, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET schema_version = excluded.schema_version`,
    SEARCH_DIRECTORY_SCHEMA_VERSION,
    merchantId,
  );
}

/**
 * Records that `shard` has units on `day` (and that the day holds units), in `part` unless the pair
 * was listed before the split (then part 0); answers the part each pair is in.
 */
export function addShardDays(sql: SqlStorage, pairs: readonly { shard: string; day: string; part: number }[]): number[] {
  const parts: number[] = [];
  for (const { shard, day, part } of pairs) {
    sql.exec('INSERT INTO days (day) VALUES (?) ON CONFLICT DO NOTHING', day);
    sql.exec('INSERT INTO shard_days (shard, day) VALUES (?, ?) ON CONFLICT DO NOTHING', shard, day);
    const legacy = sql.exec<{ legacy: number }>('SELECT legacy FROM shard_days WHERE shard = ? AND day = ?', shard, day).one().legacy;
    const placed = legacy ? 0 : part;
    sql.exec('INSERT INTO day_parts (day, part) VALUES (?, ?) ON CONFLICT DO NOTHING', day, placed);
    parts.push(placed);
  }
  return parts;
}

export function addSettledDays(sql: SqlStorage, settledOn: string, days: readonly string[]): void {
  for (const day of days) sql.exec('INSERT INTO settled_days (settled_on, day) VALUES (?, ?) ON CONFLICT DO NOTHING', settledOn, day);
}

/** The days holding units from `from` to `to` (both included), newest first. */
export function daysBetween(sql: SqlStorage, from: string, to: string): string[] {
  if (!hasTables(sql)) return [];
  return sql.exec<{ day: string }>('SELECT day FROM days WHERE day >= ? AND day <= ? ORDER BY day DESC', from, to).toArray().map((r) => r.day);
}

/** A day and the parts of its index that hold units (ascending). */
export interface DayParts {
  day: string;
  parts: number[];
}

function groupParts(rows: readonly { day: string; part: number }[]): DayParts[] {
  const days: DayParts[] = [];
  for (const row of rows) {
    const last = days.at(-1);
    if (last && last.day === row.day) last.parts.push(row.part);
    else days.push({ day: row.day, parts: [row.part] });
  }
  return days;
}

/**
 * The days holding units from `from` to `to` (both included), newest first, each with its parts:
 * at most a row per day and part (548 days × SEARCH_PARTS = 4,384 rows, about 100 KB).
 */
export function dayPartsBetween(sql: SqlStorage, from: string, to: string): DayParts[] {
  if (!hasTables(sql)) return [];
  return groupParts(sql.exec<{ day: string; part: number }>('SELECT day, part FROM day_parts WHERE day >= ? AND day <= ? ORDER BY day DESC, part', from, to).toArray());
}

/** The days holding transactions settled on `settledOn`, newest first, each with all its parts. */
export function settledDayParts(sql: SqlStorage, settledOn: string): DayParts[] {
  if (!hasTables(sql)) return [];
  return groupParts(
    sql
      .exec<{ day: string; part: number }>(
        'SELECT s.day AS day, p.part AS part FROM settled_days s JOIN day_parts p ON p.day = s.day WHERE s.settled_on = ? ORDER BY s.day DESC, p.part',
        settledOn,
      )
      .toArray(),
  );
}

/** The days a shard's units are in, newest first, and whether each was listed before the split (its units in part 0). */
export function shardDaysWithLegacy(sql: SqlStorage, shard: string): { day: string; legacy: boolean }[] {
  if (!hasTables(sql)) return [];
  return sql
    .exec<{ day: string; legacy: number }>('SELECT day, legacy FROM shard_days WHERE shard = ? ORDER BY day DESC', shard)
    .toArray()
    .map((r) => ({ day: r.day, legacy: r.legacy === 1 }));
}

export function shardDays(sql: SqlStorage, shard: string): string[] {
  if (!hasTables(sql)) return [];
  return sql.exec<{ day: string }>('SELECT day FROM shard_days WHERE shard = ? ORDER BY day DESC', shard).toArray().map((r) => r.day);
}

export function settledDays(sql: SqlStorage, settledOn: string): string[] {
  if (!hasTables(sql)) return [];
  return sql.exec<{ day: string }>('SELECT day FROM settled_days WHERE settled_on = ? ORDER BY day DESC', settledOn).toArray().map((r) => r.day);
}

/** Removes what points at days before `day` (their day objects have emptied themselves); answers the rows removed. */
export function deleteDaysBefore(sql: SqlStorage, day: string): number {
  if (!hasTables(sql)) return 0;
  let removed = sql.exec('DELETE FROM days WHERE day < ?', day).rowsWritten;
  removed += sql.exec('DELETE FROM shard_days WHERE day < ?', day).rowsWritten;
  removed += sql.exec('DELETE FROM settled_days WHERE day < ?', day).rowsWritten;
  removed += sql.exec('DELETE FROM day_parts WHERE day < ?', day).rowsWritten;
  return removed;
}

export function oldestDay(sql: SqlStorage): string | null {
  if (!hasTables(sql)) return null;
  return sql.exec<{ day: string | null }>('SELECT MIN(day) AS day FROM days').one().day;
}
