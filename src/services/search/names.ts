/**
 * The search index's objects and how they are named (docs/capacity.md, "Search"): the one place
 * each name is made, so the shard keys are documented once.
 *
 *   SearchDay        {merchant}/{YYYY-MM-DD}   a merchant's transactions created on one UTC day
 *   SearchKeys       {merchant}/{YYYY-MM-DD}   order_id and customer_id references of one ISO week (its Monday)
 *   SearchDirectory  {merchant}                which days hold data; a shard's days; a settlement day's days
 *   TransactionExport {export id}              one export
 */
import type { Env } from '../../env';

const DAY_MS = 86_400_000;

export function searchDayName(merchantId: string, day: string): string {
  return `${merchantId}/${day}`;
}

export function searchDay(env: Env, merchantId: string, day: string) {
  return env.SEARCH_DAY.getByName(searchDayName(merchantId, day));
}

/** The Monday (UTC) of the ISO week holding `day` (YYYY-MM-DD). */
export function weekOf(day: string): string {
  const at = Date.parse(`${day}T00:00:00.000Z`);
  const weekday = (new Date(at).getUTCDay() + 6) % 7;
  return new Date(at - weekday * DAY_MS).toISOString().slice(0, 10);
}

export function searchKeysName(merchantId: string, week: string): string {
  return `${merchantId}/${week}`;
}

export function searchKeys(env: Env, merchantId: string, week: string) {
  return env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week));
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
