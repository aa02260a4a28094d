import { describe, expect, it } from 'vitest';
import { computeAmounts, needsSurchargeRule, surchargeFor, type SurchargeFacts } from '../../src/services/transactions/amounts';
import type { AmountFields } from '../../src/services/transactions/validation';

const NONE: AmountFields = { amount: null, baseAmount: null, surcharge: null, shippingAmount: null, taxAmount: null, discountAmount: null };
const CARD: SurchargeFacts = { isCard: true, exemption: null, regionGiven: true, surchargeable: true, maxRateBps: null, rateBps: 300 };

describe('surchargeFor', () => {
  it('rounds base x rate half up to a whole minor unit', () => {
    expect(surchargeFor(10_000, 300)).toBe(300);
    expect(surchargeFor(1_999, 300)).toBe(60); // 59.97
    expect(surchargeFor(1_950, 300)).toBe(59); // 58.5 -> 59
    expect(surchargeFor(1_949, 300)).toBe(58); // 58.47
    expect(surchargeFor(99_999_999_999, 10_000)).toBe(99_999_999_999);
  });
});

describe('computeAmounts with amount', () => {
  it('takes amount as the total and its parts as given', () => {
    const result = computeAmounts('sale', { ...NONE, amount: 1_000, surcharge: 30, shippingAmount: 100, taxAmount: 70, discountAmount: 50 }, false, CARD);
    expect(result).toEqual({ ok: true, value: { amount: 1_000, baseAmount: null, surcharge: 30, shippingAmount: 100, taxAmount: 70, discountAmount: 50 } });
  });

  it('refuses parts that add up to more than the total', () => {
    const result = computeAmounts('sale', { ...NONE, amount: 100, shippingAmount: 60, taxAmount: 50 }, false, CARD);
    expect(result).toEqual({ ok: false, errors: [{ field: 'amount', msg: 'must include surcharge + shipping_amount + tax_amount = 110' }] });
  });

  it('never computes a surcharge when only amount is given', () => {
    const result = computeAmounts('sale', { ...NONE, amount: 1_000 }, false, CARD);
    expect(result.ok && result.value.surcharge).toBe(0);
  });

  it('refuses 0 for a sale or credit, allows it for an authorize', () => {
    expect(computeAmounts('sale', { ...NONE, amount: 0 }, false, CARD).ok).toBe(false);
    expect(computeAmounts('credit', { ...NONE, amount: 0 }, false, CARD).ok).toBe(false);
    expect(computeAmounts('authorize', { ...NONE, amount: 0 }, false, CARD).ok).toBe(true);
  });

  it('refuses tax on a tax-exempt transaction', () => {
    expect(computeAmounts('sale', { ...NONE, amount: 100, taxAmount: 5 }, true, CARD)).toEqual({
      ok: false,
      errors: [{ field: 'tax_amount', msg: 'must be 0 when tax_exempt is true' }],
    });
    expect(computeAmounts('sale', { ...NONE, amount: 100, taxAmount: 0 }, true, CARD).ok).toBe(true);
  });
});

describe('computeAmounts with base_amount', () => {
  it('adds the computed surcharge and the tax', () => {
    const result = computeAmounts('sale', { ...NONE, baseAmount: 10_000, taxAmount: 825 }, false, CARD);
    expect(result).toEqual({ ok: true, value: { amount: 11_125, baseAmount: 10_000, surcharge: 300, shippingAmount: 0, taxAmount: 825, discountAmount: 0 } });
  });

  it('uses the surcharge column instead of computing one', () => {
    const result = computeAmounts('sale', { ...NONE, baseAmount: 10_000, surcharge: 150 }, false, CARD);
    expect(result.ok && result.value.amount).toBe(10_150);
  });

  it('computes no surcharge when the card may not be surcharged or someone is exempt', () => {
    for (const facts of [
      { ...CARD, surchargeable: false },
      { ...CARD, exemption: 'row' as const, surchargeable: null },
      { ...CARD, exemption: 'customer' as const, surchargeable: null },
      { ...CARD, isCard: false, surchargeable: null },
      { ...CARD, rateBps: 0 },
    ]) {
      const result = computeAmounts('sale', { ...NONE, baseAmount: 10_000 }, false, facts);
      expect(result.ok && result.value).toMatchObject({ amount: 10_000, surcharge: 0 });
    }
  });

  it('accepts a consistent amount and refuses an inconsistent one, showing the sum', () => {
    expect(computeAmounts('sale', { ...NONE, amount: 10_400, baseAmount: 10_000, taxAmount: 100 }, false, CARD).ok).toBe(true);
    expect(computeAmounts('sale', { ...NONE, amount: 10_100, baseAmount: 10_000, taxAmount: 100 }, false, CARD)).toEqual({
      ok: false,
      errors: [{ field: 'amount', msg: 'must equal base_amount + surcharge + tax_amount = 10000 + 300 + 100 = 10400' }],
    });
  });
});

describe('surcharge refusals', () => {
  const given = { ...NONE, amount: 1_030, surcharge: 30 };
  const refusal = (facts: SurchargeFacts) => {
    const result = computeAmounts('sale', given, false, facts);
    return result.ok ? null : result.errors.find((e) => e.field === 'surcharge')?.msg;
  };

  it('refuses a surcharge the rules do not allow, saying why', () => {
    expect(refusal({ ...CARD, surchargeable: false })).toContain('may not be surcharged in the billing region');
    expect(refusal({ ...CARD, regionGiven: false, surchargeable: null })).toContain('billing_country and billing_state');
    expect(refusal({ ...CARD, exemption: 'row', surchargeable: null })).toContain('surcharge_exempt');
    expect(refusal({ ...CARD, exemption: 'customer', surchargeable: null })).toContain('vault customer is surcharge-exempt');
    expect(refusal({ ...CARD, isCard: false, surchargeable: null })).toContain('ACH');
    expect(refusal(CARD)).toBeNull();
  });

  it('accepts a zero surcharge whatever the rules', () => {
    expect(computeAmounts('sale', { ...NONE, amount: 100, surcharge: 0 }, false, { ...CARD, isCard: false, surchargeable: null }).ok).toBe(true);
  });
});

describe('needsSurchargeRule', () => {
  const facts = { isCard: true, exemption: null, regionGiven: true, rateBps: 300 };
  it('asks the rules only when a surcharge is given or must be computed', () => {
    expect(needsSurchargeRule({ ...NONE, baseAmount: 100 }, facts)).toBe(true);
    expect(needsSurchargeRule({ ...NONE, amount: 100, surcharge: 3 }, facts)).toBe(true);
    expect(needsSurchargeRule({ ...NONE, amount: 100 }, facts)).toBe(false);
    expect(needsSurchargeRule({ ...NONE, amount: 100, surcharge: 0 }, facts)).toBe(false);
    expect(needsSurchargeRule({ ...NONE, baseAmount: 100 }, { ...facts, rateBps: 0 })).toBe(false);
    expect(needsSurchargeRule({ ...NONE, baseAmount: 100 }, { ...facts, exemption: 'row' })).toBe(false);
    expect(needsSurchargeRule({ ...NONE, baseAmount: 100 }, { ...facts, regionGiven: false })).toBe(false);
  });
});

describe('regional surcharge caps', () => {
  const CAPPED: SurchargeFacts = { ...CARD, rateBps: 400, maxRateBps: 200 };

  it('computes a surcharge at the lower of the merchant rate and the cap', () => {
    expect(computeAmounts('sale', { ...NONE, baseAmount: 10_000 }, false, CAPPED)).toMatchObject({
      ok: true,
      value: { surcharge: 200, amount: 10_200 },
    });
    expect(computeAmounts('sale', { ...NONE, baseAmount: 10_000 }, false, { ...CAPPED, rateBps: 150 })).toMatchObject({
      ok: true,
      value: { surcharge: 150, amount: 10_150 },
    });
  });

  it('refuses a given surcharge above the cap, and accepts one at it', () => {
    expect(computeAmounts('sale', { ...NONE, baseAmount: 10_000, surcharge: 201 }, false, CAPPED)).toEqual({
      ok: false,
      errors: [{ field: 'surcharge', msg: "exceeds the billing region's cap of 2.00% of 10000 (at most 200)" }],
    });
    expect(computeAmounts('sale', { ...NONE, baseAmount: 10_000, surcharge: 200 }, false, CAPPED)).toMatchObject({ ok: true });
    // Without base_amount the base is the total less its parts: 10,250 - 250 = 10,000.
    expect(computeAmounts('sale', { ...NONE, amount: 10_250, surcharge: 250 }, false, CAPPED)).toMatchObject({ ok: false });
    expect(computeAmounts('sale', { ...NONE, amount: 10_200, surcharge: 200 }, false, CAPPED)).toMatchObject({ ok: true });
  });
});
