/** POST /api/transaction and GET /api/transaction/{id}, through the Worker's fetch handler. */
import { env } from 'cloudflare:workers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULT_COLUMNS } from '../../src/schemas/transaction-columns';
import { admin, call, createMerchant, type TestMerchant, type Envelope } from '../helpers/api';
import { ISSUER_DECLINE_CARDS } from '../helpers/sandbox';
import { d1Tables, describeFindings, findSecrets, scanD1, scanObject } from '../helpers/leak-scan';
import { apiShardName, shardEntries, shardRowCounts } from '../helpers/ledger';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

type TxRecord = Record<string, string | number | boolean | null>;

const VISA = '4111111111111111';
const SALE = { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: 1000 };
const ACH = {
  transaction_type: 'sale',
  ach_account_number: '123456789',
  ach_routing_number: '021000021',
  ach_account_type: 'checking',
  ach_sec_code: 'WEB',
  amount: 2500,
};

// Everything the Worker logs while these tests run is kept, to check no card data reaches a log.
const logged: string[] = [];
const originals = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug };
beforeAll(() => {
  for (const name of Object.keys(originals) as (keyof typeof originals)[]) {
    console[name] = (...args: unknown[]) => {
      logged.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
    };
  }
});
afterAll(() => Object.assign(console, originals));

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Transaction Shop', surcharge_rate_bps: 300 });
  other = await createMerchant({ name: 'Other Shop' });
});

function post(body: unknown, options: { key?: string; idempotencyKey?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  return call('POST', '/api/transaction', { key: options.key ?? shop.secretKey, body, headers });
}

async function charge(body: unknown, options: { key?: string; idempotencyKey?: string; headers?: Record<string, string> } = {}): Promise<TxRecord> {
  const response = await post(body, options);
  const envelope = await response.json<Envelope<TxRecord>>();
  if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${JSON.stringify(envelope)}`);
  return envelope.data;
}

/** The failing fields of a 400 answer. */
async function refused(body: unknown): Promise<Record<string, string>> {
  const response = await post(body);
  const envelope = await response.json<Envelope>();
  expect(response.status, JSON.stringify(envelope)).toBe(400);
  expect(envelope).toMatchObject({ status: 'failed', data: null });
  return Object.fromEntries((envelope.errors ?? []).map((e) => [e.field, e.msg]));
}

describe('authentication', () => {
  it('needs the secret key', async () => {
    expect((await post(SALE, { key: '' })).status).toBe(401);
    expect((await post(SALE, { key: shop.publicKey })).status).toBe(401);
    expect((await call('GET', '/api/transaction/txn_abc', { key: shop.publicKey })).status).toBe(401);
  });
});

describe('the transaction record', () => {
  it('answers 201 with every result column, typed, and GET answers the same record', async () => {
    const response = await post(
      { ...SALE, cc_cvc: '123', order_id: 'ORD1001', po_number: 'PO77', description: 'Two widgets', email_address: 'ana@example.com', billing_first_name: 'Ana', billing_postal_code: '90210', billing_country: 'US', shipping_city: 'Austin', tax_amount: 80, shipping_amount: 120 },
      { headers: { 'CF-Connecting-IP': '198.51.100.7' } },
    );
    expect(response.status).toBe(201);
    const { status, msg, data } = await response.json<Envelope<TxRecord>>();
    expect({ status, msg }).toEqual({ status: 'success', msg: 'success' });
    // The result CSV's columns in order, then amount_refunded (a field of the JSON record only), then
    // FluidPay's fields derived from them (issue 34: the record FluidPay's clients read).
    expect(Object.keys(data)).toEqual([
      ...RESULT_COLUMNS,
      'amount_refunded',
      ...['merchant_id', 'base_amount', 'surcharge', 'tip_amount', 'currency', 'response_body', 'billing_address', 'shipping_address', 'updated_at'],
    ]);
    expect(data).toMatchObject({
      user_name: 'Transaction Shop',
      type: 'sale',
      transaction_source: 'api',
      ip_address: '198.51.100.7',
      amount: 1000,
      amount_authorized: 1000,
      amount_captured: 1000,
      amount_settled: 0,
      tip: 0,
      service_fee: 0,
      tax_amount: 80,
      tax_exempt: false,
      shipping_amount: 120,
      po_number: 'PO77',
      order_id: 'ORD1001',
      settlement_batch_id: null,
      referenced_transaction_id: null,
      payment_method: 'card',
      payment_type: 'card',
      response: 'approved',
      response_code: 100,
      status: 'pending_settlement',
      processor_type: 'sandbox',
      processor_id: `sandbox_${shop.id}`,
      processor_name: 'Sandbox',
      subscription_id: null,
      currency_iso_code: 'USD',
      customer_id: null,
      email_address: 'ana@example.com',
      billing_first_name: 'Ana',
      billing_postal_code: '90210',
      billing_country: 'US',
      shipping_city: 'Austin',
      billing_last_name: null,
      settled_at: null,
      entry_type: 'keyed',
      masked_account: '411111******1111',
      expiration: '12/30',
      processor_response_code: '00',
      processor_response_text: 'APPROVED',
      sec_code: null,
      account_type: null,
      avs_response_code: 'Y',
      cvv_response_code: 'M',
    });
    // An API transaction id names its ledger shard: the UTC day, then 20 characters of the key's hash (docs/transactions.md).
    expect(data.id).toMatch(/^txn_a[0-9]{8}[0-9a-v]{20}$/);
    expect(data.idempotency_key).toMatch(/^auto_/);
    expect(data.auth_code).toMatch(/^[A-Z0-9]{6}$/);
    expect(data.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(data.captured_at).toBe(data.created_at);

    const fetched = await call('GET', `/api/transaction/${String(data.id)}`, { key: shop.secretKey });
    expect(fetched.status).toBe(200);
    // GET adds the transaction's email receipts (none asked for here).
    expect((await fetched.json<Envelope<TxRecord>>()).data).toEqual({ ...data, receipts: [] });
  });

  it("answers 404 for another merchant's transaction and for an unknown id, 400 for a malformed one", async () => {
    const record = await charge(SALE);
    expect((await call('GET', `/api/transaction/${String(record.id)}`, { key: other.secretKey })).status).toBe(404);
    const unknown = await call('GET', '/api/transaction/txn_00000000000000000000', { key: shop.secretKey });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ status: 'failed', msg: 'transaction not found', data: null });
    expect((await call('GET', '/api/transaction/not-an-id', { key: shop.secretKey })).status).toBe(400);
  });

  it('marks an approved authorize as authorized and not captured, a credit as pending settlement', async () => {
    expect(await charge({ ...SALE, transaction_type: 'authorize' })).toMatchObject({
      type: 'authorize',
      status: 'authorized',
      amount_authorized: 1000,
      amount_captured: 0,
      captured_at: null,
    });
    expect(await charge({ ...SALE, transaction_type: 'credit' })).toMatchObject({ type: 'credit', status: 'pending_settlement', amount_captured: 1000 });
  });

  it('records an ACH sale with its SEC code, account type and the last 4 of the account', async () => {
    expect(await charge({ ...ACH, ach_sec_code: 'ppd', ach_account_type: 'savings' })).toMatchObject({
      payment_method: 'ach',
      payment_type: 'ach',
      response: 'approved',
      response_code: 100,
      status: 'pending_settlement',
      sec_code: 'PPD',
      account_type: 'savings',
      masked_account: '*****6789',
      card_type: null,
      entry_type: null,
      expiration: null,
      avs_response_code: null,
      cvv_response_code: null,
    });
  });
});

describe('validation through the HTTP door', () => {
  it('answers 400 naming every failing field, and accepts each rule\'s valid form', async () => {
    // [field that fails, invalid body, a valid body for the same rule]
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['transaction_type', { ...SALE, transaction_type: 'refund' }, { ...SALE, transaction_type: 'credit' }],
      ['cc_number, ach_account_number or customer_id', { transaction_type: 'sale', amount: 100 }, SALE],
      ['cc_number, ach_account_number', { ...SALE, ...ACH }, ACH],
      ['cc_number', { ...SALE, cc_number: '4111111111111112' }, { ...SALE, cc_number: '4111 1111 1111 1111' }],
      ['cc_number', { ...SALE, cc_number: '42424242424' }, { ...SALE, cc_number: '4242424242424242' }],
      ['cc_expiration', { ...SALE, cc_expiration: '01/20' }, { ...SALE, cc_expiration: '12/2031' }],
      ['cc_expiration', { ...SALE, cc_expiration: '1/30' }, { ...SALE, cc_expiration: '1230' }],
      ['cc_cvc', { ...SALE, cc_cvc: '12' }, { ...SALE, cc_cvc: '999' }],
      ['ach_routing_number', { ...ACH, ach_routing_number: '021000022' }, { ...ACH, ach_routing_number: '011000015' }],
      ['ach_account_type', { ...ACH, ach_account_type: 'business' }, { ...ACH, ach_account_type: 'savings' }],
      ['ach_sec_code', { ...ACH, ach_sec_code: 'TEL' }, { ...ACH, ach_sec_code: 'CCD' }],
      ['ach_account_number', { ...ACH, ach_account_number: '12' }, { ...ACH, ach_account_number: '12345678901234567' }],
      ['amount', { ...SALE, amount: -5 }, { ...SALE, amount: '0005' }],
      ['amount', { ...SALE, amount: 10.5 }, { ...SALE, amount: 1050 }],
      ['amount', { ...SALE, amount: undefined }, { ...SALE, amount: undefined, base_amount: 900 }],
      ['tax_amount', { ...SALE, tax_amount: '1.5' }, { ...SALE, tax_amount: '15' }],
      ['shipping_amount', { ...SALE, shipping_amount: 'free' }, { ...SALE, shipping_amount: 0 }],
      ['discount_amount', { ...SALE, discount_amount: -1 }, { ...SALE, discount_amount: 100 }],
      ['order_id', { ...SALE, order_id: 'A'.repeat(18) }, { ...SALE, order_id: 'A'.repeat(17) }],
      ['po_number', { ...SALE, po_number: 'PO-1' }, { ...SALE, po_number: 'PO1' }],
      ['description', { ...SALE, description: 'x'.repeat(101) }, { ...SALE, description: 'x'.repeat(100) }],
      ['tax_exempt', { ...SALE, tax_exempt: 'yes' }, { ...SALE, tax_exempt: true }],
      ['surcharge_exempt', { ...SALE, surcharge_exempt: 'no' }, { ...SALE, surcharge_exempt: 'false' }],
      // A receipt needs an address (issue 32): the valid form names one.
      ['email_receipt', { ...SALE, email_receipt: 1 }, { ...SALE, email_receipt: 'TRUE', email_address: 'ana@example.com' }],
      ['email_address', { ...SALE, email_address: 'ana@example' }, { ...SALE, email_address: 'ana@example.com' }],
      ['processor_id', { ...SALE, processor_id: 'prc_unknown' }, { ...SALE, processor_id: `sandbox_${shop.id}` }],
      ['customer_id', { transaction_type: 'sale', amount: 100, customer_id: 'nobody' }, SALE],
      ['payment_method_id', { ...SALE, payment_method_id: 'pm1' }, SALE],
      ['billing_city', { ...SALE, billing_city: 'c'.repeat(256) }, { ...SALE, billing_city: 'c'.repeat(255) }],
      ['amount', { ...SALE, amount: 1000, base_amount: 900, tax_amount: 50 }, { ...SALE, amount: 950, base_amount: 900, tax_amount: 50 }],
      ['amount', { ...SALE, amount: 100, shipping_amount: 80, tax_amount: 30 }, { ...SALE, amount: 110, shipping_amount: 80, tax_amount: 30 }],
      ['tax_amount', { ...SALE, tax_exempt: true, tax_amount: 10 }, { ...SALE, tax_exempt: true, tax_amount: 0 }],
      ['surcharge', { ...SALE, amount: 1030, surcharge: 30 }, { ...SALE, amount: 1030, surcharge: 0 }],
      ['surcharge', { ...ACH, surcharge: 30 }, ACH],
      ['transaction_type', { ...ACH, transaction_type: 'authorize' }, { ...ACH, transaction_type: 'credit' }],
    ];
    for (const [field, invalid, valid] of cases) {
      const errors = await refused(invalid);
      expect(Object.keys(errors), `${field} in ${JSON.stringify(invalid)}`).toContain(field);
      const response = await post(valid);
      expect(response.status, `${field} valid: ${await response.clone().text()}`).toBe(201);
    }
  });

  it('names the field and says what is wrong, in msg and errors', async () => {
    const response = await post({ ...SALE, cc_number: '4111111111111112', amount: '10.00' });
    expect(await response.json()).toEqual({
      status: 'failed',
      msg: 'cc_number: is not a valid card number (Luhn check failed); amount: must be an integer in minor units (write 10.00 as 1000)',
      data: null,
      errors: [
        { field: 'cc_number', msg: 'is not a valid card number (Luhn check failed)' },
        { field: 'amount', msg: 'must be an integer in minor units (write 10.00 as 1000)' },
      ],
    });
  });

  it('refuses unknown fields, wrong JSON types and a missing JSON content type', async () => {
    expect(await refused({ ...SALE, cc_cvv: '123' })).toEqual({ cc_cvv: 'unknown field; did you mean cc_cvc?' });
    expect(Object.keys(await refused({ ...SALE, order_id: 42 }))).toEqual(['order_id']);
    const noType = await call('POST', '/api/transaction', { key: shop.secretKey, body: JSON.stringify(SALE) });
    expect(noType.status).toBe(415);
  });

  it('treats empty strings and null as absent, like empty CSV fields', async () => {
    expect(await charge({ ...SALE, order_id: '', description: null, cc_cvc: '' })).toMatchObject({ order_id: null, cvv_response_code: null });
  });
});

describe('sandbox triggers', () => {
  it.each(ISSUER_DECLINE_CARDS)('card %s is declined by the issuer with %i', async (number, code, processorCode, text) => {
    expect(await charge({ ...SALE, cc_number: number })).toMatchObject({
      response: 'declined',
      response_code: code,
      status: 'declined',
      amount_authorized: 0,
      amount_captured: 0,
      auth_code: null,
      processor_response_code: processorCode,
      processor_response_text: text,
    });
  });

  it.each([
    [300, 'declined', 'declined', 'DECLINED BY GATEWAY RULES'],
    [301, 'declined', 'declined', 'DUPLICATE TRANSACTION'],
    [421, 'error', 'failed', 'COMMUNICATION ERROR WITH PROCESSOR'],
  ])('a total of %i answers %s for cards and ACH', async (amount, response, status, text) => {
    for (const body of [{ ...SALE, amount }, { ...ACH, amount }]) {
      expect(await charge(body)).toMatchObject({ response, status, response_code: amount, processor_response_text: text, auth_code: null });
    }
  });

  it('partially approves an authorize on the prepaid card (110) and declines a sale above its balance', async () => {
    const prepaid = { ...SALE, cc_number: '4000000000001109', amount: 2500 };
    expect(await charge({ ...prepaid, transaction_type: 'authorize' })).toMatchObject({
      response: 'approved',
      response_code: 110,
      status: 'authorized',
      amount: 2500,
      amount_authorized: 1000,
      processor_response_text: 'PARTIAL APPROVAL',
    });
    expect(await charge(prepaid)).toMatchObject({ response: 'declined', response_code: 202 });
  });

  it.each([
    ['9990000001', 202, 'R01'],
    ['9990000002', 200, 'R02'],
    ['9990000003', 222, 'R03'],
  ])('ACH account %s is returned with %i (%s)', async (account, code, processorCode) => {
    expect(await charge({ ...ACH, ach_account_number: account })).toMatchObject({ response: 'declined', response_code: code, processor_response_code: processorCode });
  });

  it('reports AVS from the billing postal code and CVV from the CVC', async () => {
    const cases: [string | undefined, string | undefined, string | null, string | null][] = [
      [undefined, undefined, null, null],
      ['11111', '111', 'N', 'N'],
      ['22222', '222', 'A', 'P'],
      ['33333', '333', 'Z', 'U'],
      ['44444', '123', 'U', 'M'],
      ['55555', undefined, 'R', null],
      ['66666', undefined, 'S', null],
      ['77777', undefined, 'E', null],
      ['10001-2345', undefined, 'X', null],
      ['10001', undefined, 'Y', null],
    ];
    for (const [postal, cvc, avs, cvv] of cases) {
      const record = await charge({ ...SALE, billing_postal_code: postal, cc_cvc: cvc });
      expect([record.avs_response_code, record.cvv_response_code], `${postal} ${cvc}`).toEqual([avs, cvv]);
      expect(record.response).toBe('approved');
    }
  });
});

describe('amounts', () => {
  it('adds tax to base_amount; a given surcharge is part of the total and shown as service_fee', async () => {
    expect(await charge({ ...SALE, amount: undefined, base_amount: 10000, tax_amount: 825 })).toMatchObject({ amount: 10825, tax_amount: 825, service_fee: 0 });
    expect(await charge({ ...ACH, amount: undefined, base_amount: 10000, shipping_amount: 500, discount_amount: 200 })).toMatchObject({ amount: 10000, shipping_amount: 500, service_fee: 0 });
  });
});

describe('processors', () => {
  it('gives every merchant a default sandbox processor, and lets operators add and choose others', async () => {
    const merchant = await createMerchant({ name: 'Processor Shop' });
    const list = await admin('GET', `/admin/merchants/${merchant.id}/processors`);
    expect((await list.json<Envelope<unknown[]>>()).data).toEqual([
      { id: `sandbox_${merchant.id}`, merchant_id: merchant.id, type: 'sandbox', name: 'Sandbox', is_default: true, created_at: expect.any(String) },
    ]);

    const added = await admin('POST', `/admin/merchants/${merchant.id}/processors`, { name: 'Sandbox EU' });
    expect(added.status).toBe(201);
    const second = (await added.json<Envelope<{ id: string; is_default: boolean; type: string }>>()).data;
    expect(second).toMatchObject({ type: 'sandbox', is_default: false });

    const chosen = await charge({ ...SALE, processor_id: second.id }, { key: merchant.secretKey });
    expect(chosen).toMatchObject({ processor_id: second.id, processor_name: 'Sandbox EU', processor_type: 'sandbox' });
    expect(await charge(SALE, { key: merchant.secretKey })).toMatchObject({ processor_id: `sandbox_${merchant.id}` });

    const newDefault = await admin('POST', `/admin/merchants/${merchant.id}/processors`, { name: 'Main', is_default: true });
    const main = (await newDefault.json<Envelope<{ id: string }>>()).data;
    expect(await charge(SALE, { key: merchant.secretKey })).toMatchObject({ processor_id: main.id, processor_name: 'Main' });
    const after = (await (await admin('GET', `/admin/merchants/${merchant.id}/processors`)).json<Envelope<{ is_default: boolean }[]>>()).data;
    expect(after.filter((p) => p.is_default)).toHaveLength(1);
  });

  it("refuses another merchant's processor, an unknown type and an unknown merchant", async () => {
    expect(Object.keys(await refused({ ...SALE, processor_id: `sandbox_${other.id}` }))).toEqual(['processor_id']);
    expect((await admin('POST', `/admin/merchants/${shop.id}/processors`, { name: 'X', type: 'tsys' })).status).toBe(400);
    expect((await admin('POST', '/admin/merchants/nobody/processors', { name: 'X' })).status).toBe(404);
    expect((await call('GET', `/admin/merchants/${shop.id}/processors`, { key: shop.secretKey })).status).toBe(401);
  });
});

describe('idempotency', () => {
  it('replays the same key and body without charging again; amounts as number or string are the same body', async () => {
    const first = await post(SALE, { idempotencyKey: 'order-1001' });
    expect(first.status).toBe(201);
    const original = (await first.json<Envelope<TxRecord>>()).data;
    const again = await post({ ...SALE, amount: '1000' }, { idempotencyKey: 'order-1001' });
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await again.json<Envelope<TxRecord>>()).data).toEqual(original);
    // One record in the merchant's ledger shard of the day, one page row for it.
    expect([...(await shardEntries(apiShardName(shop.id))).keys()].filter((key) => key === 'order-1001')).toHaveLength(1);
  });

  it('answers 409 for the same key with a different body', async () => {
    await charge(SALE, { idempotencyKey: 'order-2002' });
    const conflict = await post({ ...SALE, amount: 1001 }, { idempotencyKey: 'order-2002' });
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toEqual({
      status: 'failed',
      msg: 'Idempotency-Key: was already used with a different request',
      data: null,
      errors: [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }],
    });
  });

  it('keeps keys per merchant, does not record a refused request, and checks the header', async () => {
    await charge(SALE, { idempotencyKey: 'shared-key' });
    expect(await charge({ ...SALE, amount: 5000 }, { idempotencyKey: 'shared-key', key: other.secretKey })).toMatchObject({ amount: 5000 });

    expect((await post({ ...SALE, amount: 'x' }, { idempotencyKey: 'fix-and-retry' })).status).toBe(400);
    expect((await post(SALE, { idempotencyKey: 'fix-and-retry' })).status).toBe(201);

    expect((await post(SALE, { idempotencyKey: 'has space' })).status).toBe(400);
  });

  it('replays a declined transaction as declined', async () => {
    const declined = await charge({ ...SALE, cc_number: '4000000000000002' }, { idempotencyKey: 'declined-once' });
    const replay = await post({ ...SALE, cc_number: '4000000000000002' }, { idempotencyKey: 'declined-once' });
    expect(replay.status).toBe(200);
    expect((await replay.json<Envelope<TxRecord>>()).data).toEqual(declined);
  });
});

describe('vault payments', () => {
  async function vaultCustomer(body: unknown): Promise<{ id: string; payment_methods: { id: string; type: string }[] }> {
    const response = await call('POST', '/api/vault/customer', { key: shop.secretKey, body });
    expect(response.status).toBe(201);
    return (await response.json<Envelope<{ id: string; payment_methods: { id: string; type: string }[] }>>()).data;
  }

  it("charges the customer's default card, or the method named by payment_method_id", async () => {
    const customer = await vaultCustomer({
      id: 'vcust1',
      email: 'vault@example.com',
      payment_method: { card: { number: '5555555555554444', expiration: '11/31' } },
    });
    const achAdded = await call('POST', '/api/vault/customer/vcust1/ach', {
      key: shop.secretKey,
      body: { account_number: '000123456789', routing_number: '021000021', account_type: 'savings', sec_code: 'CCD' },
    });
    expect(achAdded.status).toBe(201);
    // Adding a method answers the customer and the new method's id (FluidPay's answer, issue 34).
    const achId = (await achAdded.json<Envelope<{ created_payment_method_id: string }>>()).data.created_payment_method_id;

    expect(await charge({ transaction_type: 'sale', customer_id: 'vcust1', amount: 1500, cc_cvc: '123' })).toMatchObject({
      payment_method: 'customer',
      payment_type: 'card',
      customer_id: 'vcust1',
      email_address: 'vault@example.com',
      masked_account: '555555******4444',
      expiration: '11/31',
      response: 'approved',
      cvv_response_code: 'M',
    });
    expect(await charge({ transaction_type: 'sale', customer_id: 'vcust1', payment_method_id: achId, payment_method_type: 'ach', amount: 1500 })).toMatchObject({
      payment_method: 'customer',
      payment_type: 'ach',
      masked_account: '********6789',
      sec_code: 'CCD',
      account_type: 'savings',
      response: 'approved',
    });
    expect(customer.payment_methods[0]?.type).toBe('card');
  });

  it('processes an ACH-only customer and its ACH returns, and refuses an ACH authorize', async () => {
    await vaultCustomer({
      id: 'vach1',
      payment_method: { ach: { account_number: '9990000001', routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' } },
    });
    expect(await charge({ transaction_type: 'sale', customer_id: 'vach1', amount: 1500 })).toMatchObject({
      payment_type: 'ach',
      response: 'declined',
      response_code: 202,
      processor_response_code: 'R01',
    });
    expect(Object.keys(await refused({ transaction_type: 'authorize', customer_id: 'vach1', amount: 1500 }))).toEqual(['transaction_type']);
    expect(Object.keys(await refused({ transaction_type: 'sale', customer_id: 'vach1', amount: 1500, cc_cvc: '123' }))).toEqual(['cc_cvc']);
  });

  it('names what is wrong with a vault reference', async () => {
    await vaultCustomer({ id: 'vempty1' });
    expect(await refused({ transaction_type: 'sale', customer_id: 'vempty1', amount: 100 })).toEqual({
      customer_id: 'customer vempty1 has no default payment method; give payment_method_id',
    });
    expect(await refused({ transaction_type: 'sale', customer_id: 'vcust1', payment_method_id: 'nope', amount: 100 })).toEqual({
      payment_method_id: 'customer vcust1 has no payment method nope',
    });
    expect(Object.keys(await refused({ transaction_type: 'sale', customer_id: 'vach1', payment_method_type: 'card', amount: 100 }))).toEqual(['payment_method_type']);
    // This merchant's customer is unknown to another merchant.
    const foreign = await post({ transaction_type: 'sale', customer_id: 'vcust1', amount: 100 }, { key: other.secretKey });
    expect(foreign.status).toBe(400);
    expect((await foreign.json<Envelope>()).errors).toEqual([{ field: 'customer_id', msg: 'no vault customer vcust1' }]);
  });

  it("refuses a surcharge for a surcharge-exempt vault customer", async () => {
    await vaultCustomer({ id: 'vexempt1', flags: ['surcharge_exempt'], payment_method: { card: { number: VISA, expiration: '12/30' } } });
    expect(await refused({ transaction_type: 'sale', customer_id: 'vexempt1', amount: 1030, surcharge: 30, billing_country: 'US', billing_state: 'NY' })).toEqual({
      surcharge: 'not allowed: the vault customer is surcharge-exempt',
    });
  });
});

describe('card data', () => {
  it('keeps no full card number, account number or CVC in any D1 table, ledger shard, processor memory, answer or log line', async () => {
    const cards = ['4242424242424242', '5105105105105100', '371449635398431'];
    const answers: string[] = [];
    for (const [i, number] of cards.entries()) {
      const response = await post({ ...SALE, cc_number: number, cc_cvc: i === 2 ? '7391' : '739' }, { idempotencyKey: `scan-${i}` });
      answers.push(await response.text());
    }
    answers.push(await (await post({ ...SALE, cc_number: '4242424242424241', cc_cvc: '739' })).text()); // refused: Luhn
    answers.push(await (await post({ ...SALE, cc_number: '5105105105105100', cc_expiration: '01/20', cc_cvc: '739' })).text()); // refused: expired
    answers.push(await (await post({ ...ACH, ach_account_number: '55501234567' })).text());

    const secrets = { cardNumbers: [...cards, '4242424242424241', '55501234567', VISA, '4000000000000002'], cvcs: ['739', '7391'] };
    const findings = answers.flatMap((answer, i) => findSecrets(answer, secrets, `answer ${i}`));
    expect(await d1Tables(env.DB)).toContain('merchants');
    findings.push(...(await scanD1(env.DB, secrets)));
    const shard = apiShardName(shop.id);
    expect(await shardRowCounts(shard)).toMatchObject({ pages: expect.any(Number) });
    findings.push(...(await scanObject(env.LEDGER_SHARD.getByName(shard), 'ledger shard', secrets)));
    const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(shop.id), utcDay(new Date())));
    findings.push(...(await scanObject(acquirer, 'sandbox acquirer', secrets)));
    expect((await shardEntries(shard)).get('scan-2')?.record.masked_account).toBe('371449*****8431');

    findings.push(...findSecrets(logged.join('\n'), secrets, 'console'));
    expect(findings, describeFindings(findings)).toEqual([]);
  });
});
