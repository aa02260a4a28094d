/**
 * `is_surchargeable` against the law and the card networks' rules of late 2026 (issue 31): BINs of
 * known profiles imported through the admin API, asked where the sale takes place. Dated cases go
 * through the policy with an injected clock; the others through the lookup API.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { lookupCard } from '../../src/services/bin-lookup/card-metadata';
import { isSurchargeable } from '../../src/services/bin-lookup/surcharge';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { importCsv, lookupOk } from '../helpers/bins';

let merchant: TestMerchant;

const US_VISA_CREDIT = '411111';
const US_VISA_DEBIT = '400005';
const US_AMEX_CHARGE = '371449';
const DE_VISA_CONSUMER_DEBIT = '455600';
const DE_VISA_CONSUMER_CREDIT = '455700';
const DE_MC_COMMERCIAL_DEBIT = '535100';
const DE_AMEX_CONSUMER_CREDIT = '374500';
const GB_VISA_COMMERCIAL_DEBIT = '475100';
const GB_VISA_CONSUMER_CREDIT = '475200';
const AU_VISA_CREDIT = '456400';
const AU_VISA_DEBIT = '456500';
const AU_MC_COMMERCIAL_CREDIT = '545600';
const AU_AMEX_CREDIT = '376000';
const NZ_VISA_CREDIT = '457000';
const NZ_VISA_DEBIT = '457100';

beforeAll(async () => {
  merchant = await createMerchant({ name: 'Surcharge Law Shop', surcharge_rate_bps: 300 });
  const answer = await importCsv(
    [
      'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial',
      `${US_VISA_CREDIT},visa,US Credit Bank,credit,classic,US,false,false`,
      `${US_VISA_DEBIT},visa,US Debit Bank,debit,classic,US,false,false`,
      `${US_AMEX_CHARGE},amex,American Express,charge,green,US,false,false`,
      `${DE_VISA_CONSUMER_DEBIT},visa,DE Debit Bank,debit,classic,DE,false,false`,
      `${DE_VISA_CONSUMER_CREDIT},visa,DE Credit Bank,credit,gold,DE,false,false`,
      `${DE_MC_COMMERCIAL_DEBIT},mastercard,DE Business Bank,debit,business,DE,false,true`,
      `${DE_AMEX_CONSUMER_CREDIT},amex,American Express Europe,credit,gold,DE,false,false`,
      `${GB_VISA_COMMERCIAL_DEBIT},visa,GB Business Bank,debit,business,GB,false,true`,
      `${GB_VISA_CONSUMER_CREDIT},visa,GB Credit Bank,credit,classic,GB,false,false`,
      `${AU_VISA_CREDIT},visa,AU Credit Bank,credit,classic,AU,false,false`,
      `${AU_VISA_DEBIT},visa,AU Debit Bank,debit,classic,AU,false,false`,
      `${AU_MC_COMMERCIAL_CREDIT},mastercard,AU Business Bank,credit,corporate,AU,false,true`,
      `${AU_AMEX_CREDIT},amex,American Express Australia,credit,platinum,AU,false,false`,
      `${NZ_VISA_CREDIT},visa,NZ Credit Bank,credit,classic,NZ,false,false`,
      `${NZ_VISA_DEBIT},visa,NZ Debit Bank,debit,classic,NZ,false,false`,
    ].join('\n'),
  );
  expect(answer.errors).toEqual([]);
});

/** The lookup's answer, through the API (today's date). */
async function surchargeable(bin: string, country: string, state: string): Promise<unknown> {
  return (await lookupOk(merchant.secretKey, { bin, country, state })).is_surchargeable;
}

/** The policy at an exact instant (the injected clock). */
async function surchargeableAt(bin: string, country: string, state: string, instant: string): Promise<boolean> {
  const card = await lookupCard(env, bin, { enhanced: false });
  return isSurchargeable(env, card, { country, state }, { customerExempt: false, now: new Date(instant) });
}

describe('charge cards', () => {
  it('are surcharged like credit cards in the US, and not where the state bans it', async () => {
    expect(await surchargeable(US_AMEX_CHARGE, 'US', 'GA')).toBe(true);
    expect(await surchargeable(US_AMEX_CHARGE, 'US', 'CO')).toBe(true);
    expect(await surchargeable(US_AMEX_CHARGE, 'US', 'CT')).toBe(false);
  });
});

describe('the EU/EEA and the UK', () => {
  it('allow a surcharge on commercial cards, debit included', async () => {
    expect(await surchargeable(DE_MC_COMMERCIAL_DEBIT, 'DE', 'BY')).toBe(true);
    expect(await surchargeable(DE_MC_COMMERCIAL_DEBIT, 'NL', 'NH')).toBe(true);
    expect(await surchargeable(GB_VISA_COMMERCIAL_DEBIT, 'GB', 'LND')).toBe(true);
  });

  it('ban it on consumer cards issued in the EEA (UK: on every consumer card)', async () => {
    expect(await surchargeable(DE_VISA_CONSUMER_DEBIT, 'DE', 'BY')).toBe(false);
    expect(await surchargeable(DE_VISA_CONSUMER_CREDIT, 'FR', 'IDF')).toBe(false);
    expect(await surchargeable(GB_VISA_CONSUMER_CREDIT, 'GB', 'LND')).toBe(false);
    expect(await surchargeable(US_VISA_CREDIT, 'GB', 'LND')).toBe(false);
  });

  it('allow it on a consumer card issued outside the EEA, except in Italy, which bans every consumer surcharge', async () => {
    expect(await surchargeable(US_VISA_CREDIT, 'DE', 'BY')).toBe(true);
    expect(await surchargeable(US_VISA_CREDIT, 'ES', 'MD')).toBe(true);
    expect(await surchargeable(US_VISA_CREDIT, 'IT', 'RM')).toBe(false);
  });

  it('leave three-party consumer cards (Amex) out of the interchange ban', async () => {
    expect(await surchargeable(DE_AMEX_CONSUMER_CREDIT, 'DE', 'BY')).toBe(true);
    expect(await surchargeable(DE_AMEX_CONSUMER_CREDIT, 'IT', 'RM')).toBe(false);
  });

  it("follow the UK's history: consumer surcharges at cost from 2013-04-06 to 2018-01-12", async () => {
    expect(await surchargeableAt(GB_VISA_CONSUMER_CREDIT, 'GB', 'LND', '2017-06-01T12:00:00Z')).toBe(true);
    expect(await surchargeableAt(GB_VISA_CONSUMER_CREDIT, 'GB', 'LND', '2018-01-13T12:00:00Z')).toBe(false);
  });
});

describe('Australia', () => {
  it('allows every card until 30 September 2026, debit included', async () => {
    expect(await surchargeableAt(AU_VISA_CREDIT, 'AU', 'NSW', '2026-06-01T00:00:00Z')).toBe(true);
    expect(await surchargeableAt(AU_VISA_DEBIT, 'AU', 'NSW', '2026-06-01T00:00:00Z')).toBe(true);
  });

  it('ends Visa, Mastercard and eftpos surcharges at local midnight of 1 October 2026', async () => {
    // 1 October begins at 14:00 UTC in Sydney (AEST, UTC+10) and at 16:00 UTC in Perth (AWST, UTC+8).
    expect(await surchargeableAt(AU_VISA_CREDIT, 'AU', 'NSW', '2026-09-30T13:59:00Z')).toBe(true);
    expect(await surchargeableAt(AU_VISA_CREDIT, 'AU', 'NSW', '2026-09-30T14:01:00Z')).toBe(false);
    expect(await surchargeableAt(AU_VISA_CREDIT, 'AU', 'WA', '2026-09-30T15:59:00Z')).toBe(true);
    expect(await surchargeableAt(AU_VISA_CREDIT, 'AU', 'WA', '2026-09-30T16:01:00Z')).toBe(false);
    expect(await surchargeableAt(AU_VISA_DEBIT, 'AU', 'NSW', '2026-10-02T00:00:00Z')).toBe(false);
    expect(await surchargeableAt(AU_MC_COMMERCIAL_CREDIT, 'AU', 'VIC', '2026-10-02T00:00:00Z')).toBe(false);
  });

  it('still allows American Express after the change', async () => {
    expect(await surchargeableAt(AU_AMEX_CREDIT, 'AU', 'NSW', '2026-10-02T00:00:00Z')).toBe(true);
    expect(await surchargeable(AU_AMEX_CREDIT, 'AU', 'QLD')).toBe(true);
    expect(await surchargeable(AU_VISA_CREDIT, 'AU', 'QLD')).toBe(false);
  });
});

describe('New Zealand', () => {
  it('allows surcharges, credit and debit (the in-store ban bill has not been enacted)', async () => {
    expect(await surchargeable(NZ_VISA_CREDIT, 'NZ', 'AUK')).toBe(true);
    expect(await surchargeable(NZ_VISA_DEBIT, 'NZ', 'AUK')).toBe(true);
  });
});

describe('US territories', () => {
  it('answer the same for Guam sent as its own country and as a US region', async () => {
    expect(await surchargeable(US_VISA_CREDIT, 'GU', 'GU')).toBe(true);
    expect(await surchargeable(US_VISA_CREDIT, 'US', 'GU')).toBe(true);
    expect(await surchargeable(US_VISA_DEBIT, 'GU', 'GU')).toBe(false);
    expect(await surchargeable(US_VISA_DEBIT, 'US', 'GU')).toBe(false);
  });

  it('ban surcharges in Puerto Rico either way', async () => {
    expect(await surchargeable(US_VISA_CREDIT, 'PR', 'SJ')).toBe(false);
    expect(await surchargeable(US_VISA_CREDIT, 'US', 'PR')).toBe(false);
  });
});

describe('US history', () => {
  it('Colorado prohibited surcharges until SB21-091 took effect on 2022-07-01', async () => {
    expect(await surchargeableAt(US_VISA_CREDIT, 'US', 'CO', '2022-06-30T18:00:00Z')).toBe(false);
    expect(await surchargeableAt(US_VISA_CREDIT, 'US', 'CO', '2022-07-01T18:00:00Z')).toBe(true);
  });

  it('the networks allowed credit surcharges only from 2013-01-27', async () => {
    expect(await surchargeableAt(US_VISA_CREDIT, 'US', 'GA', '2013-01-26T18:00:00Z')).toBe(false);
    expect(await surchargeableAt(US_VISA_CREDIT, 'US', 'GA', '2013-01-27T18:00:00Z')).toBe(true);
  });
});

describe("Oklahoma's 2% cap", () => {
  it("limits a sale's computed surcharge (the merchant's rate is 3%)", async () => {
    const response = await call('POST', '/api/transaction', {
      key: merchant.secretKey,
      body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', base_amount: 10_000, billing_country: 'US', billing_state: 'OK' },
    });
    expect(response.status).toBe(201);
    expect((await response.json<Envelope<Record<string, unknown>>>()).data).toMatchObject({ amount: 10_200, service_fee: 200 });
  });
});

describe('layers', () => {
  it("a state rule cannot lift its country's ban", async () => {
    const put = await admin('PUT', '/admin/surcharge-rules', {
      rules: [
        { country: 'US', region: '*', effective_from: '2020-01-01', surcharge: 'prohibited', note: 'a nationwide ban (test)' },
        { country: 'US', region: 'GA', effective_from: '2020-01-01', surcharge: 'allowed', note: 'a state that allows (test)' },
      ],
    });
    expect(put.status).toBe(200);
    expect(await surchargeable(US_VISA_CREDIT, 'US', 'GA')).toBe(false);
    expect(await surchargeable(US_VISA_CREDIT, 'US', 'TX')).toBe(false);
  });
});
