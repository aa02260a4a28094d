/**
 * The billing calendar: on which days a subscription is billed. Pure date arithmetic on
 * "YYYY-MM-DD" strings, no clock and no I/O.
 *
 * A bill date is a UTC calendar day. The service's other days are UTC days too (transaction ids,
 * the API ledger's day shards, the hourly maintenance run), merchants have no time zone on file,
 * and a day that never moves with daylight saving means a cycle is never skipped or doubled at a
 * clock change. A subscription due on 2026-12-01 is billed by the first run at or after
 * 2026-12-01T00:00Z (docs/recurring.md, "Which day is a day").
 *
 * Days of the month: `billing_days` is one day (monthly) or two (twice monthly), 1 to 31, or 0 for
 * the month's last day. A day the month does not have (the 31st in a 30-day month, the 29th to
 * 31st in February) is billed on the month's last day, and the next month goes back to the day
 * asked for: the 31st of January, then the 28th (or 29th) of February, then the 31st of March.
 */

export type BillingFrequency = 'monthly' | 'twice_monthly' | 'daily';

export interface BillingSchedule {
  frequency: BillingFrequency;
  /** Every N months (monthly, twice monthly) or N days (daily); at least 1. */
  interval: number;
  /** The days of the month, ascending; 0 is the last day. Unused for daily. */
  days: number[];
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export interface CalendarDate {
  year: number;
  /** 1 to 12. */
  month: number;
  day: number;
}

export function parseDate(text: string): CalendarDate | null {
  const match = DATE.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return { year, month, day };
}

export function formatDate({ year, month, day }: CalendarDate): string {
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The day `billingDay` (0: the last) falls on in a month: the last day when the month is shorter. */
export function dayInMonth(year: number, month: number, billingDay: number): number {
  const last = daysInMonth(year, month);
  return billingDay === 0 || billingDay > last ? last : billingDay;
}

/** The UTC day of an instant. */
export function utcDay(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

export function addDays(date: string, days: number): string {
  const parsed = requireDate(date);
  const instant = new Date(Date.UTC(parsed.year, parsed.month - 1, parsed.day + days));
  return utcDay(instant);
}

function addMonths(year: number, month: number, months: number): { year: number; month: number } {
  const index = year * 12 + (month - 1) + months;
  return { year: Math.floor(index / 12), month: (index % 12) + 1 };
}

function requireDate(text: string): CalendarDate {
  const parsed = parseDate(text);
  if (!parsed) throw new Error(`not a calendar date: ${JSON.stringify(text)}`);
  return parsed;
}

/**
 * Parses `billing_days` for a frequency: one day for monthly, two different days for twice
 * monthly (in either order, answered ascending with the last day, 0, last), none needed for
 * daily. Null with the reason when it does not fit.
 */
export function parseBillingDays(frequency: BillingFrequency, text: string): { ok: true; days: number[] } | { ok: false; msg: string } {
  if (frequency === 'daily') return { ok: true, days: [] };
  const parts = text.split(',').map((part) => part.trim());
  const want = frequency === 'monthly' ? 1 : 2;
  if (parts.length !== want || parts.some((part) => !/^\d{1,2}$/.test(part) || Number(part) > 31)) {
    return {
      ok: false,
      msg: frequency === 'monthly' ? 'must be one day of the month, 1 to 31, or 0 for the last day' : 'must be two different days of the month, "1,15": 1 to 31, or 0 for the last day',
    };
  }
  const days = parts.map(Number).sort((a, b) => order(a) - order(b));
  if (days.length === 2 && (days[0] === days[1] || (days.includes(0) && days.includes(31)))) {
    return { ok: false, msg: 'must be two different days of the month (0 and 31 are both the last day)' };
  }
  return { ok: true, days };
}

/** 0 (the last day) sorts after every numbered day. */
function order(day: number): number {
  return day === 0 ? 32 : day;
}

/** The schedule's dates in one month, ascending, without repeats (two days can fall on one short month's last day). */
function datesInMonth(schedule: BillingSchedule, year: number, month: number): string[] {
  const days = [...new Set(schedule.days.map((day) => dayInMonth(year, month, day)))].sort((a, b) => a - b);
  return days.map((day) => formatDate({ year, month, day }));
}

/**
 * The first bill date on or after `from`: for daily, `from` itself; otherwise the first of the
 * schedule's days on or after it, in `from`'s month or the next.
 */
export function firstBillDate(schedule: BillingSchedule, from: string): string {
  const start = requireDate(from);
  if (schedule.frequency === 'daily') return from;
  for (const offset of [0, 1]) {
    const { year, month } = addMonths(start.year, start.month, offset);
    const found = datesInMonth(schedule, year, month).find((date) => date >= from);
    if (found) return found;
  }
  throw new Error('a month without a billing day');
}

/**
 * The bill date after `current` (a date the schedule billed on, or was due on): daily, `interval`
 * days later; twice monthly, the month's other day when it is later, otherwise the first day
 * `interval` months on; monthly, the day `interval` months on.
 */
export function nextBillDate(schedule: BillingSchedule, current: string): string {
  const date = requireDate(current);
  if (schedule.frequency === 'daily') return addDays(current, schedule.interval);
  if (schedule.frequency === 'twice_monthly') {
    const later = datesInMonth(schedule, date.year, date.month).find((candidate) => candidate > current);
    if (later) return later;
  }
  const { year, month } = addMonths(date.year, date.month, schedule.interval);
  return datesInMonth(schedule, year, month)[0] as string;
}

/**
 * The next bill date after `current` that is after `today` as well: when a cycle was billed late
 * (a retry that succeeded days later, a paused subscription resumed), the cycles that passed
 * meanwhile are not charged in a burst; billing resumes on the next date still ahead.
 */
export function nextBillDateAfter(schedule: BillingSchedule, current: string, today: string): string {
  let next = nextBillDate(schedule, current);
  // Bounded: a daily schedule of interval 1 moves one day per turn, and `today` is at most a few
  // years past `current` (a subscription's dates are years, not centuries, apart).
  for (let turns = 0; next <= today && turns < 40_000; turns++) next = nextBillDate(schedule, next);
  return next;
}
