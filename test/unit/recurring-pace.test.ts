import { describe, expect, it } from 'vitest';
import { BILL_STEP_CHARGES, billingPacePerSecond, nextStepAt } from '../../src/services/recurring/billing';

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
});
