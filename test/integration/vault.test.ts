import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveVaultPaymentMethod, resolveVaultPaymentMethods } from '../../src/services/vault/resolution';
import { d1Tables, describeFindings, scanD1, scanKv } from '../helpers/leak-scan';
import { call, createMerchant, type TestMerchant, type Envelope } from '../helpers/api';

interface MethodView {
  id: string;
  type: 'card' | 'ach';
  masked_number?: string;
  masked_account_number?: string;
  expiration?: string;
  routing_number?: string;
  account_type?: string;
  sec_code?: string;
  is_default: boolean;
}
interface CustomerView {
  id: string;
  description: string | null;
  email: string | null;
  flags: string[];
  default_payment_method_id: string | null;
  payment_methods: MethodView[];
}

const VISA = '4111111111111111';
const MASTERCARD = '5555555555554444';
const AMEX = '378282246310005';
const ACCOUNT = '000123456789';
const ROUTING = '021000021';

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Vault Shop' });
  other = await createMerchant({ name: 'Other Shop' });
});

function vault(method: string, path: string, body?: unknown, key = shop.secretKey): Promise<Response> {
  return call(method, `/api/vault${path}`, { key, body });
}

async function createCustomer(body: unknown): Promise<CustomerView> {
  const response = await vault('POST', '/customer', body);
  expect(response.status).toBe(201);
  return (await response.json<Envelope<CustomerView>>()).data;
}

async function tempToken(key: string, cc_number = AMEX, cc_cvc = '4321'): Promise<string> {
  const response = await call('POST', '/api/tokenizer/token', {
    key,
    body: { cc_number, cc_expiration: '11/38', cc_cvc },
  });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<{ temp_token: string }>>()).data.temp_token;
}

describe('POST /api/vault/customer', () => {
  it('creates a customer with a card given by number; the answer shows it masked only', async () => {
    const customer = await createCustomer({
      id: 'cust001',
      description: 'Regular',
      email: 'ana@example.com',
      flags: ['surcharge_exempt'],
      payment_method: { card: { number: VISA, expiration: '1239' } },
    });
    expect(customer).toMatchObject({
      id: 'cust001',
      description: 'Regular',
      email: 'ana@example.com',
      flags: ['surcharge_exempt'],
    });
    expect(customer.payment_methods).toHaveLength(1);
    const [card] = customer.payment_methods;
    expect(card).toMatchObject({ type: 'card', masked_number: '411111******1111', expiration: '12/39', is_default: true });
    expect(card?.id).toMatch(/^[A-Za-z0-9_]{1,64}$/);
    expect(customer.default_payment_method_id).toBe(card?.id);
    expect(JSON.stringify(customer)).not.toContain(VISA);
  });

  it('creates a customer from a temp token of the same merchant, without keeping the CVC', async () => {
    const token = await tempToken(shop.publicKey);
    const customer = await createCustomer({ payment_method: { card: { temp_token: token } } });
    expect(customer.id).toMatch(/^[A-Za-z0-9]{1,40}$/);
    expect(customer.payment_methods[0]).toMatchObject({ masked_number: '378282*****0005', expiration: '11/38' });

    const resolved = await resolveVaultPaymentMethod(env, shop.id, customer.id, {});
    expect(resolved).toMatchObject({ ok: true, method: { type: 'card', number: AMEX, expiration: '11/38' } });
    expect(JSON.stringify(resolved)).not.toContain('4321');
  });

  it("rejects another merchant's temp token as unknown", async () => {
    const token = await tempToken(other.publicKey);
    const response = await vault('POST', '/customer', { payment_method: { card: { temp_token: token } } });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toBe('payment_method.card.temp_token: unknown or expired token');
  });

  it('rejects a malformed temp token, a Luhn failure and an expired card with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ card: { temp_token: 'tok_nope' } }, 'payment_method.card.temp_token: malformed temp token'],
      [{ card: { number: '4111111111111112', expiration: '12/39' } }, 'payment_method.card.number: fails the Luhn check'],
      [{ card: { number: VISA, expiration: '01/21' } }, 'payment_method.card.expiration: card has expired'],
      [{ card: { number: VISA } }, 'payment_method.card.expiration: is required with number'],
      // A CVC has no place in the vault: the field is refused rather than silently dropped.
      [{ card: { number: VISA, expiration: '12/39', cvc: '123' } }, 'payment_method.card.cvc: unknown field'],
      [{ ach: { account_number: '12', routing_number: ROUTING, account_type: 'checking', sec_code: 'WEB' } }, 'payment_method.ach.account_number: must be 4 to 17 digits'],
      [{}, 'payment_method: must hold exactly one of card, ach or token'],
    ];
    for (const [payment_method, msg] of cases) {
      const response = await vault('POST', '/customer', { payment_method });
      expect(response.status, msg).toBe(400);
      const body = await response.json<Envelope>();
      expect(body.msg).toContain(msg);
      expect(body.msg).not.toContain('411111111111111');
    }
  });

  it('rejects a duplicate id with 409 and a malformed id with 400', async () => {
    await createCustomer({ id: 'dupe42' });
    expect((await vault('POST', '/customer', { id: 'dupe42' })).status).toBe(409);
    // FluidPay's ids are wider (".", "-", "_", "^"), but a space or a slash is still refused.
    const response = await vault('POST', '/customer', { id: 'has space' });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toContain('id: must be 1 to 40 letters, digits');
  });

  it('needs the secret key', async () => {
    expect((await vault('POST', '/customer', {}, shop.publicKey)).status).toBe(401);
    expect((await call('GET', '/api/vault/customer/cust001')).status).toBe(401);
  });
});

/**
 * Adding a method answers the whole customer with the new method's id (FluidPay's answer, issue 34):
 * the method as the customer lists it.
 */
async function addedMethod(response: Response): Promise<MethodView> {
  const customer = (await response.json<Envelope<CustomerView & { created_payment_method_id: string }>>()).data;
  const method = customer.payment_methods.find((m) => m.id === customer.created_payment_method_id);
  if (!method) throw new Error('the answer does not list the new method');
  return method;
}

describe('payment methods', () => {
  it('adds a card and an ACH account; the first method stays the default', async () => {
    await createCustomer({ id: 'multi1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const cardResponse = await vault('POST', '/customer/multi1/card', { number: MASTERCARD, expiration: '03/40' });
    expect(cardResponse.status).toBe(201);
    const card = (await addedMethod(cardResponse));
    expect(card).toMatchObject({ type: 'card', masked_number: '555555******4444', is_default: false });

    const achResponse = await vault('POST', '/customer/multi1/ach', {
      account_number: ACCOUNT,
      routing_number: ROUTING,
      account_type: 'savings',
      sec_code: 'ppd',
    });
    expect(achResponse.status).toBe(201);
    const ach = (await addedMethod(achResponse));
    expect(ach).toMatchObject({
      type: 'ach',
      masked_account_number: '********6789',
      routing_number: ROUTING,
      account_type: 'savings',
      sec_code: 'PPD',
      is_default: false,
    });

    const got = await vault('GET', '/customer/multi1');
    expect(got.status).toBe(200);
    const customer = (await got.json<Envelope<CustomerView>>()).data;
    expect(customer.payment_methods.map((m) => m.type)).toEqual(['card', 'card', 'ach']);
    expect(customer.payment_methods[0]?.is_default).toBe(true);
    const text = JSON.stringify(customer);
    for (const secret of [VISA, MASTERCARD, ACCOUNT]) expect(text).not.toContain(secret);

    const viaAch = await resolveVaultPaymentMethod(env, shop.id, 'multi1', { paymentMethodId: ach.id });
    expect(viaAch).toMatchObject({
      ok: true,
      method: { type: 'ach', account_number: ACCOUNT, routing_number: ROUTING, account_type: 'savings', sec_code: 'PPD' },
    });
  });

  it('makes the first method added to an empty customer its default', async () => {
    await createCustomer({ id: 'empty1' });
    expect(await resolveVaultPaymentMethod(env, shop.id, 'empty1', {})).toMatchObject({
      ok: false,
      reason: 'no_default_payment_method',
    });
    const response = await vault('POST', '/customer/empty1/ach', {
      account_number: ACCOUNT,
      routing_number: ROUTING,
      account_type: 'checking',
      sec_code: 'WEB',
    });
    expect((await addedMethod(response)).is_default).toBe(true);
    expect(await resolveVaultPaymentMethod(env, shop.id, 'empty1', {})).toMatchObject({ ok: true, method: { type: 'ach' } });
  });

  it('rejects a routing number failing the ABA checksum with 400', async () => {
    await createCustomer({ id: 'aba1' });
    const response = await vault('POST', '/customer/aba1/ach', {
      account_number: ACCOUNT,
      routing_number: '021000022',
      account_type: 'checking',
      sec_code: 'WEB',
    });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toContain('routing_number: must be a 9-digit routing number passing the ABA checksum');
  });

  it('adds a card from a temp token, which stays usable afterwards', async () => {
    await createCustomer({ id: 'tok1' });
    const token = await tempToken(shop.publicKey, MASTERCARD);
    const first = await vault('POST', '/customer/tok1/card', { temp_token: token, expiration: '0142' });
    expect(first.status).toBe(201);
    expect((await addedMethod(first))).toMatchObject({ masked_number: '555555******4444', expiration: '01/42' });
    expect((await vault('POST', '/customer/tok1/card', { temp_token: token })).status).toBe(201);
  });

  it('answers 404 when adding to an unknown customer', async () => {
    const response = await vault('POST', '/customer/nobody/card', { number: VISA, expiration: '12/39' });
    expect(response.status).toBe(404);
  });
});

describe('PATCH and DELETE', () => {
  it('changes the default payment method, flags, description and email', async () => {
    const created = await createCustomer({ id: 'patch1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const added = await vault('POST', '/customer/patch1/card', { number: MASTERCARD, expiration: '03/40' });
    const second = (await addedMethod(added));

    const response = await vault('PATCH', '/customer/patch1', {
      default_payment_method_id: second.id,
      flags: ['surcharge_exempt'],
      description: 'VIP',
      email: 'vip@example.com',
    });
    expect(response.status).toBe(200);
    const customer = (await response.json<Envelope<CustomerView>>()).data;
    expect(customer).toMatchObject({
      default_payment_method_id: second.id,
      flags: ['surcharge_exempt'],
      description: 'VIP',
      email: 'vip@example.com',
    });
    expect(customer.payment_methods.find((m) => m.is_default)?.id).toBe(second.id);

    const resolved = await resolveVaultPaymentMethod(env, shop.id, 'patch1', {});
    expect(resolved).toMatchObject({ ok: true, customer: { surchargeExempt: true }, method: { number: MASTERCARD } });

    // flags is the whole set: [] clears it; null clears the description; other fields stay.
    const cleared = await vault('PATCH', '/customer/patch1', { flags: [], description: null });
    expect((await cleared.json<Envelope<CustomerView>>()).data).toMatchObject({
      flags: [],
      description: null,
      email: 'vip@example.com',
      default_payment_method_id: second.id,
    });
    expect(created.id).toBe('patch1');
  });

  it("rejects a default that is not one of the customer's methods, and an empty patch", async () => {
    await createCustomer({ id: 'patch2' });
    const wrong = await vault('PATCH', '/customer/patch2', { default_payment_method_id: 'nope' });
    expect(wrong.status).toBe(400);
    expect((await wrong.json<Envelope>()).msg).toBe('default_payment_method_id: customer patch2 has no payment method nope');
    expect((await vault('PATCH', '/customer/patch2', {})).status).toBe(400);
  });

  it('deletes a customer with its payment methods', async () => {
    await createCustomer({ id: 'gone1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const response = await vault('DELETE', '/customer/gone1');
    expect(response.status).toBe(200);
    expect((await response.json<Envelope>()).data).toEqual({ id: 'gone1', deleted: true });
    expect((await vault('GET', '/customer/gone1')).status).toBe(404);
    expect((await vault('DELETE', '/customer/gone1')).status).toBe(404);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM vault_payment_methods WHERE customer_id = 'gone1'").first<{ n: number }>();
    expect(rows?.n).toBe(0);
  });
});

describe('merchant isolation', () => {
  it("answers 404 for another merchant's customer on every operation", async () => {
    await createCustomer({ id: 'mine1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const key = other.secretKey;
    expect((await vault('GET', '/customer/mine1', undefined, key)).status).toBe(404);
    expect((await vault('POST', '/customer/mine1/card', { number: VISA, expiration: '12/39' }, key)).status).toBe(404);
    expect((await vault('PATCH', '/customer/mine1', { description: 'x' }, key)).status).toBe(404);
    expect((await vault('DELETE', '/customer/mine1', undefined, key)).status).toBe(404);
    expect(await resolveVaultPaymentMethod(env, other.id, 'mine1', {})).toMatchObject({ ok: false, reason: 'customer_not_found' });
    expect((await vault('GET', '/customer/mine1')).status).toBe(200);
  });

  it('lets two merchants use the same customer id independently', async () => {
    await createCustomer({ id: 'shared1' });
    const response = await vault('POST', '/customer', { id: 'shared1' }, other.secretKey);
    expect(response.status).toBe(201);
  });
});

describe('resolveVaultPaymentMethod', () => {
  it('resolves by id, checks the type, and names what is missing', async () => {
    const customer = await createCustomer({ id: 'res1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    const cardId = customer.payment_methods[0]?.id ?? '';
    expect(await resolveVaultPaymentMethod(env, shop.id, 'res1', { paymentMethodId: cardId, paymentMethodType: 'card' })).toMatchObject({
      ok: true,
      customer: { id: 'res1', surchargeExempt: false },
      method: { id: cardId, type: 'card', number: VISA, expiration: '12/39', masked: '411111******1111' },
    });
    expect(await resolveVaultPaymentMethod(env, shop.id, 'res1', { paymentMethodType: 'ach' })).toMatchObject({
      ok: false,
      reason: 'payment_method_type_mismatch',
    });
    expect(await resolveVaultPaymentMethod(env, shop.id, 'res1', { paymentMethodId: 'missing' })).toEqual({
      ok: false,
      reason: 'payment_method_not_found',
      msg: 'payment_method_id: customer res1 has no payment method missing',
    });
    expect(await resolveVaultPaymentMethod(env, shop.id, 'nobody', {})).toMatchObject({ ok: false, reason: 'customer_not_found' });
  });

  it('resolves many references in one query, answering each in the order asked', async () => {
    await createCustomer({ id: 'bulk1', payment_method: { card: { number: VISA, expiration: '12/39' } } });
    await createCustomer({ id: 'bulk2', payment_method: { card: { number: MASTERCARD, expiration: '01/40' } } });
    const theirs = await vault('POST', '/customer', { id: 'theirs', payment_method: { card: { number: AMEX, expiration: '01/40' } } }, other.secretKey);
    expect(theirs.status).toBe(201);
    const prepare = vi.spyOn(env.DB, 'prepare');
    const answers = await resolveVaultPaymentMethods(env, shop.id, [
      { customerId: 'bulk2' },
      { customerId: 'nobody' },
      { customerId: 'bulk1', paymentMethodType: 'ach' },
      { customerId: 'bulk1' },
      { customerId: 'theirs' },
    ]);
    expect(prepare).toHaveBeenCalledTimes(1);
    prepare.mockRestore();
    expect(answers.map((a) => (a.ok ? a.method.type === 'card' && a.method.number : a.reason))).toEqual([
      MASTERCARD,
      'customer_not_found',
      'payment_method_type_mismatch',
      VISA,
      'customer_not_found',
    ]);
  });
});

describe('card data at rest', () => {
  it('keeps no full card number, account number or CVC in any D1 column or KV value', async () => {
    const token = await tempToken(shop.publicKey, '6011111111111117', '9173');
    await createCustomer({ id: 'scan1', payment_method: { card: { temp_token: token } } });
    await vault('POST', '/customer/scan1/card', { number: '4012888888881881', expiration: '12/39' });
    await vault('POST', '/customer/scan1/ach', {
      account_number: '987654321012',
      routing_number: ROUTING,
      account_type: 'checking',
      sec_code: 'CCD',
    });
    const secrets = { cardNumbers: ['6011111111111117', '4012888888881881', '987654321012', VISA, MASTERCARD, AMEX], cvcs: ['9173'] };
    expect(await d1Tables(env.DB)).toContain('vault_payment_methods');
    const findings = [
      ...(await scanD1(env.DB, secrets)),
      ...(await scanKv(env.TOKENS, 'TOKENS', secrets)),
      ...(await scanKv(env.BIN_CACHE, 'BIN_CACHE', secrets)),
    ];
    expect(findings, describeFindings(findings)).toEqual([]);

    // And yet the data is there, sealed: the vault still resolves the full number.
    expect(await resolveVaultPaymentMethod(env, shop.id, 'scan1', {})).toMatchObject({ ok: true, method: { number: '6011111111111117' } });
  });
});
