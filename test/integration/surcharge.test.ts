import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { lookupCard } from '../../src/services/bin-lookup/card-metadata';
import { isSurchargeable } from '../../src/services/bin-lookup/surcharge';
import { admin, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv, lookupOk } from '../helpers/bins';

let merchant: TestMerchant;

beforeAll(async () => {
  merchant = await createMerchant();
  await importCsv(
    [
      'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial',
      '411111,visa,Credit Bank,credit,classic,US,false,false',
      '400005,visa,Debit Bank,debit,classic,US,false,false',
      '510510,mastercard,Prepaid Bank,credit,prepaid,US,true,false',
      '555544,mastercard,Business Bank,credit,business,US,false,true',
    ].join('\n'),
  );
});

async function surchargeable(bin: string, country: string, state: string): Promise<unknown> {
  return (await lookupOk(merchant.secretKey, { bin, country, state })).is_surchargeable;
}

describe('is_surchargeable', () => {
  it('is true for a credit card in a US state that allows surcharges', async () => {
    expect(await surchargeable('411111', 'US', 'TX')).toBe(true);
    expect(await surchargeable('411111', 'us', 'ny')).toBe(true);
    expect(await surchargeable('411111', 'US', 'CO')).toBe(true); // capped at 2%, still allowed
  });

  it('is false in Connecticut, Massachusetts, Maine and Puerto Rico', async () => {
    for (const state of ['CT', 'MA', 'ME', 'PR']) expect(await surchargeable('411111', 'US', state)).toBe(false);
  });

  it('is false for debit and prepaid cards', async () => {
    expect(await surchargeable('400005', 'US', 'TX')).toBe(false);
    expect(await surchargeable('510510', 'US', 'TX')).toBe(false);
  });

  it('is false for an unknown BIN and an unknown region', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '499999', country: 'US', state: 'TX' })).toEqual({
      bin: '499999',
      card_brand: 'visa',
      is_surchargeable: false,
    });
    expect(await surchargeable('411111', 'ZZ', 'X')).toBe(false);
  });

  it('follows the seeded rules outside the US: Quebec no, Ontario yes, EU consumer no, EU commercial yes', async () => {
    expect(await surchargeable('411111', 'CA', 'QC')).toBe(false);
    expect(await surchargeable('411111', 'CA', 'ON')).toBe(true);
    expect(await surchargeable('411111', 'DE', 'BY')).toBe(false);
    expect(await surchargeable('555544', 'DE', 'BY')).toBe(true);
    expect(await surchargeable('411111', 'GB', 'LND')).toBe(false);
  });

  it('is absent unless both country and state are sent', async () => {
    for (const extra of [{}, { country: 'US' }, { state: 'TX' }]) {
      expect(await lookupOk(merchant.secretKey, { bin: '411111', ...extra })).not.toHaveProperty('is_surchargeable');
    }
  });

  it('is false for a surcharge-exempt customer', async () => {
    const card = await lookupCard(env, '411111', { enhanced: false });
    const region = { country: 'US', state: 'TX' };
    expect(await isSurchargeable(env, card, region, { customerExempt: false, now: new Date() })).toBe(true);
    expect(await isSurchargeable(env, card, region, { customerExempt: true, now: new Date() })).toBe(false);
  });

  it('applies the rule in force on the given date', async () => {
    const card = await lookupCard(env, '411111', { enhanced: false });
    // Canada allows surcharges from 2022-10-06 on.
    const ontario = { country: 'CA', state: 'ON' };
    expect(await isSurchargeable(env, card, ontario, { customerExempt: false, now: new Date('2022-10-05T12:00:00Z') })).toBe(false);
    expect(await isSurchargeable(env, card, ontario, { customerExempt: false, now: new Date('2022-10-06T12:00:00Z') })).toBe(true);
  });
});

describe('PUT /admin/surcharge-rules', () => {
  it('replaces the rules, and lookups follow at once', async () => {
    expect(await surchargeable('411111', 'US', 'TX')).toBe(true);
    const response = await admin('PUT', '/admin/surcharge-rules', {
      rules: [
        { country: 'us', region: '*', effective_from: '2013-01-27', surcharge: 'allowed', max_rate_bps: 300 },
        { country: 'US', region: 'tx', effective_from: '2020-01-01', surcharge: 'prohibited', note: 'test rule' },
        { country: 'US', region: 'NV', effective_from: '2999-01-01', surcharge: 'prohibited' },
      ],
    });
    expect(response.status).toBe(200);
    const { data } = await response.json<{ data: { rules: { country: string; region: string }[] } }>();
    expect(data.rules.map((rule) => `${rule.country}/${rule.region}`)).toEqual(['US/*', 'US/NV', 'US/TX']);
    expect(await surchargeable('411111', 'US', 'TX')).toBe(false);
    expect(await surchargeable('411111', 'US', 'NV')).toBe(true); // its ban is not in force yet
    expect(await surchargeable('411111', 'CA', 'ON')).toBe(false); // no rule for Canada any more
  });

  it('answers 400 naming the field for a malformed rule', async () => {
    const response = await admin('PUT', '/admin/surcharge-rules', {
      rules: [{ country: 'USA', region: '*', effective_from: '2020-01-01', surcharge: 'allowed' }],
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ msg: 'rules.0.country: must be a two-letter country code' });
    const empty = await admin('PUT', '/admin/surcharge-rules', { rules: [] });
    expect(empty.status).toBe(400);
  });
});
