/**
 * The lookup's optional `amount` (issue 31): the surcharge the merchant may add to it, its
 * configured rate limited by the cap in force, the same a sale computes from base_amount.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { importCsv, lookupBin, lookupOk } from '../helpers/bins';

let greedy: TestMerchant; // 5%: above every cap
let modest: TestMerchant; // 1.5%: under them

const VISA = '411111';
const MASTERCARD = '555544';
const DEBIT = '400005';
const DE_COMMERCIAL = '535100';
const AMEX_CHARGE = '371449';

beforeAll(async () => {
  greedy = await createMerchant({ name: 'Greedy Shop', surcharge_rate_bps: 500 });
  modest = await createMerchant({ name: 'Modest Shop', surcharge_rate_bps: 150 });
  await importCsv(
    [
      'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial',
      `${VISA},visa,Credit Bank,credit,classic,US,false,false`,
      `${MASTERCARD},mastercard,Credit Bank,credit,world,US,false,false`,
      `${DEBIT},visa,Debit Bank,debit,classic,US,false,false`,
      `${DE_COMMERCIAL},mastercard,DE Business Bank,debit,business,DE,false,true`,
      `${AMEX_CHARGE},amex,American Express,charge,green,US,false,false`,
    ].join('\n'),
  );
});

const surchargeOf = (body: Record<string, unknown>) => ({
  is_surchargeable: body.is_surchargeable,
  surcharge_amount: body.surcharge_amount,
  surcharge_rate_bps: body.surcharge_rate_bps,
  surcharge_cap_bps: body.surcharge_cap_bps,
  surcharge_at_cost: body.surcharge_at_cost,
});

describe('lookup with amount', () => {
  it("answers the merchant's rate limited by the lowest cap in force: each network's, then the state's", async () => {
    const at = async (key: string, bin: string, state: string) => surchargeOf(await lookupOk(key, { bin, country: 'US', state, amount: 10_000 }));
    expect(await at(greedy.secretKey, VISA, 'GA')).toEqual({ is_surchargeable: true, surcharge_amount: 300, surcharge_rate_bps: 300, surcharge_cap_bps: 300, surcharge_at_cost: true });
    expect(await at(greedy.secretKey, MASTERCARD, 'GA')).toEqual({ is_surchargeable: true, surcharge_amount: 400, surcharge_rate_bps: 400, surcharge_cap_bps: 400, surcharge_at_cost: true });
    // Amex: never more than on other cards, so never above Visa's 3%.
    expect(await at(greedy.secretKey, AMEX_CHARGE, 'GA')).toEqual({ is_surchargeable: true, surcharge_amount: 300, surcharge_rate_bps: 300, surcharge_cap_bps: 300, surcharge_at_cost: false });
    expect(await at(greedy.secretKey, VISA, 'OK')).toEqual({ is_surchargeable: true, surcharge_amount: 200, surcharge_rate_bps: 200, surcharge_cap_bps: 200, surcharge_at_cost: true });
    expect(await at(modest.secretKey, VISA, 'OK')).toEqual({ is_surchargeable: true, surcharge_amount: 150, surcharge_rate_bps: 150, surcharge_cap_bps: 200, surcharge_at_cost: true });
  });

  it('answers 0 where no surcharge may be added, and no cap', async () => {
    const none = { is_surchargeable: false, surcharge_amount: 0, surcharge_rate_bps: 0, surcharge_cap_bps: undefined, surcharge_at_cost: false };
    expect(surchargeOf(await lookupOk(greedy.secretKey, { bin: VISA, country: 'US', state: 'CT', amount: 10_000 }))).toEqual(none);
    expect(surchargeOf(await lookupOk(greedy.secretKey, { bin: DEBIT, country: 'US', state: 'GA', amount: 10_000 }))).toEqual(none);
    // An unknown BIN keeps its minimal body, with the surcharge fields.
    expect(await lookupOk(greedy.secretKey, { bin: '499999', country: 'US', state: 'GA', amount: 10_000 })).toEqual({
      bin: '499999',
      card_brand: 'visa',
      is_surchargeable: false,
      surcharge_amount: 0,
      surcharge_rate_bps: 0,
      surcharge_at_cost: false,
    });
  });

  it('applies an at-cost rule without a numeric cap: the merchant rate (its cost) is the surcharge', async () => {
    expect(surchargeOf(await lookupOk(greedy.secretKey, { bin: DE_COMMERCIAL, country: 'DE', state: 'BY', amount: 2_000 }))).toEqual({
      is_surchargeable: true,
      surcharge_amount: 100,
      surcharge_rate_bps: 500,
      surcharge_cap_bps: undefined,
      surcharge_at_cost: true,
    });
  });

  it('never rounds above the cap: 3% of 1,999 is 59.97, so 59', async () => {
    expect(await lookupOk(greedy.secretKey, { bin: VISA, country: 'US', state: 'GA', amount: 1_999 })).toMatchObject({ surcharge_amount: 59 });
  });

  it('leaves the answer unchanged without amount', async () => {
    const body = await lookupOk(greedy.secretKey, { bin: VISA, country: 'US', state: 'GA' });
    expect(Object.keys(body).filter((key) => key.startsWith('surcharge_'))).toEqual([]);
    expect(body).toEqual({
      bin: VISA,
      card_brand: 'visa',
      issuing_bank: 'Credit Bank',
      card_type: 'credit',
      card_level_generic: 'classic',
      country: 'US',
      is_surchargeable: true,
      payment_method_type: 'card',
      is_prepaid: false,
      is_commercial: false,
    });
  });

  it('refuses an amount without the place of sale, or not a whole positive number of minor units', async () => {
    const refusal = async (body: Record<string, unknown>) => {
      const response = await lookupBin(greedy.secretKey, { bin: VISA, ...body });
      expect(response.status).toBe(400);
      return (await response.json<Envelope>()).msg;
    };
    expect(await refusal({ amount: 100 })).toBe('amount: needs country and state (the place of sale, whose rules decide the surcharge)');
    expect(await refusal({ country: 'US', amount: 100 })).toMatch(/^amount: needs country and state/);
    expect(await refusal({ country: 'US', state: 'GA', amount: 10.5 })).toBe('amount: must be a whole number of minor units (cents)');
    expect(await refusal({ country: 'US', state: 'GA', amount: 0 })).toBe('amount: must be 1 or more (minor units)');
    expect(await refusal({ country: 'US', state: 'GA', amount: '100' })).toBe('amount: must be a whole number of minor units (cents)');
  });
});

describe('a lookup and a sale agree', () => {
  it('on the surcharge of the same amount, card and place', async () => {
    for (const [state, amount] of [['OK', 10_000], ['GA', 1_999], ['NY', 12_345], ['CT', 5_000]] as const) {
      const lookup = await lookupOk(greedy.secretKey, { bin: VISA, country: 'US', state, amount });
      const sale = await call('POST', '/api/transaction', {
        key: greedy.secretKey,
        body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', base_amount: amount, billing_country: 'US', billing_state: state },
      });
      expect(sale.status).toBe(201);
      const record = (await sale.json<Envelope<Record<string, unknown>>>()).data;
      expect(record.service_fee, state).toBe(lookup.surcharge_amount);
      expect(record.amount, state).toBe(amount + Number(lookup.surcharge_amount));
    }
  });
});
