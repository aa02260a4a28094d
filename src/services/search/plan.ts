/**
 * Which day objects a search asks (docs/capacity.md, "Search"): the days of its window that hold
 * data, or the few an exact filter names, and for each day the parts of its index to read (a day
 * is split into parts by ledger shard, services/search/names.ts) with what each part may read.
 */
import type { Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import type { Condition } from '../../schemas/search-conditions';
import type { Restriction } from '../../storage/search/day';
import type { DayParts } from '../../storage/search/directory';
import { ledgerShardName } from '../transactions/ledger';
import { keyHash, shardOfId } from './indexer';
import { KEY_REFS_MAX, WEEK_PARTS_AT_MOST } from './limits';
import { searchDirectory, searchKeys, weekOf } from './names';

const WEEK_CONCURRENCY = 16;

/** One day of a search: the parts of its index to ask, each with what it may read. */
export interface DayPlan {
  day: string;
  parts: { part: number; restrict: Restriction }[];
}

/**
 * The days to ask and what each part may read. An exact filter (`=`) names them: the id's shard
 * (and so its part), the batch's shard, the settlement day, or the week objects' references to an
 * order or customer; else every day of the window that holds data, every part of it. Days outside
 * [fromDay, toDay] are dropped.
 */
export async function planDays(env: Env, merchantId: string, conditions: readonly Condition[], fromDay: string, toDay: string): Promise<DayPlan[]> {
  // `= ""` asks for the records without the field, which no index lists: such a filter is applied
  // over the window's days like any other (an id is never "": that finds nothing below).
  const equal = (field: string): string | undefined => {
    for (const c of conditions) if (c.kind === 'string' && c.field === field && c.op === '=' && (c.value !== '' || field === 'id')) return c.value;
    return undefined;
  };
  const inWindow = (day: string) => day >= fromDay && day <= toDay;
  const directory = searchDirectory(env, merchantId);
  const everyPart = (days: readonly DayParts[], restrict: Restriction): DayPlan[] =>
    days.filter((d) => inWindow(d.day)).map((d) => ({ day: d.day, parts: d.parts.map((part) => ({ part, restrict })) }));

  const id = equal('id');
  if (id !== undefined) {
    const shard = shardOfId(merchantId, id);
    if (shard === null) return [];
    return (await directory.shardDayParts(shard)).filter((d) => inWindow(d.day)).map(({ day, part }) => ({ day, parts: [{ part, restrict: { kind: 'ids', shard, ids: [id] } }] }));
  }
  const batchId = equal('batch_id');
  if (batchId !== undefined) {
    if (!/^bat_[0-9a-v]{20}$/.test(batchId)) return [];
    const shard = ledgerShardName({ kind: 'batch', merchantId, batchId });
    return (await directory.shardDayParts(shard)).filter((d) => inWindow(d.day)).map(({ day, part }) => ({ day, parts: [{ part, restrict: { kind: 'shard', shard } }] }));
  }
  const settlementBatchId = equal('settlement_batch_id');
  if (settlementBatchId !== undefined) {
    const match = /^stl_([0-9]{4})([0-9]{2})([0-9]{2})_/.exec(settlementBatchId);
    if (!match) return [];
    const settledOn = `${match[1]}-${match[2]}-${match[3]}`;
    return everyPart(await directory.settledDayParts(settledOn), { kind: 'settled', day: settledOn });
  }
  const windowDays = await directory.dayParts(fromDay, toDay);
  for (const field of ['order_id', 'customer_id'] as const) {
    const value = equal(field);
    if (value === undefined) continue;
    const plan = await referencedDays(env, merchantId, keyHash(field, value), windowDays);
    // A value too common to list is searched like any filter, over the window's days.
    if (plan !== null) return plan.filter((p) => inWindow(p.day));
  }
  return everyPart(windowDays, { kind: 'all' });
}

/**
 * The days, parts and unit times within them where a value was indexed, from the week objects of
 * every part the window's days hold; null when a week lists too many (more than KEY_REFS_MAX over
 * all its parts, the bound one week object had before the split) or the window's weeks have more
 * parts than a search may ask (WEEK_PARTS_AT_MOST, its share of the subrequests): the caller then
 * reads the window's days, under the search's row budget.
 */
async function referencedDays(env: Env, merchantId: string, hash: number, windowDays: readonly DayParts[]): Promise<DayPlan[] | null> {
  const weekParts = new Map<string, Set<number>>();
  for (const { day, parts } of windowDays) {
    const set = weekParts.get(weekOf(day)) ?? new Set<number>();
    for (const part of parts) set.add(part);
    weekParts.set(weekOf(day), set);
  }
  const asks = [...weekParts].flatMap(([week, parts]) => [...parts].map((part) => ({ week, part })));
  if (asks.length > WEEK_PARTS_AT_MOST) return null;
  const answers = await mapWithConcurrency(asks, WEEK_CONCURRENCY, async (ask) => ({ ...ask, found: await searchKeys(env, merchantId, ask.week, ask.part).lookup(hash, KEY_REFS_MAX) }));
  const perWeek = new Map<string, number>();
  for (const { week, found } of answers) {
    if (found.truncated) return null;
    perWeek.set(week, (perWeek.get(week) ?? 0) + found.ats.length);
    if ((perWeek.get(week) ?? 0) > KEY_REFS_MAX) return null;
  }
  const byDay = new Map<string, Map<number, string[]>>();
  for (const { part, found } of answers) {
    for (const at of found.ats) {
      const day = at.slice(0, 10);
      const parts = byDay.get(day) ?? new Map<number, string[]>();
      const ats = parts.get(part) ?? [];
      ats.push(at);
      parts.set(part, ats);
      byDay.set(day, parts);
    }
  }
  return [...byDay]
    .sort(([a], [b]) => (b > a ? 1 : -1))
    .map(([day, parts]) => ({ day, parts: [...parts].map(([part, ats]) => ({ part, restrict: { kind: 'ats' as const, ats } })) }));
}
