/**
 * Running a search over a merchant's index (docs/capacity.md, "Search"): which day objects to ask
 * (the directory's days, or the few an exact filter names), the positions of the matches newest
 * first (days are disjoint in time, so the newest days make the page, asked DAY_WAVE at a time),
 * the count (every day of the window, all at once), then the records of the page.
 */
import type { Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import type { Clock } from '../../lib/time';
import type { Condition } from '../../schemas/search-conditions';
import type { DayScanAnswer, Position, Restriction } from '../../storage/search/day';
import { ledgerShardName, utcDay } from '../transactions/ledger';
import { authorizationExpiryDays, expiresBefore } from '../transactions/lifecycle-rules';
import { recordView } from '../fluidpay/record';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { keyHash, shardOfId } from './indexer';
import { DAY_CONCURRENCY, DAY_READ_MIN, DAY_WAVE, KEY_REFS_MAX, MAX_SEARCH_DAYS, SCAN_BUDGET_RECORDS, SEARCH_ROWS_READ_MAX } from './limits';
import { searchDay, searchDirectory, searchKeys, weeksBetween } from './names';
import type { SearchWindow } from './request';

const DAY_MS = 86_400_000;
/** An open window's end, for comparisons: later than any transaction. */
const END_OF_TIME = '9999-12-31T23:59:59.999Z';
const WEEK_CONCURRENCY = 16;

export interface SearchInput {
  conditions: readonly Condition[];
  window: SearchWindow;
  limit: number;
  offset: number;
  /** A cursor's position: only what is older than it. */
  after: Position | null;
  /** Count every match (a first page; a cursor's page carries its first page's count). */
  count: boolean;
  /** Rows the search may read in all (default SEARCH_ROWS_READ_MAX; a test passes a smaller one). */
  readMax?: number;
}

export interface SearchPage {
  records: TransactionRecordView[];
  totalCount: number;
  exact: boolean;
  /** Where the next page starts; null when this is the last. */
  next: Position | null;
}

interface DayPlan {
  day: string;
  restrict: Restriction;
}

export async function runSearch(env: Env, merchantId: string, input: SearchInput, clock: Clock): Promise<SearchPage> {
  const now = clock();
  const expiredBefore = expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS));
  const windowTo = input.window.to ?? END_OF_TIME;
  const fromDay = input.window.from.slice(0, 10);
  const toDay = utcDay(new Date(Math.min(Date.parse(windowTo) - 1, now.getTime() + DAY_MS)));
  let plan = (await planDays(env, merchantId, input.conditions, fromDay, toDay)).sort((a, b) => (b.day > a.day ? 1 : -1));
  // Days wholly newer than the cursor hold nothing for this page.
  if (input.after) plan = plan.filter((p) => p.day <= (input.after as Position).at.slice(0, 10));
  const capped = plan.length > MAX_SEARCH_DAYS;
  plan = plan.slice(0, MAX_SEARCH_DAYS);

  // What this search may still read, shared out among the days asked together.
  let left = input.readMax ?? SEARCH_ROWS_READ_MAX;
  const share = (days: number) => Math.min(SCAN_BUDGET_RECORDS, Math.floor(left / days));
  const scan = async (p: DayPlan, want: number, count: boolean, budget: number): Promise<DayScanAnswer> => {
    const answer = await searchDay(env, merchantId, p.day).scan({
      from: maxIso(input.window.from, `${p.day}T00:00:00.000Z`),
      to: minIso(windowTo, new Date(Date.parse(`${p.day}T00:00:00.000Z`) + DAY_MS).toISOString()),
      after: input.after,
      restrict: p.restrict,
      conditions: [...input.conditions],
      want,
      count,
      budget,
      expiredBefore,
    });
    if ('failed' in answer) throw new Error(`search day ${p.day} could not be read: ${answer.failed}`);
    return answer;
  };

  // One more than the page, to know whether another follows.
  const need = input.offset + input.limit + 1;
  const positions: Position[] = [];
  let stopped: Position | null = null;
  let total = 0;
  let exact = !capped;
  let asked = 0;
  let outOfRows = false;
  while (asked < plan.length && positions.length < need && stopped === null) {
    const wave = plan.slice(asked, asked + DAY_WAVE);
    const budget = share(wave.length);
    if (budget < DAY_READ_MIN) {
      outOfRows = true;
      break;
    }
    asked += wave.length;
    const answers = await Promise.all(wave.map((p) => scan(p, need - positions.length, input.count, budget)));
    for (const answer of answers) {
      left -= answer.read;
      total += answer.count;
      exact &&= answer.exact;
      if (stopped !== null || positions.length >= need) continue;
      positions.push(...answer.positions.slice(0, need - positions.length));
      // The day ran out of budget before the page was full: the page ends where it stopped.
      if (answer.stoppedAt !== null && positions.length < need) stopped = { at: answer.stoppedAt, id: '' };
    }
  }
  // The older days are only counted, DAY_CONCURRENCY at a time, while rows are left to read.
  for (let counted = asked; input.count && !outOfRows && counted < plan.length; ) {
    const group = plan.slice(counted, counted + DAY_CONCURRENCY);
    const budget = share(group.length);
    if (budget < DAY_READ_MIN) {
      exact = false;
      break;
    }
    counted += group.length;
    for (const answer of await mapWithConcurrency(group, DAY_CONCURRENCY, (p) => scan(p, 0, true, budget))) {
      left -= answer.read;
      total += answer.count;
      exact &&= answer.exact;
    }
  }
  if (outOfRows) exact = false;

  const page = positions.slice(input.offset, input.offset + input.limit);
  const records = await pageRecords(env, merchantId, page, expiredBefore);
  let next: Position | null = null;
  if (positions.length > input.offset + input.limit) next = page.at(-1) ?? null;
  else if (stopped !== null) next = stopped;
  // The rows this search may read ran out before the page filled: the next page starts below the days read.
  else if (outOfRows) next = { at: `${plan[asked - 1]?.day ?? fromDay}T00:00:00.000Z`, id: '' };
  // Older days were not asked (more than MAX_SEARCH_DAYS): the next page starts below them.
  else if (capped) next = { at: `${plan.at(-1)?.day ?? fromDay}T00:00:00.000Z`, id: '' };
  return { records, totalCount: total, exact, next };
}

/** The records at the page's positions, as they are now, in the page's order. */
async function pageRecords(env: Env, merchantId: string, page: readonly Position[], expiredBefore: string): Promise<TransactionRecordView[]> {
  const byDay = new Map<string, Position[]>();
  for (const p of page) {
    const day = p.at.slice(0, 10);
    const list = byDay.get(day) ?? [];
    list.push(p);
    byDay.set(day, list);
  }
  const found = new Map<string, TransactionRecordView>();
  await Promise.all(
    [...byDay].map(async ([day, positions]) => {
      const answer = await searchDay(env, merchantId, day).records(positions, expiredBefore);
      if (!Array.isArray(answer)) throw new Error(`search day ${day} could not be read: ${answer.failed}`);
      for (const tx of answer) {
        // As GET /api/transaction/{id} answers it: FluidPay's fields beside the result columns.
        found.set(String(tx.record.id), recordView(tx.record, tx.amountRefunded, merchantId));
      }
    }),
  );
  return page.flatMap((p) => found.get(p.id) ?? []);
}

/**
 * The days to ask and what each may read. An exact filter (`=`) names them: the id's shard, the
 * batch's shard, the settlement day, or the week objects' references to an order or customer; else
 * every day of the window that holds data. Days outside [fromDay, toDay] are dropped.
 */
async function planDays(env: Env, merchantId: string, conditions: readonly Condition[], fromDay: string, toDay: string): Promise<DayPlan[]> {
  // `= ""` asks for the records without the field, which no index lists: such a filter is applied
  // over the window's days like any other (an id is never "": that finds nothing below).
  const equal = (field: string): string | undefined => {
    for (const c of conditions) if (c.kind === 'string' && c.field === field && c.op === '=' && (c.value !== '' || field === 'id')) return c.value;
    return undefined;
  };
  const inWindow = (day: string) => day >= fromDay && day <= toDay;
  const directory = searchDirectory(env, merchantId);

  const id = equal('id');
  if (id !== undefined) {
    const shard = shardOfId(merchantId, id);
    if (shard === null) return [];
    return (await directory.shardDays(shard)).filter(inWindow).map((day) => ({ day, restrict: { kind: 'ids', shard, ids: [id] } }));
  }
  const batchId = equal('batch_id');
  if (batchId !== undefined) {
    if (!/^bat_[0-9a-v]{20}$/.test(batchId)) return [];
    const shard = ledgerShardName({ kind: 'batch', merchantId, batchId });
    return (await directory.shardDays(shard)).filter(inWindow).map((day) => ({ day, restrict: { kind: 'shard', shard } }));
  }
  const settlementBatchId = equal('settlement_batch_id');
  if (settlementBatchId !== undefined) {
    const match = /^stl_([0-9]{4})([0-9]{2})([0-9]{2})_/.exec(settlementBatchId);
    if (!match) return [];
    const settledOn = `${match[1]}-${match[2]}-${match[3]}`;
    return (await directory.settledDays(settledOn)).filter(inWindow).map((day) => ({ day, restrict: { kind: 'settled', day: settledOn } }));
  }
  for (const field of ['order_id', 'customer_id'] as const) {
    const value = equal(field);
    if (value === undefined) continue;
    const plan = await referencedDays(env, merchantId, keyHash(field, value), fromDay, toDay);
    // A value too common to list is searched like any filter, over the window's days.
    if (plan !== null) return plan.filter((p) => inWindow(p.day));
  }
  return (await directory.days(fromDay, toDay)).map((day) => ({ day, restrict: { kind: 'all' } }));
}

/** The days, and the unit times within them, where a value was indexed; null when a week has too many. */
async function referencedDays(env: Env, merchantId: string, hash: number, fromDay: string, toDay: string): Promise<DayPlan[] | null> {
  const answers = await mapWithConcurrency(weeksBetween(fromDay, toDay), WEEK_CONCURRENCY, (week) => searchKeys(env, merchantId, week).lookup(hash, KEY_REFS_MAX));
  if (answers.some((a) => a.truncated)) return null;
  const byDay = new Map<string, string[]>();
  for (const at of answers.flatMap((a) => a.ats)) byDay.set(at.slice(0, 10), [...(byDay.get(at.slice(0, 10)) ?? []), at]);
  return [...byDay].map(([day, ats]) => ({ day, restrict: { kind: 'ats', ats } }));
}

function maxIso(a: string, b: string): string {
  return a > b ? a : b;
}

function minIso(a: string, b: string): string {
  return a < b ? a : b;
}
