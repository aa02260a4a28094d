/**
 * The search index's objects and how they are named (docs/capacity.md, "Search"): the one place
 * each name is made, so the shard keys are documented once.
 *
 *   SearchDay        {merchant}/{YYYY-MM-DD}[/{part}]   a merchant's transactions created on one UTC day,
 *                                                       those of one part of its ledger shards
 *   SearchKeys       {merchant}/{YYYY-MM-DD}[/{part}]   order_id and customer_id references of one ISO week (its Monday), one part
 *   SearchDirectory  {merchant}                         which days (and parts) hold data; a shard's days; a settlement day's days
 *   TransactionExport {export id}                       one export
 *
 * A day's and a week's index is split into SEARCH_PARTS parts by the ledger shard its units come
 * from (`searchPartOf`), so that no one object is on the path of every chunk and API transaction of
 * a merchant: the API day's sub-shards each write their own part, and a merchant's files spread over
 * the parts by their batch id. Part 0 keeps the name the index had before it was split, so what was
 * written then is still read.
 */
import type { Env } from '../../env';
import { hash53 } from '../../lib/hash53';

const DAY_MS = 86_400_000;

/** Parts a day's (and a week's) index is split into: as many as an API day has ledger sub-shards at most. */
export const SEARCH_PARTS = 8;

/**
 * The part of the index a ledger shard's units go to: an API day shard `{merchant}/api/{day}` is
 * part 0 and its sub-shard `{merchant}/api/{day}/{k}` part k; a batch shard `{merchant}/batch/{id}`
 * the batch id's hash modulo SEARCH_PARTS (stable: the same batch always writes the same part).
 * Anything else (no shard a search knows) is part 0.
 */
export function searchPartOf(shard: string): number {
  const [, kind, name, sub] = shard.split('/');
  if (kind === 'api') {
    if (sub === undefined) return 0;
    const k = /^[1-9][0-9]*$/.test(sub) ? Number(sub) : 0;
    return k < SEARCH_PARTS ? k : k % SEARCH_PARTS;
  }
  if (kind === 'batch' && name !== undefined) return hash53(name) % SEARCH_PARTS;
  return 0;
}

export function searchDayName(merchantId: string, day: string, part = 0): string {
  return part === 0 ? `${merchantId}/${day}` : `${merchantId}/${day}/${part}`;
}

export function searchDay(env: Env, merchantId: string, day: string, part = 0) {
  return env.SEARCH_DAY.getByName(searchDayName(merchantId, day, part));
}

/** The Monday (UTC) of the ISO week holding `day` (YYYY-MM-DD). */
export function weekOf(day: string): string {
  const at = Date.parse(`${day}T00:00:00.000Z`);
  const weekday = (new Date(at).getUTCDay() + 6) % 7;
  return new Date(at - weekday * DAY_MS).toISOString().slice(0, 10);
}

export function searchKeysName(merchantId: string, week: string, part = 0): string {
  return part === 0 ? `${merchantId}/${week}` : `${merchantId}/${week}/${part}`;
}

export function searchKeys(env: Env, merchantId: string, week: string, part = 0) {
  return env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week, part));
}

export function searchDirectory(env: Env, merchantId: string) {
  return env.SEARCH_DIRECTORY.getByName(merchantId);
}

/** Every UTC day from `from` to `to` (YYYY-MM-DD, both included). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let at = Date.parse(`${from}T00:00:00.000Z`); at <= Date.parse(`${to}T00:00:00.000Z`); at += DAY_MS) {
    days.push(new Date(at).toISOString().slice(0, 10));
  }
  return days;
}

/** Every ISO week (its Monday) overlapping the days from `from` to `to`. */
export function weeksBetween(from: string, to: string): string[] {
  const weeks: string[] = [];
  for (let at = Date.parse(`${weekOf(from)}T00:00:00.000Z`); at <= Date.parse(`${to}T00:00:00.000Z`); at += 7 * DAY_MS) {
    weeks.push(new Date(at).toISOString().slice(0, 10));
  }
  return weeks;
}
