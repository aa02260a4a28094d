/**
 * Every limit of docs/limits.md, at its edge: the largest accepted value
 * passes, one more is refused with the documented status and a msg naming the field.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JSON_BODY_LIMIT_BYTES } from '../../src/app';
import { uploadBatch } from '../../src/services/batches/upload';
import { authenticateKey } from '../../src/services/merchants';
import { readTempToken, TEMP_TOKEN_TTL_SECONDS } from '../../src/services/tokens';
import { ADMIN_TOKEN, apiKeyId, call, createMerchant, type TestMerchant } from '../helpers/api';
import { buildWorld, endpoints, type World } from '../helpers/endpoints';
import { expectFailedEnvelope } from '../helpers/fuzz';
import { limiterOnClock, RATE_LIMITS } from '../helpers/rate-limits';

let world: World;
let shop: TestMerchant;
beforeAll(async () => {
  world = await buildWorld();
  shop = await createMerchant({ name: 'Limits Shop' });
  const customer = await call('POST', '/api/vault/customer', { key: shop.secretKey, body: { id: 'limits' } });
  expect(customer.status).toBe(201);
});

/** A JSON text of exactly `bytes` bytes: {"pad":"xxx…"}. */
function jsonOfSize(bytes: number): string {
  const frame = JSON.stringify({ pad: '' }).length;
  return JSON.stringify({ pad: 'x'.repeat(bytes - frame) });
}

function keyFor(auth: string): string | null {
  if (auth === 'admin') return ADMIN_TOKEN;
  if (auth === 'any') return world.owner.publicKey;
  if (auth === 'secret') return world.owner.secretKey;
  return null;
}

describe('request body limits', () => {
  const jsonRoutes = endpoints.filter((e) => e.body && !e.streamed);

  it.each(jsonRoutes)(`$route: 413 over ${JSON_BODY_LIMIT_BYTES} bytes, read as usual at the limit`, async (endpoint) => {
    const [method] = endpoint.route.split(' ');
    const send = (body: string) =>
      call(method ?? 'POST', endpoint.path(world), { key: keyFor(endpoint.auth), body, headers: { 'Content-Type': 'application/json' } });
    const over = await send(jsonOfSize(JSON_BODY_LIMIT_BYTES + 1));
    expect(over.status).toBe(413);
    expect((await expectFailedEnvelope(over)).msg).toBe(`request body exceeds ${JSON_BODY_LIMIT_BYTES} bytes`);
    const at = await send(jsonOfSize(JSON_BODY_LIMIT_BYTES));
    expect(at.status).toBe(400); // validated: "pad" is not a field of any endpoint
    await at.body?.cancel();
  });

  it('413 also when the body is streamed without a Content-Length', async () => {
    const big = new TextEncoder().encode(jsonOfSize(JSON_BODY_LIMIT_BYTES + 1_000));
    const response = await call('POST', '/api/tokenizer/token', {
      key: world.owner.publicKey,
      body: new Blob([big]).stream(),
      headers: { 'Content-Type': 'application/json' },
    });
    expect(response.status).toBe(413);
    await response.body?.cancel();
  });

  it.each(['/admin/bins/import', '/admin/bins/ranges/import'])('%s: 413 for a declared body over 32 MiB, before reading it', async (path) => {
    const response = await call('POST', path, {
      key: ADMIN_TOKEN,
      body: new Blob(['bin\n411111\n']).stream(),
      headers: { 'Content-Type': 'text/csv', 'Content-Length': String(32 * 1024 * 1024 + 1) },
    });
    expect(response.status).toBe(413);
    expect((await expectFailedEnvelope(response)).msg).toContain(`exceeds ${32 * 1024 * 1024} bytes`);
  });
});

describe('batch file limits', () => {
  function form(text: string): FormData {
    const body = new FormData();
    body.append('file', new File([text], 'limits.csv', { type: 'text/csv' }));
    return body;
  }
  const header = '"transaction_type","amount","cc_number","cc_expiration","description"\n';
  const row = (description = 'x') => `"sale","100","4242424242424242","12/39","${description}"\n`;

  it('a file over BATCH_MAX_BYTES is refused as too large while streaming, and nothing is kept', async () => {
    // The limit is a [vars] value; the upload service reads it from the env it is given.
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    const small = { ...env, BATCH_MAX_BYTES: '4096' };
    const text = new TextEncoder().encode(header + row().repeat(200)); // about 9 KB
    async function* chunks() {
      for (let at = 0; at < text.length; at += 1000) yield text.subarray(at, at + 1000);
    }
    const before = (await env.FILES.list({ prefix: 'uploads/' })).objects.length;
    const outcome = await uploadBatch(small, caller, { fileName: 'big.csv', bytes: chunks() }, null, () => new Date());
    expect(outcome).toMatchObject({ ok: false, reason: 'too_large', msg: 'the file exceeds the limit of 4096 bytes' });
    expect((await env.FILES.list({ prefix: 'uploads/' })).objects.length).toBe(before);
  });

  it('a declared Content-Length over the limit: 413 before the body is read', async () => {
    const response = await call('POST', '/api/filebatch?file_name=big.csv', {
      key: shop.secretKey,
      body: new Blob([header + row()]).stream(),
      headers: { 'Content-Type': 'text/csv', 'Content-Length': String(100 * 1024 * 1024 + 64 * 1024 + 1) },
    });
    expect(response.status).toBe(413);
    await expectFailedEnvelope(response);
  });

  it('a row over 64 KiB: 400 naming its line; one just under passes', async () => {
    const frame = row('').length;
    // 64 KiB of row, its "\n" not counted.
    const under = await call('POST', '/api/filebatch', { key: shop.secretKey, body: form(header + row() + row('d'.repeat(64 * 1024 - frame + 1))) });
    expect(under.status).toBe(200);
    await under.body?.cancel();
    const over = await call('POST', '/api/filebatch', { key: shop.secretKey, body: form(header + row() + row('d'.repeat(64 * 1024 - frame + 2))) });
    expect(over.status).toBe(400);
    expect((await expectFailedEnvelope(over)).msg).toBe('line 3: row longer than 65536 bytes');
  });
});

describe('field length limits', () => {
  interface FieldLimit {
    what: string;
    method: string;
    path: string;
    key: () => string;
    /** The body with the field at `value`. */
    body: (value: string) => unknown;
    field: string;
    longest: string;
    /** Statuses the longest accepted value may get (the request is otherwise valid, or fails elsewhere). */
    acceptedStatus: number[];
  }
  const limits: FieldLimit[] = [
    {
      what: 'customer id (40)',
      method: 'POST',
      path: '/api/vault/customer',
      key: () => shop.secretKey,
      body: (id) => ({ id }),
      field: 'id',
      longest: 'c'.repeat(40),
      acceptedStatus: [201],
    },
    {
      what: 'customer description (255)',
      method: 'POST',
      path: '/api/vault/customer',
      key: () => shop.secretKey,
      body: (description) => ({ description }),
      field: 'description',
      longest: 'd'.repeat(255),
      acceptedStatus: [201],
    },
    {
      what: 'customer email (254)',
      method: 'PATCH',
      path: '/api/vault/customer/limits',
      key: () => shop.secretKey,
      body: (email) => ({ email }),
      field: 'email',
      longest: `${'e'.repeat(64)}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(58)}.io`,
      acceptedStatus: [200],
    },
    {
      what: 'payment method id (64)',
      method: 'PATCH',
      path: '/api/vault/customer/limits',
      key: () => shop.secretKey,
      body: (id) => ({ default_payment_method_id: id }),
      field: 'default_payment_method_id',
      longest: 'p'.repeat(64),
      acceptedStatus: [400], // well-formed, but not one of this customer's methods: a different 400
    },
    {
      what: 'card number (19 digits)',
      method: 'POST',
      path: '/api/tokenizer/token',
      key: () => shop.publicKey,
      body: (cc_number) => ({ cc_number, cc_expiration: '12/39' }),
      field: 'cc_number',
      longest: '4000056655665556',
      acceptedStatus: [201],
    },
    {
      what: 'CVC (4 digits)',
      method: 'POST',
      path: '/api/tokenizer/token',
      key: () => shop.publicKey,
      body: (cc_cvc) => ({ cc_number: '4242424242424242', cc_expiration: '12/39', cc_cvc }),
      field: 'cc_cvc',
      longest: '1234',
      acceptedStatus: [201],
    },
    {
      what: 'ACH account number (17 digits)',
      method: 'POST',
      path: '/api/vault/customer/limits/ach',
      key: () => shop.secretKey,
      body: (account_number) => ({ account_number, routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' }),
      field: 'account_number',
      longest: '1'.repeat(17),
      acceptedStatus: [201],
    },
    {
      what: 'lookup bin (19 digits)',
      method: 'POST',
      path: '/api/lookup/bin/protected',
      key: () => shop.secretKey,
      body: (bin) => ({ bin }),
      field: 'bin',
      longest: '4'.repeat(19),
      acceptedStatus: [200],
    },
    {
      what: 'lookup state (3)',
      method: 'POST',
      path: '/api/lookup/bin/protected',
      key: () => shop.secretKey,
      body: (state) => ({ bin: '424242', country: 'US', state }),
      field: 'state',
      longest: 'ABC',
      acceptedStatus: [200],
    },
    ...(
      [
        ['transaction description (100)', 'description', 'd'.repeat(100)],
        ['transaction order_id (17)', 'order_id', 'o'.repeat(17)],
        ['transaction po_number (17)', 'po_number', 'p'.repeat(17)],
        ['transaction billing_city (255)', 'billing_city', 'c'.repeat(255)],
        ['transaction shipping_address_line_1 (255)', 'shipping_address_line_1', 's'.repeat(255)],
        ['transaction amount (99,999,999,999)', 'amount', '99999999999'],
      ] as const
    ).map(
      ([what, field, longest]): FieldLimit => ({
        what,
        method: 'POST',
        path: '/api/transaction',
        key: () => shop.secretKey,
        body: (value) => ({ transaction_type: 'authorize', cc_number: '4242424242424242', cc_expiration: '12/39', amount: '100', [field]: value }),
        field,
        longest,
        acceptedStatus: [201],
      }),
    ),
    {
      what: 'merchant name (100)',
      method: 'POST',
      path: '/admin/merchants',
      key: () => ADMIN_TOKEN,
      body: (name) => ({ name }),
      field: 'name',
      longest: 'm'.repeat(100),
      acceptedStatus: [201],
    },
  ];

  it.each(limits)('$what: the longest passes, one more character is a 400 naming $field', async (limit) => {
    const longest = await call(limit.method, limit.path, { key: limit.key(), body: limit.body(limit.longest) });
    expect(limit.acceptedStatus, await longest.clone().text()).toContain(longest.status);
    if (longest.status >= 400) expect((await expectFailedEnvelope(longest)).msg).not.toMatch(/at most|must be \d+ to \d+|digits/);
    else await longest.body?.cancel();

    const over = limit.field === 'cc_number' ? '40000566556655564' + '00' : `${limit.longest}${limit.longest.at(-1) ?? 'x'}`;
    const refused = await call(limit.method, limit.path, { key: limit.key(), body: limit.body(over) });
    expect(refused.status).toBe(400);
    const body = await expectFailedEnvelope(refused);
    expect(body.msg.startsWith(`${limit.field}:`) || body.msg.includes(`${limit.field}:`), body.msg).toBe(true);
  });

  it('an Authorization header over 256 characters is not looked up: 401, an invalid key (it was sent)', async () => {
    const response = await call('POST', '/api/lookup/bin/protected', { key: `api_${'k'.repeat(300)}`, body: { bin: '424242' } });
    expect(response.status).toBe(401);
    expect((await expectFailedEnvelope(response)).msg).toBe('invalid or revoked API key');
  });
});

describe('rate limits', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each(RATE_LIMITS)('$path ($binding): 429 with Retry-After once the $per has spent its $limit per $period s; others unaffected; served again in the next window', async (c) => {
    const busy = await createMerchant({ name: `Busy ${c.binding}`, ...(c.tier ? { rate_tier: c.tier } : {}) });
    const busyKey = c.type === 'secret' ? busy.secretKey : busy.publicKey;
    const otherKey = c.type === 'secret' ? shop.secretKey : shop.publicKey;
    let now = Date.UTC(2026, 10, 23, 12, 0, 30);
    const limit = vi.spyOn(env[c.binding], 'limit').mockImplementation(limiterOnClock(c.limit, c.period, () => now));

    // Spend the key's budget on the limiter, then ask once more, malformed: probes count too, so
    // the limit is checked before the body is read.
    const id = c.per === 'merchant' ? busy.id : await apiKeyId(busy.id, c.type);
    for (let i = 0; i < c.limit; i += 1) await env[c.binding].limit({ key: id });
    const limited = await call('POST', c.path, { key: busyKey, body: {} });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('Retry-After')).toBe(String(c.period));
    expect((await expectFailedEnvelope(limited)).msg).toContain(`retry in ${c.period} seconds`);
    expect(limit).toHaveBeenLastCalledWith({ key: id }); // counted against the calling key, or its merchant; never the IP

    // Past the limiter, `{}` is refused (a 400 on the JSON routes, a 415 on the upload, which takes a
    // file), or served (a search of everything, an export of it).
    const refusal = c.past;
    const fresh = await call('POST', c.path, { key: otherKey, body: {} });
    expect(fresh.status).toBe(refusal);
    await fresh.body?.cancel();

    now += c.period * 1_000;
    const nextWindow = await call('POST', c.path, { key: busyKey, body: {} });
    expect(nextWindow.status).toBe(refusal);
    await nextWindow.body?.cancel();
  });
});

describe('upload rate limit', () => {
  afterEach(() => vi.restoreAllMocks());

  it("the console's uploads count against the signed-in key's upload budget: 429 with Retry-After", async () => {
    const busy = await createMerchant({ name: 'Busy console' });
    const now = Date.UTC(2026, 10, 23, 12, 0, 30);
    vi.spyOn(env.UPLOAD_RATE_LIMITER, 'limit').mockImplementation(limiterOnClock(120, 60, () => now));
    const origin = 'http://binbatch.test';
    const signIn = await call('POST', '/console/session', { body: { api_key: busy.secretKey }, headers: { Origin: origin } });
    const cookie = (signIn.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
    const { data } = await signIn.json<{ data: { csrf_token: string } }>();
    const id = await apiKeyId(busy.id, 'secret');
    for (let i = 0; i < 120; i += 1) await env.UPLOAD_RATE_LIMITER.limit({ key: id });
    const form = new FormData();
    form.append('file', new File(['"transaction_type","amount"\n"sale","1"\n'], 'console.csv', { type: 'text/csv' }));
    const limited = await call('POST', '/console/batches', { body: form, headers: { Cookie: cookie, 'X-CSRF-Token': data.csrf_token, Origin: origin } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('Retry-After')).toBe('60');
    await limited.body?.cancel();
  });
});

describe('temp token lifetime', () => {
  it(`a temp token reads as unknown ${TEMP_TOKEN_TTL_SECONDS} seconds after it was made`, async () => {
    const response = await call('POST', '/api/tokenizer/token', {
      key: shop.publicKey,
      body: { cc_number: '4242424242424242', cc_expiration: '12/39', cc_cvc: '123' },
    });
    const { data } = await response.json<{ data: { temp_token: string; expires_at: string } }>();
    const expiresAt = Date.parse(data.expires_at);
    expect(TEMP_TOKEN_TTL_SECONDS).toBe(15 * 60);
    expect((await readTempToken(env, shop.id, data.temp_token, new Date(expiresAt - 1_000))).ok).toBe(true);
    expect(await readTempToken(env, shop.id, data.temp_token, new Date(expiresAt))).toEqual({ ok: false, reason: 'unknown_or_expired' });
  });
});
