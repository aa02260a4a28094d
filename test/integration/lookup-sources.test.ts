// BIN lookup by temp_token and by vault customer_id (SPEC.md "BIN lookup flow", step 2).
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv, lookupBin, lookupOk } from '../helpers/bins';

const VISA = '4111111111111111';
const MASTERCARD_DEBIT = '5555555555554444';

let shop: TestMerchant;
let other: TestMerchant;

beforeAll(async () => {
  shop = await createMerchant({ name: 'Sources Shop' });
  other = await createMerchant({ name: 'Other Shop' });
  await importCsv(
    [
      'bin,card_brand,issuing_bank,card_type,card_level_generic,country',
      '411111,visa,Token Bank,credit,classic,US',
      '555555,mastercard,Debit Union,debit,standard,US',
    ].join('\n'),
  );
});

async function tempToken(publicKey: string, number = VISA): Promise<string> {
  const response = await call('POST', '/api/tokenizer/token', {
    key: publicKey,
    body: { cc_number: number, cc_expiration: '12/39', cc_cvc: '123' },
  });
  expect(response.status).toBe(201);
  return (await response.json<{ data: { temp_token: string } }>()).data.temp_token;
}

async function createCustomer(key: string, body: unknown): Promise<{ id: string; payment_methods: { id: string; type: string }[] }> {
  const response = await call('POST', '/api/vault/customer', { key, body });
  expect(response.status).toBe(201);
  return (await response.json<{ data: { id: string; payment_methods: { id: string; type: string }[] } }>()).data;
}

describe('lookup by temp_token', () => {
  it("answers the tokenized card's metadata, and the token stays usable", async () => {
    const token = await tempToken(shop.publicKey);
    const body = await lookupOk(shop.secretKey, { temp_token: token, country: 'US', state: 'CA' });
    expect(body).toEqual({
      bin: '411111',
      card_brand: 'visa',
      issuing_bank: 'Token Bank',
      card_type: 'credit',
      card_level_generic: 'classic',
      country: 'US',
      is_surchargeable: true,
      payment_method_type: 'card',
    });
    expect(JSON.stringify(body)).not.toContain(VISA);
    expect((await lookupBin(shop.secretKey, { temp_token: token })).status).toBe(200);
  });

  it("answers 400 for an unknown token and for another merchant's token", async () => {
    const unknown = await lookupBin(shop.secretKey, { temp_token: 'tok_' + 'A'.repeat(32) });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({ status: 'failed', msg: 'temp_token: unknown or expired token', data: null });

    const othersToken = await tempToken(other.publicKey);
    const foreign = await lookupBin(shop.secretKey, { temp_token: othersToken });
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toEqual({ status: 'failed', msg: 'temp_token: unknown or expired token', data: null });
  });
});

describe('lookup by customer_id', () => {
  it("uses the default payment method, or the one named by payment_method_id", async () => {
    const customer = await createCustomer(shop.secretKey, {
      id: 'lookup1',
      payment_method: { card: { number: VISA, expiration: '12/39' } },
    });
    const added = await call('POST', '/api/vault/customer/lookup1/card', {
      key: shop.secretKey,
      body: { number: MASTERCARD_DEBIT, expiration: '01/40' },
    });
    // Adding a method answers the whole customer and the new method's id (FluidPay's answer, issue 34).
    const debit = { id: (await added.json<{ data: { created_payment_method_id: string } }>()).data.created_payment_method_id };

    expect(await lookupOk(shop.secretKey, { customer_id: customer.id })).toMatchObject({ bin: '411111', card_type: 'credit' });
    expect(await lookupOk(shop.secretKey, { customer_id: 'lookup1', payment_method_id: debit.id })).toMatchObject({
      bin: '555555',
      card_brand: 'mastercard',
      card_type: 'debit',
    });
  });

  it('answers payment_method_type "ach" without card fields for a bank account', async () => {
    await createCustomer(shop.secretKey, {
      id: 'achonly',
      payment_method: { ach: { account_number: '000123456789', routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' } },
    });
    expect(await lookupOk(shop.secretKey, { customer_id: 'achonly' })).toEqual({ payment_method_type: 'ach' });
    expect(await lookupOk(shop.secretKey, { customer_id: 'achonly', country: 'US', state: 'CA' })).toEqual({
      payment_method_type: 'ach',
      is_surchargeable: false,
    });
  });

  it('never calls a surcharge-exempt customer surchargeable', async () => {
    await createCustomer(shop.secretKey, {
      id: 'exempt1',
      flags: ['surcharge_exempt'],
      payment_method: { card: { number: VISA, expiration: '12/39' } },
    });
    expect(await lookupOk(shop.secretKey, { customer_id: 'exempt1', country: 'US', state: 'CA' })).toMatchObject({
      card_type: 'credit',
      is_surchargeable: false,
    });
    expect(await lookupOk(shop.secretKey, { bin: '411111', country: 'US', state: 'CA' })).toMatchObject({ is_surchargeable: true });
  });

  it("answers 400 naming the field for an unknown customer, an unknown method, and another merchant's customer", async () => {
    await createCustomer(other.secretKey, { id: 'theirs1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const cases: [unknown, string][] = [
      [{ customer_id: 'nosuchcustomer' }, 'customer_id: no vault customer nosuchcustomer'],
      [{ customer_id: 'theirs1' }, 'customer_id: no vault customer theirs1'],
    ];
    for (const [body, msg] of cases) {
      const response = await lookupBin(shop.secretKey, body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ status: 'failed', msg, data: null });
    }
    await createCustomer(shop.secretKey, { id: 'onecard', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const response = await lookupBin(shop.secretKey, { customer_id: 'onecard', payment_method_id: 'pm_nosuchmethod' });
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toMatch(/^payment_method_id: /);
  });
});
