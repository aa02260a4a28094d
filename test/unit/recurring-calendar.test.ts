import { describe, expect, it } from 'vitest';
import { billingAmount } from '../../src/services/recurring/amounts';
import {
  addDays,
  dayInMonth,
  firstBillDate,
  nextBillDate,
  nextBillDateAfter,
  parseBillingDays,
  parseDate,
  type BillingSchedule,
} from '../../src/services/recurring/calendar';

const monthly = (day: number, interval = 1): BillingSchedule => ({ frequency: 'monthly', interval, days: [day] });
const twice = (a: number, b: number, interval = 1): BillingSchedule => ({ frequency: 'twice_monthly', interval, days: [a, b] });
const daily = (interval = 1): BillingSchedule => ({ frequency: 'daily', interval, days: [] });

/** The first `count` bill dates from `first` on. */
function run(schedule: BillingSchedule, first: string, count: number): string[] {
  const dates = [first];
  while (dates.length < count) dates.push(nextBillDate(schedule, dates.at(-1) as string));
  return dates;
}

describe('billing calendar', () => {
  it('the 31st is billed on the last day of shorter months and back on the 31st after them', () => {
    expect(run(monthly(31), '2026-01-31', 6)).toEqual(['2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30', '2026-05-31', '2026-06-30']);
  });

  it('February 29 in leap years, 28 otherwise (and 1900/2000 century rules)', () => {
    expect(nextBillDate(monthly(30), '2028-01-30')).toBe('2028-02-29');
    expect(nextBillDate(monthly(30), '2027-01-30')).toBe('2027-02-28');
    expect(dayInMonth(2100, 2, 29)).toBe(28);
    expect(dayInMonth(2000, 2, 29)).toBe(29);
  });

  it('day 0 is the last day of every month', () => {
    expect(run(monthly(0), '2026-11-30', 5)).toEqual(['2026-11-30', '2026-12-31', '2027-01-31', '2027-02-28', '2027-03-31']);
  });

  it('an interval of N months skips N-1 months, keeping the day asked for', () => {
    expect(run(monthly(31, 3), '2026-01-31', 4)).toEqual(['2026-01-31', '2026-04-30', '2026-07-31', '2026-10-31']);
    expect(run(monthly(15, 12), '2026-03-15', 3)).toEqual(['2026-03-15', '2027-03-15', '2028-03-15']);
  });

  it('twice monthly bills both days of each month, in order, across the year end', () => {
    expect(run(twice(1, 15), '2026-12-01', 5)).toEqual(['2026-12-01', '2026-12-15', '2027-01-01', '2027-01-15', '2027-02-01']);
  });

  it('twice monthly on the 15th and the last day, through February', () => {
    expect(run(twice(15, 0), '2027-01-15', 6)).toEqual(['2027-01-15', '2027-01-31', '2027-02-15', '2027-02-28', '2027-03-15', '2027-03-31']);
  });

  it('twice monthly whose two days fall on one short month’s last day bills that day once', () => {
    expect(run(twice(29, 30), '2027-01-29', 4)).toEqual(['2027-01-29', '2027-01-30', '2027-02-28', '2027-03-29']);
  });

  it('twice monthly every 2 months skips the month between', () => {
    expect(run(twice(1, 15, 2), '2026-01-15', 4)).toEqual(['2026-01-15', '2026-03-01', '2026-03-15', '2026-05-01']);
  });

  it('daily every N days, across months and a leap day', () => {
    expect(run(daily(), '2028-02-28', 3)).toEqual(['2028-02-28', '2028-02-29', '2028-03-01']);
    expect(run(daily(10), '2026-12-25', 3)).toEqual(['2026-12-25', '2027-01-04', '2027-01-14']);
  });

  it('the first bill date is the first billing day on or after the start', () => {
    expect(firstBillDate(monthly(1), '2026-11-27')).toBe('2026-12-01');
    expect(firstBillDate(monthly(27), '2026-11-27')).toBe('2026-11-27');
    expect(firstBillDate(monthly(31), '2026-11-27')).toBe('2026-11-30');
    expect(firstBillDate(monthly(0), '2027-02-01')).toBe('2027-02-28');
    expect(firstBillDate(twice(1, 15), '2026-11-16')).toBe('2026-12-01');
    expect(firstBillDate(twice(1, 15), '2026-11-02')).toBe('2026-11-15');
    expect(firstBillDate(daily(3), '2026-11-27')).toBe('2026-11-27');
  });

  it('after a late billing, the next date is the first still ahead (missed cycles are not charged in a burst)', () => {
    expect(nextBillDateAfter(monthly(1), '2026-01-01', '2026-03-10')).toBe('2026-04-01');
    expect(nextBillDateAfter(monthly(1), '2026-01-01', '2026-01-05')).toBe('2026-02-01');
    expect(nextBillDateAfter(daily(), '2026-01-01', '2026-01-03')).toBe('2026-01-04');
  });

  it('billing_days is parsed per frequency, refusing what does not fit', () => {
    expect(parseBillingDays('monthly', '0')).toEqual({ ok: true, days: [0] });
    expect(parseBillingDays('twice_monthly', '0,15')).toEqual({ ok: true, days: [15, 0] });
    expect(parseBillingDays('twice_monthly', '15, 1')).toEqual({ ok: true, days: [1, 15] });
    expect(parseBillingDays('daily', 'anything')).toEqual({ ok: true, days: [] });
    for (const [frequency, text] of [
      ['monthly', '32'],
      ['monthly', '1,15'],
      ['monthly', ''],
      ['twice_monthly', '1'],
      ['twice_monthly', '5,5'],
      ['twice_monthly', '0,31'],
      ['monthly', '-1'],
    ] as const) {
      expect(parseBillingDays(frequency, text).ok, `${frequency} ${text}`).toBe(false);
    }
  });

  it('dates are real calendar dates', () => {
    expect(parseDate('2026-02-29')).toBeNull();
    expect(parseDate('2028-02-29')).not.toBeNull();
    expect(parseDate('2026-13-01')).toBeNull();
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
  });
});

describe('billing amounts', () => {
  const addOn = (amount: number, percentage: number, duration: number) => ({ id: 'a', name: 'a', description: '', amount, percentage, duration });

  it('add-ons and discounts apply for their duration in billings, 0 meaning every billing', () => {
    const addOns = [addOn(500, 0, 2)];
    const discounts = [addOn(0, 10_000, 1), addOn(100, 0, 0)];
    expect(billingAmount(2000, addOns, discounts, 0)).toEqual({ base: 2000, adds: 500, discounts: 300, total: 2200 });
    expect(billingAmount(2000, addOns, discounts, 1)).toEqual({ base: 2000, adds: 500, discounts: 100, total: 2400 });
    expect(billingAmount(2000, addOns, discounts, 2)).toEqual({ base: 2000, adds: 0, discounts: 100, total: 1900 });
    expect(billingAmount(2000, addOns, discounts, 500)).toEqual({ base: 2000, adds: 0, discounts: 100, total: 1900 });
  });

  it('a percentage is in thousandths of a percent, rounded to the cent; a billing never goes below zero', () => {
    expect(billingAmount(999, [addOn(0, 43_440, 0)], [], 0).adds).toBe(434);
    expect(billingAmount(1000, [], [addOn(5000, 0, 0)], 0).total).toBe(0);
  });
});
