/**
 * The engine with real data: BIN records imported through the admin API, the seeded surcharge
 * rules, and customers created through the vault API.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { lookupCard, lookupCards } from '../../src/services/bin-lookup/card-metadata';
import { processTransactions } from '../../src/services/recorded';
import { call, createMerchant, type TestMerchant, type Envelope } from '../helpers/api';
import { importCsv } from '../helpers/bins';
import { apiShardName, shardEntries } from '../helpers/ledger';
import { randomId } from '../../src/lib/crypto';

type TxRecord = Record<string, string | number | boolean | null>;

const CREDIT_8 = '4111111111111111'; // BIN 41111111 (8 digits), credit
const CREDIT = '4242424242424242'; // BIN 424242, credit
const DEBIT = '5555555555554444'; // BIN 555555, debit
const PREPAID = '5105105105105100'; // BIN 510510, prepaid credit
const SURCHARGED = { transaction_type: 'sale', cc_expiration: '12/30', billing_country: 'US', billing_state: 'NY' };

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Surcharge Shop', surcharge_rate_bps: 300 });
  const answer = await importCsv(
    [
      'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial',
      '41111111,visa,Eight Digit Bank,credit,classic,US,false,false',
      '424242,visa,Credit Bank,CREDIT,classic,US,false,false',
      '555555,mastercard,Debit Bank,debit,classic,US,false,false',
      '510510,mastercard,Prepaid Bank,credit,prepaid,US,true,false',
    ].join('\n'),
  );
  expect(answer.imported).toBe(4);
  const ranges = await importCsv(
    ['low,high,issuing_bank,card_level_generic,country', '4242424240,4242424249,Range Bank,platinum,CA'].join('\n'),
    '/admin/bins/ranges/import',
  );
  expect(ranges.imported).toBe(1);
});

function post(body: unknown): Promise<Response> {
  return call('POST', '/api/transaction', { key: shop.secretKey, body });
}

async function charge(body: unknown): Promise<TxRecord> {
  const response = await post(body);
  const envelope = await response.json<Envelope<TxRecord>>();
  if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${JSON.stringify(envelope)}`);
  return envelope.data;
}

async function vaultCustomer(body: unknown): Promise<void> {
  const response = await call('POST', '/api/vault/customer', { key: shop.secretKey, body });
  expect(response.status, await response.clone().text()).toBe(201);
}

describe('card data from the BIN lookup', () => {
  it('takes card_type from the BIN record and masks 8 digits when an 8-digit BIN matched', async () => {
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT_8, amount: 1000 })).toMatchObject({ card_type: 'credit', masked_account: '41111111****1111' });
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT, amount: 1000 })).toMatchObject({ card_type: 'credit', masked_account: '424242******4242' });
    expect(await charge({ ...SURCHARGED, cc_number: DEBIT, amount: 1000 })).toMatchObject({ card_type: 'debit', masked_account: '555555******4444' });
    expect(await charge({ ...SURCHARGED, cc_number: '6011111111111117', amount: 1000 })).toMatchObject({ card_type: null, masked_account: '601111******1117' });
    const stored = [...(await shardEntries(apiShardName(shop.id))).values()];
    const results = [...new Map(stored.map((s) => [s.record.masked_account, { masked_account: s.record.masked_account, card_brand: s.extras.card_brand }])).values()].sort((a, b) =>
      String(a.masked_account).localeCompare(String(b.masked_account)),
    );
    expect(results).toEqual([
      { masked_account: '41111111****1111', card_brand: 'visa' },
      { masked_account: '424242******4242', card_brand: 'visa' },
      { masked_account: '555555******4444', card_brand: 'mastercard' },
      { masked_account: '601111******1117', card_brand: 'discover' },
    ]);
  });
});

describe('bulk card metadata (one D1 query per chunk)', () => {
  it('answers exactly what lookupCard answers, card by card, in order', async () => {
    const numbers = [CREDIT_8, CREDIT, DEBIT, PREPAID, '6011111111111117', '4111112222222228', CREDIT, '4242424250000008'];
    for (const enhanced of [false, true]) {
      const single = await Promise.all(numbers.map((number) => lookupCard(env, number, { enhanced })));
      expect(await lookupCards(env, numbers, { enhanced })).toEqual(single);
    }
    // The account range answers for 4242424242424242 with the enhanced lookup only.
    const [plain] = await lookupCards(env, [CREDIT], { enhanced: false });
    const [enhanced] = await lookupCards(env, [CREDIT], { enhanced: true });
    expect(plain).toMatchObject({ issuing_bank: 'Credit Bank', country: 'US' });
    expect(enhanced).toMatchObject({ issuing_bank: 'Range Bank', card_level_generic: 'platinum', country: 'CA', card_type: 'credit' });
    expect(await lookupCards(env, [], { enhanced: false })).toEqual([]);
  });

  it('serves a chunk of distinct cards without a KV operation per card', async () => {
    const luhn = (partial: string) => {
      for (let check = 0; check < 10; check++) {
        const number = partial + check;
        let sum = 0;
        for (let i = 0; i < number.length; i++) {
          let digit = Number(number[number.length - 1 - i]);
          if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
          sum += digit;
        }
        if (sum % 10 === 0) return number;
      }
      throw new Error('unreachable');
    };
    const cachedEntries = async () =>
      (await env.BIN_CACHE.list({ prefix: 'bin:' })).keys.length + (await env.BIN_CACHE.list({ prefix: 'range:' })).keys.length;
    for (const enhancedBinLookup of [false, true]) {
      const caller = { merchantId: shop.id, merchantName: shop.name, keyId: 'key_test', keyType: 'secret' as const, enhancedBinLookup, surchargeRateBps: 300, maxCreditAmount: 100_000 };
      const batchId = randomId(20, 'bat_');
      const requests = Array.from({ length: 200 }, (_, i) => ({
        input: { transaction_type: 'sale', cc_number: luhn(`424242${String(i).padStart(5, '0')}1234`), cc_expiration: '12/30', amount: '1000' },
        idempotencyKey: `${batchId}:${i + 2}`,
        line: i + 2,
      }));
      const before = await cachedEntries();
      const outcomes = await processTransactions(env, caller, requests, { source: 'batch', ipAddress: null, batchId }, () => new Date());
      expect(outcomes.every((o) => o.ok && o.record.card_type === 'credit')).toBe(true);
      expect(await cachedEntries()).toBe(before);
    }
  });
});

describe('computed surcharge', () => {
  it('adds the merchant rate to base_amount for a credit card where surcharges are allowed', async () => {
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT, base_amount: 10000, tax_amount: 825 })).toMatchObject({
      amount: 11125,
      service_fee: 300,
      tax_amount: 825,
      response: 'approved',
      amount_authorized: 11125,
    });
    // 1999 x 3% = 59.97: half up would be 60, above Visa's 3% cap (a given surcharge of 60 is refused
    // for that), so the computed one stops at the cap too: 59 (issue 31: the lookup's amount agrees).
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT, base_amount: 1999 })).toMatchObject({ amount: 2058, service_fee: 59 });
    expect((await post({ ...SURCHARGED, cc_number: CREDIT, base_amount: 1999, surcharge: 60 })).status).toBe(400);
  });

  it('adds none for debit and prepaid cards, in a prohibiting state, without a region, or when exempt', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['debit', { cc_number: DEBIT }],
      ['prepaid', { cc_number: PREPAID }],
      ['Connecticut', { cc_number: CREDIT, billing_state: 'CT' }],
      ['Quebec', { cc_number: CREDIT, billing_country: 'CA', billing_state: 'QC' }],
      ['no region', { cc_number: CREDIT, billing_state: undefined }],
      ['row exempt', { cc_number: CREDIT, surcharge_exempt: 'true' }],
    ];
    for (const [name, fields] of cases) {
      const record = await charge({ ...SURCHARGED, base_amount: 10000, ...fields });
      expect([record.amount, record.service_fee], name).toEqual([10000, 0]);
    }
  });

  it('accepts a consistent amount with the computed surcharge and refuses one without it', async () => {
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT, base_amount: 10000, amount: 10300 })).toMatchObject({ amount: 10300, service_fee: 300 });
    const response = await post({ ...SURCHARGED, cc_number: CREDIT, base_amount: 10000, amount: 10000 });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).errors).toEqual([
      { field: 'amount', msg: 'must equal base_amount + surcharge + tax_amount = 10000 + 300 + 0 = 10300' },
    ]);
  });

  it('refuses a given surcharge on a card or in a region that may not be surcharged', async () => {
    for (const fields of [{ cc_number: DEBIT }, { cc_number: PREPAID }, { cc_number: CREDIT, billing_state: 'MA' }]) {
      const response = await post({ ...SURCHARGED, amount: 1030, surcharge: 30, ...fields });
      expect(response.status).toBe(400);
      expect((await response.json<Envelope>()).errors?.[0]?.field).toBe('surcharge');
    }
    expect(await charge({ ...SURCHARGED, cc_number: CREDIT, amount: 1030, surcharge: 30 })).toMatchObject({ amount: 1030, service_fee: 30 });
  });

  it("follows the vault customer's surcharge_exempt flag", async () => {
    await vaultCustomer({ id: 'surchExempt', flags: ['surcharge_exempt'], payment_method: { card: { number: CREDIT, expiration: '12/30' } } });
    await vaultCustomer({ id: 'surchPlain', payment_method: { card: { number: CREDIT, expiration: '12/30' } } });
    const base = { transaction_type: 'sale', base_amount: 10000, billing_country: 'US', billing_state: 'TX' };
    expect(await charge({ ...base, customer_id: 'surchExempt' })).toMatchObject({ amount: 10000, service_fee: 0, payment_method: 'customer', card_type: 'credit' });
    expect(await charge({ ...base, customer_id: 'surchPlain' })).toMatchObject({ amount: 10300, service_fee: 300, payment_method: 'customer', card_type: 'credit' });
  });

  it('never surcharges an ACH payment, from the vault or not', async () => {
    await vaultCustomer({
      id: 'surchAch',
      payment_method: { ach: { account_number: '000111222333', routing_number: '021000021', account_type: 'checking', sec_code: 'PPD' } },
    });
    expect(await charge({ transaction_type: 'sale', customer_id: 'surchAch', base_amount: 10000, billing_country: 'US', billing_state: 'TX' })).toMatchObject({
      amount: 10000,
      service_fee: 0,
      payment_type: 'ach',
      sec_code: 'PPD',
      account_type: 'checking',
      masked_account: '********2333',
    });
  });
});

describe('surcharge caps from the seeded rules', () => {
  it("computes at most the region's cap: Colorado's 2%, Visa's 3% elsewhere in the US", async () => {
    const greedy = await createMerchant({ name: 'Greedy Shop', surcharge_rate_bps: 400 });
    const sale = async (state: string, extra: Record<string, unknown> = {}) => {
      const response = await call('POST', '/api/transaction', {
        key: greedy.secretKey,
        body: { ...SURCHARGED, billing_state: state, cc_number: CREDIT, base_amount: 10_000, ...extra },
      });
      return { status: response.status, body: await response.json<Envelope<TxRecord>>() };
    };
    expect((await sale('CO')).body.data).toMatchObject({ amount: 10_200, service_fee: 200 });
    expect((await sale('TX')).body.data).toMatchObject({ amount: 10_300, service_fee: 300 });

    const refused = await sale('CO', { surcharge: 250 });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([
      { field: 'surcharge', msg: "exceeds the billing region's cap of 2.00% of 10000 (at most 200)" },
    ]);
  });
});
