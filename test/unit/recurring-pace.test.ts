import { describe, expect, it } from 'vitest';
import { BILL_STEP_CHARGES, billStepCharges, billingPacePerSecond, nextStepAt } from '../../src/services/recurring/billing';

describe('the billing pace', () => {
  it('is half of what the merchant’s rate tier lets its API send; standard without a tier', () => {
    expect(billingPacePerSecond('standard')).toBe(25);
    expect(billingPacePerSecond('high')).toBe(125);
    expect(billingPacePerSecond('max')).toBe(500);
    expect(billingPacePerSecond(null)).toBe(25);
  });

  it('puts the next step off until the step’s attempts fit the pace, never before now', () => {
    const full = { charged: BILL_STEP_CHARGES - 10, declined: 7, skipped: 3 };
    // 300 attempts at 25 a second: 12 s after the step began, however fast it went.
    expect(nextStepAt(1_000_000, 1_002_000, full, 'standard')).toBe(1_012_000);
    // At 500 a second the step's own 2 s already cover 300 attempts (0.6 s): at once.
    expect(nextStepAt(1_000_000, 1_002_000, full, 'max')).toBe(1_002_000);
  });

  it('takes fewer charges a step when the day’s API sub-shards make each page cost more subrequests', () => {
    expect(billStepCharges(1)).toBe(300);
    expect(billStepCharges(2)).toBe(300);
    // 8 sub-shards: about 96 subrequests a page, 5 pages under half of the 1,000 planned.
    expect(billStepCharges(8)).toBe(250);
  });
});
