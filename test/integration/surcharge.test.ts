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
      '455700,visa,German Consumer Bank,credit,gold,DE,false,false',
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

  it('follows the shipped rules outside the US: Quebec no, Ontario yes, EU consumer no, EU commercial yes', async () => {
    expect(await surchargeable('411111', 'CA', 'QC')).toBe(false);
    expect(await surchargeable('411111', 'CA', 'ON')).toBe(true);
    expect(await surchargeable('455700', 'DE', 'BY')).toBe(false); // a consumer card issued in the EEA
    expect(await surchargeable('411111', 'DE', 'BY')).toBe(true); // a US-issued one: outside the EU ban (issue 31)
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
  it("replaces the operator's rules, and lookups follow at once; the shipped rules stay", async () => {
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
    // Canada's shipped rules are not the operator's to delete (issue 31: a PUT replaces the operator's set).
    expect(await surchargeable('411111', 'CA', 'ON')).toBe(true);

    // The next PUT replaces that set: without its Texas ban, Texas follows the shipped rules again.
    const again = await admin('PUT', '/admin/surcharge-rules', { rules: [] });
    expect(again.status).toBe(200);
    expect((await again.json<{ data: { rules: unknown[] } }>()).data.rules).toEqual([]);
    expect(await surchargeable('411111', 'US', 'TX')).toBe(true);
  });

  it('answers 400 naming the field for a malformed rule', async () => {
    const response = await admin('PUT', '/admin/surcharge-rules', {
      rules: [{ country: 'USA', region: '*', effective_from: '2020-01-01', surcharge: 'allowed' }],
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ msg: 'rules.0.country: must be a two-letter country code' });
  });
});

describe('GET /admin/surcharge-rules', () => {
  interface Rule {
    origin: string;
    layer: string;
    country: string;
    region: string;
    effective_from: string;
    brands: string[];
    funding: string[];
    surcharge: string;
    max_rate_bps: number | null;
  }
  const rules = async (query: string): Promise<Rule[]> => {
    const response = await admin('GET', `/admin/surcharge-rules${query}`);
    expect(response.status).toBe(200);
    return (await response.json<{ data: { rules: Rule[] } }>()).data.rules;
  };

  it('lists every rule with its origin, history included', async () => {
    const all = await rules('');
    expect(all.filter((rule) => rule.origin === 'shipped').length).toBeGreaterThan(100);
    expect(all.filter((rule) => rule.country === 'US' && rule.region === 'CO' && rule.funding.includes('credit')).map((rule) => rule.effective_from)).toEqual([
      '2000-01-01',
      '2022-07-01',
    ]);
  });

  it('lists the rules in force at a place on a date: one per line', async () => {
    const colorado = (date: string) => rules(`?in_force_on=${date}&country=us&region=co`);
    const before = await colorado('2022-06-30');
    const after = await colorado('2022-07-01');
    const coCredit = (list: Rule[]) => list.filter((rule) => rule.region === 'CO' && rule.funding.includes('credit'));
    expect(coCredit(before)).toMatchObject([{ effective_from: '2000-01-01', surcharge: 'prohibited' }]);
    expect(coCredit(after)).toMatchObject([{ effective_from: '2022-07-01', surcharge: 'allowed', max_rate_bps: 200 }]);
    // The country's network rules apply there too: Visa's 3% from 2023-04-15.
    expect(after.some((rule) => rule.region === '*' && rule.layer === 'network')).toBe(true);
    expect(after.every((rule) => rule.country === 'US' && (rule.region === '*' || rule.region === 'CO'))).toBe(true);
    const visa = (list: Rule[]) => list.filter((rule) => rule.layer === 'network' && rule.brands.includes('visa') && rule.funding.includes('credit'));
    expect(visa(after)).toMatchObject([{ effective_from: '2013-01-27', max_rate_bps: 400 }]);
    expect(visa(await colorado('2023-04-15'))).toMatchObject([{ effective_from: '2023-04-15', max_rate_bps: 300 }]);
  });

  it("lists one origin: the operator's own rules, to edit and PUT back", async () => {
    const put = await admin('PUT', '/admin/surcharge-rules', {
      rules: [{ country: 'US', region: 'HI', effective_from: '2030-01-01', surcharge: 'prohibited', funding: ['credit'], note: 'future ban (test)' }],
    });
    expect(put.status).toBe(200);
    const own = await rules('?origin=operator');
    expect(own).toMatchObject([{ origin: 'operator', country: 'US', region: 'HI', funding: ['credit'], layer: 'law' }]);
    const again = await admin('PUT', '/admin/surcharge-rules', { rules: own });
    expect(again.status).toBe(200);
    expect(await rules('?origin=operator')).toEqual(own);
    await admin('PUT', '/admin/surcharge-rules', { rules: [] });
  });

  it('refuses a shipped rule in a PUT, and a malformed query, naming the field', async () => {
    const [shipped] = await rules('?origin=shipped&country=NZ');
    const put = await admin('PUT', '/admin/surcharge-rules', { rules: [shipped] });
    expect(put.status).toBe(400);
    expect(await put.json()).toMatchObject({ msg: expect.stringMatching(/^rules\.0\.origin: rules of origin shipped come with the release/) });
    for (const [query, msg] of [
      ['?region=CO', 'region: is only used with country'],
      ['?in_force_on=2022-13-01', 'in_force_on: must be a date, YYYY-MM-DD'],
      ['?origin=mine', 'origin: must be shipped or operator'],
    ]) {
      const response = await admin('GET', `/admin/surcharge-rules${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json(), query).toMatchObject({ msg });
    }
  });
});
