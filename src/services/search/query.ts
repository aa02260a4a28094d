/**
 * Running a search over a merchant's index (docs/capacity.md, "Search"): which day objects to ask
 * (plan.ts: the directory's days and their parts, or the few an exact filter names), the positions
 * of the matches newest first (days are disjoint in time, so the newest days make the page, asked
 * DAY_WAVE at a time; a day's parts overlap in time, so their positions are merged), the count
 * (every part of every day of the window), then the records of the page.
 */
import type { Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import type { Clock } from '../../lib/time';
import type { Condition } from '../../schemas/search-conditions';
import type { DayScanAnswer, Position, Restriction } from '../../storage/search/day';
import { utcDay } from '../transactions/ledger';
import { authorizationExpiryDays, expiresBefore } from '../transactions/lifecycle-rules';
import { recordView } from '../fluidpay/record';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { DAY_CONCURRENCY, DAY_READ_MIN, DAY_WAVE, MAX_SEARCH_PARTS, SCAN_BUDGET_RECORDS, SEARCH_ROWS_READ_MAX } from './limits';
import { searchDay } from './names';
import { planDays, type DayPlan } from './plan';
import type { SearchWindow } from './request';

const DAY_MS = 86_400_000;
/** An open window's end, for comparisons: later than any transaction. */
const END_OF_TIME = '9999-12-31T23:59:59.999Z';

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

export async function runSearch(env: Env, merchantId: string, input: SearchInput, clock: Clock): Promise<SearchPage> {
  const now = clock();
  const expiredBefore = expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS));
  const windowTo = input.window.to ?? END_OF_TIME;
  const fromDay = input.window.from.slice(0, 10);
  const toDay = utcDay(new Date(Math.min(Date.parse(windowTo) - 1, now.getTime() + DAY_MS)));
  let plan = (await planDays(env, merchantId, input.conditions, fromDay, toDay)).sort((a, b) => (b.day > a.day ? 1 : -1));
  // Days wholly newer than the cursor hold nothing for this page.
  if (input.after) plan = plan.filter((p) => p.day <= (input.after as Position).at.slice(0, 10));
  // A day is asked whole (every part of it) or not at all: the newest days whose parts fit MAX_SEARCH_PARTS.
  let kept = 0;
  for (let objects = 0; kept < plan.length && objects + (plan[kept] as DayPlan).parts.length <= MAX_SEARCH_PARTS; kept++) objects += (plan[kept] as DayPlan).parts.length;
  const capped = kept < plan.length;
  plan = plan.slice(0, kept);

  // What this search may still read, shared out among the day objects asked together.
  let left = input.readMax ?? SEARCH_ROWS_READ_MAX;
  const share = (objects: number) => Math.min(SCAN_BUDGET_RECORDS, Math.floor(left / Math.max(1, objects)));
  const scanPart = async (day: string, part: number, restrict: Restriction, want: number, count: boolean, budget: number): Promise<PartScanAnswer> => {
    const answer = await searchDay(env, merchantId, day, part).scan({
      from: maxIso(input.window.from, `${day}T00:00:00.000Z`),
      to: minIso(windowTo, new Date(Date.parse(`${day}T00:00:00.000Z`) + DAY_MS).toISOString()),
      after: input.after,
      restrict,
      conditions: [...input.conditions],
      want,
      count,
      budget,
      expiredBefore,
    });
    if ('failed' in answer) throw new Error(`search day ${day} part ${part} could not be read: ${answer.failed}`);
    // Each position keeps the part that answered it: the page's records are read there.
    return { ...answer, positions: answer.positions.map((p) => ({ at: p.at, id: p.id, part })) };
  };
  // A day's answer: every part asked at once (at most SEARCH_PARTS), their answers merged.
  const scan = async (p: DayPlan, want: number, count: boolean, budget: number): Promise<PartScanAnswer> =>
    mergeParts(await Promise.all(p.parts.map((part) => scanPart(p.day, part.part, part.restrict, want, count, budget))));
  // The next days from `from`: at most `days` of them and DAY_CONCURRENCY objects (one day at least).
  const nextDays = (from: number, days: number): DayPlan[] => {
    const group: DayPlan[] = [];
    for (let i = from, objects = 0; i < plan.length && group.length < days; i++) {
      const day = plan[i] as DayPlan;
      if (group.length > 0 && objects + day.parts.length > DAY_CONCURRENCY) break;
      group.push(day);
      objects += day.parts.length;
    }
    return group;
  };
  const objectsOf = (days: readonly DayPlan[]) => days.reduce((n, d) => n + d.parts.length, 0);

  // One more than the page, to know whether another follows.
  const need = input.offset + input.limit + 1;
  const positions: PartPosition[] = [];
  let stopped: Position | null = null;
  let total = 0;
  let exact = !capped;
  let asked = 0;
  let outOfRows = false;
  while (asked < plan.length && positions.length < need && stopped === null) {
    const wave = nextDays(asked, DAY_WAVE);
    const budget = share(objectsOf(wave));
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
  // The older days are only counted, DAY_CONCURRENCY objects at a time, while rows are left to read.
  for (let counted = asked; input.count && !outOfRows && counted < plan.length; ) {
    const group = nextDays(counted, DAY_CONCURRENCY);
    const budget = share(objectsOf(group));
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
  const last = page.at(-1);
  if (positions.length > input.offset + input.limit) next = last ? { at: last.at, id: last.id } : null;
  else if (stopped !== null) next = stopped;
  // The rows this search may read ran out before the page filled: the next page starts below the days read.
  else if (outOfRows) next = { at: `${plan[asked - 1]?.day ?? fromDay}T00:00:00.000Z`, id: '' };
  // Older days were not asked (their parts past MAX_SEARCH_PARTS): the next page starts below them.
  else if (capped) next = { at: `${plan.at(-1)?.day ?? fromDay}T00:00:00.000Z`, id: '' };
  return { records, totalCount: total, exact, next };
}

/** A position and the part of its day's index that holds it. */
type PartPosition = Position & { part: number };
type PartScanAnswer = Omit<DayScanAnswer, 'positions'> & { positions: PartPosition[] };

/** The search order: newer first, then the greater id first (as a day object answers its positions). */
function searchOrder(a: Position, b: Position): number {
  if (a.at !== b.at) return a.at > b.at ? -1 : 1;
  return a.id > b.id ? -1 : a.id < b.id ? 1 : 0;
}

/**
 * A day's parts' answers as one: their positions merged in the search order (each part answers its
 * first `want` in that order, so the first `want` of the merge are the day's), counts and reads
 * summed. A part that ran out of budget read everything at or after its `stoppedAt` and nothing
 * older: the day is certain only down to the latest such time, so positions older than it are left
 * for the next page (which resumes below that time in every part) and the day says it stopped there.
 */
export function mergeParts<T extends Position>(answers: readonly (Omit<DayScanAnswer, 'positions'> & { positions: T[] })[]): Omit<DayScanAnswer, 'positions'> & { positions: T[] } {
  if (answers.length === 1) return answers[0] as Omit<DayScanAnswer, 'positions'> & { positions: T[] };
  let stoppedAt: string | null = null;
  for (const answer of answers) if (answer.stoppedAt !== null && (stoppedAt === null || answer.stoppedAt > stoppedAt)) stoppedAt = answer.stoppedAt;
  const certain = (p: T) => stoppedAt === null || p.at >= stoppedAt;
  return {
    positions: answers.flatMap((a) => a.positions.filter(certain)).sort(searchOrder),
    count: answers.reduce((n, a) => n + a.count, 0),
    exact: answers.every((a) => a.exact),
    read: answers.reduce((n, a) => n + a.read, 0),
    stoppedAt,
  };
}

/** The records at the page's positions, as they are now, in the page's order: one call per day object holding any (at most the page's 100). */
async function pageRecords(env: Env, merchantId: string, page: readonly PartPosition[], expiredBefore: string): Promise<TransactionRecordView[]> {
  const byObject = new Map<string, { day: string; part: number; positions: Position[] }>();
  for (const { at, id, part } of page) {
    const day = at.slice(0, 10);
    const group = byObject.get(`${day}/${part}`) ?? { day, part, positions: [] };
    group.positions.push({ at, id });
    byObject.set(`${day}/${part}`, group);
  }
  const found = new Map<string, TransactionRecordView>();
  await Promise.all(
    [...byObject.values()].map(async ({ day, part, positions }) => {
      const answer = await searchDay(env, merchantId, day, part).records(positions, expiredBefore);
      if (!Array.isArray(answer)) throw new Error(`search day ${day} part ${part} could not be read: ${answer.failed}`);
      for (const tx of answer) {
        // As GET /api/transaction/{id} answers it: FluidPay's fields beside the result columns.
        found.set(String(tx.record.id), recordView(tx.record, tx.amountRefunded, merchantId));
      }
    }),
  );
  return page.flatMap((p) => found.get(p.id) ?? []);
}

function maxIso(a: string, b: string): string {
  return a > b ? a : b;
}

function minIso(a: string, b: string): string {
  return a < b ? a : b;
}
