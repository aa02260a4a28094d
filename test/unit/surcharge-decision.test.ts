/** The surcharge decision as a pure function of rules, card, place and instant. */
import { describe, expect, it } from 'vitest';
import type { CardMetadata } from '../../src/services/bin-lookup/card-metadata';
import { allowedSurcharge, decideSurcharge, fundingOf, issuerRegionOf, rulesInForce } from '../../src/services/bin-lookup/surcharge-decision';
import type { SurchargeRule } from '../../src/storage/surcharge-rules';

function rule(fields: Partial<SurchargeRule> & Pick<SurchargeRule, 'country' | 'surcharge'>): SurchargeRule {
  return {
    origin: 'operator',
    layer: 'law',
    region: '*',
    effective_from: '2000-01-01',
    brands: [],
    except_brands: [],
    funding: [],
    card_class: null,
    issuer_region: [],
    max_rate_bps: null,
    at_cost: false,
    note: null,
    ...fields,
  };
}

const card = (fields: Partial<CardMetadata> = {}): CardMetadata => ({
  bin: '411111',
  card_brand: 'visa',
  card_type: 'credit',
  country: 'US',
  prepaid: false,
  commercial: false,
  payment_method_type: 'card',
  matched_length: 6,
  ...fields,
});

const NOW = new Date('2026-11-25T12:00:00Z');
const US_GA = { country: 'US', region: 'GA' };

describe('funding and issuer region', () => {
  it('map card types: charge and deferred debit are charge, prepaid wins over the type', () => {
    expect(fundingOf({ card_type: 'credit' })).toBe('credit');
    expect(fundingOf({ card_type: 'CHARGE' })).toBe('charge');
    expect(fundingOf({ card_type: 'deferred_debit' })).toBe('charge');
    expect(fundingOf({ card_type: 'debit' })).toBe('debit');
    expect(fundingOf({ card_type: 'credit', prepaid: true })).toBe('prepaid');
    expect(fundingOf({ card_type: 'debit', card_level_generic: 'Prepaid Reloadable' })).toBe('prepaid');
    expect(fundingOf({})).toBeNull();
  });

  it("place the issuer relative to the place of sale, with the EEA's membership on the date", () => {
    expect(issuerRegionOf('DE', 'DE', '2026-11-25')).toBe('domestic');
    expect(issuerRegionOf('FR', 'DE', '2026-11-25')).toBe('area');
    expect(issuerRegionOf('US', 'DE', '2026-11-25')).toBe('foreign');
    expect(issuerRegionOf('GB', 'DE', '2019-06-01')).toBe('area'); // the UK left the EEA on 2020-12-31
    expect(issuerRegionOf('GB', 'DE', '2021-01-01')).toBe('foreign');
    expect(issuerRegionOf('FR', 'US', '2026-11-25')).toBe('foreign');
    expect(issuerRegionOf(undefined, 'DE', '2026-11-25')).toBeNull();
  });
});

describe('rules in force', () => {
  it('keep, of each line, the latest rule not after the date; the operator’s on a tie', () => {
    const old = rule({ country: 'US', region: 'CO', effective_from: '2000-01-01', surcharge: 'prohibited' });
    const current = rule({ country: 'US', region: 'CO', effective_from: '2022-07-01', surcharge: 'allowed' });
    const future = rule({ country: 'US', region: 'CO', effective_from: '2999-01-01', surcharge: 'prohibited' });
    const otherLine = rule({ country: 'US', region: 'CO', funding: ['debit'], surcharge: 'prohibited' });
    expect(rulesInForce([old, current, future, otherLine], '2022-06-30')).toEqual([old, otherLine]);
    expect(rulesInForce([old, current, future, otherLine], '2022-07-01')).toEqual([current, otherLine]);

    const shipped = rule({ origin: 'shipped', country: 'NZ', surcharge: 'allowed' });
    const override = rule({ origin: 'operator', country: 'NZ', surcharge: 'prohibited' });
    expect(rulesInForce([shipped, override], '2026-11-25')).toEqual([override]);
    expect(rulesInForce([override, shipped], '2026-11-25')).toEqual([override]);
  });
});

describe('decideSurcharge', () => {
  it('needs at least one allowing rule: no rule, no surcharge', () => {
    expect(decideSurcharge([], card(), US_GA, NOW).allowed).toBe(false);
    expect(decideSurcharge([rule({ country: 'US', surcharge: 'allowed' })], card(), US_GA, NOW).allowed).toBe(true);
  });

  it('lets every layer veto, and takes the lowest cap and any at-cost limit of the allowing rules', () => {
    const rules = [
      rule({ country: 'US', layer: 'network', brands: ['visa'], surcharge: 'allowed', max_rate_bps: 300, at_cost: true }),
      rule({ country: 'US', region: 'GA', surcharge: 'allowed', max_rate_bps: 250 }),
      rule({ country: 'US', region: 'CT', surcharge: 'prohibited' }),
    ];
    expect(decideSurcharge(rules, card(), US_GA, NOW)).toEqual({ allowed: true, maxRateBps: 250, atCost: true });
    expect(decideSurcharge(rules, card(), { country: 'US', region: 'TX' }, NOW)).toEqual({ allowed: true, maxRateBps: 300, atCost: true });
    expect(decideSurcharge(rules, card(), { country: 'US', region: 'CT' }, NOW).allowed).toBe(false);
    // A mastercard is named by no allowing rule in Texas: no surcharge.
    expect(decideSurcharge(rules, card({ card_brand: 'mastercard' }), { country: 'US', region: 'TX' }, NOW).allowed).toBe(false);
  });

  it('fails closed on unknown facts: they fit a prohibition, never an allowance', () => {
    const rules = [
      rule({ country: 'DE', surcharge: 'allowed', at_cost: true }),
      rule({ country: 'DE', card_class: 'consumer', issuer_region: ['domestic', 'area'], surcharge: 'prohibited' }),
    ];
    const place = { country: 'DE', region: 'BY' };
    expect(decideSurcharge(rules, card({ country: 'US' }), place, NOW).allowed).toBe(true);
    expect(decideSurcharge(rules, card({ country: undefined }), place, NOW).allowed).toBe(false);
    expect(decideSurcharge(rules, card({ country: 'DE', commercial: undefined }), place, NOW).allowed).toBe(false);
    expect(decideSurcharge(rules, card({ country: 'DE', commercial: true }), place, NOW).allowed).toBe(true);

    const creditOnly = [rule({ country: 'US', funding: ['credit', 'charge'], surcharge: 'allowed' })];
    expect(decideSurcharge(creditOnly, card({ card_type: undefined }), US_GA, NOW).allowed).toBe(false);
  });

  it('reads commercial_only (the first model’s verdict) as allowed for commercial cards only', () => {
    const rules = [rule({ country: 'GB', surcharge: 'commercial_only' })];
    const place = { country: 'GB', region: 'LND' };
    expect(decideSurcharge(rules, card({ commercial: true }), place, NOW).allowed).toBe(true);
    expect(decideSurcharge(rules, card({ commercial: false }), place, NOW).allowed).toBe(false);
    expect(decideSurcharge(rules, card({ commercial: undefined }), place, NOW).allowed).toBe(false);
  });

  it('excludes brands by except_brands', () => {
    const rules = [rule({ country: 'DE', surcharge: 'allowed' }), rule({ country: 'DE', except_brands: ['amex'], surcharge: 'prohibited' })];
    const place = { country: 'DE', region: 'BE' };
    expect(decideSurcharge(rules, card({ card_brand: 'amex' }), place, NOW).allowed).toBe(true);
    expect(decideSurcharge(rules, card({ card_brand: 'visa' }), place, NOW).allowed).toBe(false);
  });

  it('answers false for a region the data does not know, where the law differs by region', () => {
    const rules = [rule({ country: 'US', surcharge: 'allowed' })];
    expect(decideSurcharge(rules, card(), { country: 'US', region: 'ZZ' }, NOW).allowed).toBe(false);
  });

  it('switches at local midnight of the place of sale', () => {
    const rules = [rule({ country: 'AU', surcharge: 'allowed' }), rule({ country: 'AU', effective_from: '2026-10-01', surcharge: 'prohibited' })];
    const at = (region: string, iso: string) => decideSurcharge(rules, card({ country: 'AU' }), { country: 'AU', region }, new Date(iso)).allowed;
    expect(at('NSW', '2026-09-30T13:59:59Z')).toBe(true);
    expect(at('NSW', '2026-09-30T14:00:00Z')).toBe(false);
    expect(at('WA', '2026-09-30T15:59:59Z')).toBe(true);
    expect(at('WA', '2026-09-30T16:00:00Z')).toBe(false);
  });
});

describe('allowedSurcharge', () => {
  it("is the merchant's rate limited by the cap, never above the cap by rounding", () => {
    expect(allowedSurcharge(10_000, 300, { allowed: true, maxRateBps: 200 })).toEqual({ rateBps: 200, surcharge: 200 });
    expect(allowedSurcharge(10_000, 150, { allowed: true, maxRateBps: 200 })).toEqual({ rateBps: 150, surcharge: 150 });
    expect(allowedSurcharge(10_000, 500, { allowed: true, maxRateBps: null })).toEqual({ rateBps: 500, surcharge: 500 });
    // 2% of 1,999 is 39.98: half up would be 40, over the cap; 1.5% of 1,999 is 29.985, half up 30.
    expect(allowedSurcharge(1_999, 300, { allowed: true, maxRateBps: 200 })).toEqual({ rateBps: 200, surcharge: 39 });
    expect(allowedSurcharge(1_999, 150, { allowed: true, maxRateBps: 200 })).toEqual({ rateBps: 150, surcharge: 30 });
    expect(allowedSurcharge(10_000, 300, { allowed: false, maxRateBps: null })).toEqual({ rateBps: 0, surcharge: 0 });
  });
});
