/**
 * The keys of the units a restricted scan of a search day reads (an exact filter's: a batch's shard,
 * a settlement day, the times a week object referenced, a transaction id), a read at a time, newest
 * first, below a time: the scan never holds a whole day's list (an API-heavy day settled in one run
 * has a unit per transaction, a million or more). Each read is one statement with a LIMIT over an
 * index in `at` order; bound lists travel in pieces well under SQLite's 2 MB bound parameter.
 */
import { HALF, DURABLE_OBJECTS } from '../../lib/platform-limits';
import { chunkPage, parseTransactionId } from '../../services/transactions/ledger';
import type { Restriction, UnitKey } from './day';

/** Unit keys one read answers (about 120 bytes each in memory). */
export const KEYS_PER_READ = 500;

/**
 * Times bound in one `json_each` parameter: an ISO time is 24 characters, 27 bytes as a JSON string
 * with its quotes and comma, so 20,000 are 540 KB, within half of the 2 MB a bound string may hold.
 */
export const ATS_PER_STATEMENT = 20_000;
if (ATS_PER_STATEMENT * 27 > DURABLE_OBJECTS.rowBytes * HALF) throw new Error('ATS_PER_STATEMENT exceeds the bound parameter budget');

/** No LIMIT (SQLite's -1): a read of the units of one time, which a read may not split. */
const ALL = -1;

/**
 * Up to `limit` keys of the units `restrict` names created in [from, below), newest first, never
 * splitting one time across reads: when the read is full, the units of its oldest time are all
 * answered, so the next read starts strictly below it.
 */
export function restrictedKeysBelow(sql: SqlStorage, restrict: Restriction, from: string, below: string, limit = KEYS_PER_READ): UnitKey[] {
  const keys = keysBelow(sql, restrict, from, below, limit);
  if (keys.length < limit || limit === ALL) return keys;
  const oldest = (keys.at(-1) as UnitKey).at;
  const newer = keys.filter((k) => k.at !== oldest);
  return [...newer, ...keysBelow(sql, restrict, oldest, `${oldest}\u0000`, ALL)];
}

function keysBelow(sql: SqlStorage, restrict: Restriction, from: string, below: string, limit: number): UnitKey[] {
  switch (restrict.kind) {
    case 'all':
      return sql.exec<UnitKey>('SELECT shard, page, at FROM units WHERE at >= ? AND at < ? ORDER BY at DESC LIMIT ?', from, below, limit).toArray();
    case 'shard':
      return sql
        .exec<UnitKey>('SELECT shard, page, at FROM units WHERE shard = ? AND at >= ? AND at < ? ORDER BY at DESC LIMIT ?', restrict.shard, from, below, limit)
        .toArray();
    case 'settled':
      // Units marked settled that day, and units holding a transaction that settled that day on its own.
      return sql
        .exec<UnitKey>(
          `SELECT shard, page, at FROM (SELECT shard, page, at FROM units WHERE settled_on = ?1 AND at >= ?2 AND at < ?3 ORDER BY at DESC LIMIT ?4)
           UNION
           SELECT shard, page, at FROM (SELECT shard, page, at FROM changes WHERE settled_on = ?1 AND at >= ?2 AND at < ?3 ORDER BY at DESC LIMIT ?4)
           ORDER BY at DESC LIMIT ?4`,
          restrict.day,
          from,
          below,
          limit,
        )
        .toArray();
    case 'ats': {
      // Times newest first, asked a piece at a time until the read is full: a time may hold no unit
      // of this day (another day's, or outside the window), so one piece may answer none.
      const ats = newestFirstTimes(restrict.ats).filter((at) => at >= from && at < below);
      const piece = limit === ALL ? ATS_PER_STATEMENT : Math.min(limit, ATS_PER_STATEMENT);
      const keys: UnitKey[] = [];
      for (let i = 0; i < ats.length && (limit === ALL || keys.length < limit); i += piece) keys.push(...unitKeysAtTimes(sql, ats.slice(i, i + piece)));
      const sorted = sortNewestFirst(keys);
      return limit === ALL ? sorted : sorted.slice(0, limit);
    }
    case 'ids': {
      const keys = new Map<string, UnitKey>();
      for (const id of restrict.ids) {
        const parsed = parseTransactionId(id);
        const found = [...unitKeysOfPage(sql, restrict.shard, id), ...(parsed?.kind === 'batch' ? unitKeysOfFloorPage(sql, restrict.shard, chunkPage(parsed.line)) : [])];
        for (const key of found) if (key.at >= from && key.at < below) keys.set(`${key.shard}\n${key.page}\n${key.at}`, key);
      }
      const sorted = sortNewestFirst([...keys.values()]);
      return limit === ALL ? sorted : sorted.slice(0, limit);
    }
  }
}

/** The keys of the units created at one of `ats`, the list bound in pieces of ATS_PER_STATEMENT. */
export function unitKeysAtTimes(sql: SqlStorage, ats: readonly string[]): UnitKey[] {
  const keys: UnitKey[] = [];
  for (let i = 0; i < ats.length; i += ATS_PER_STATEMENT) {
    const piece = ats.slice(i, i + ATS_PER_STATEMENT);
    keys.push(...sql.exec<UnitKey>('SELECT shard, page, at FROM units WHERE at IN (SELECT value FROM json_each(?))', JSON.stringify(piece)).toArray());
  }
  return keys;
}

function unitKeysOfPage(sql: SqlStorage, shard: string, page: string): UnitKey[] {
  return sql.exec<UnitKey>('SELECT shard, page, at FROM units WHERE shard = ? AND page = ?', shard, page).toArray();
}

/** The keys of the units of the page with the greatest name not above `page` (a batch row's chunk, from its line). */
function unitKeysOfFloorPage(sql: SqlStorage, shard: string, page: string): UnitKey[] {
  const found = sql.exec<{ page: string | null }>('SELECT MAX(page) AS page FROM units WHERE shard = ? AND page <= ?', shard, page).one().page;
  return found === null ? [] : unitKeysOfPage(sql, shard, found);
}

/** A restriction's times, distinct and newest first, sorted once per list (a scan reads the same list many times). */
const sortedTimes = new WeakMap<readonly string[], string[]>();
function newestFirstTimes(ats: readonly string[]): string[] {
  let sorted = sortedTimes.get(ats);
  if (!sorted) {
    sorted = [...new Set(ats)].sort().reverse();
    sortedTimes.set(ats, sorted);
  }
  return sorted;
}

function sortNewestFirst(keys: UnitKey[]): UnitKey[] {
  return keys.sort((a, b) => (b.at > a.at ? 1 : b.at < a.at ? -1 : 0));
}
