import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { lookupCard } from '../../src/services/bin-lookup/card-metadata';
import { admin, apiKeyId, call, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv, lookupBin, lookupOk } from '../helpers/bins';
import { limiterOnClock } from '../helpers/rate-limits';

const BINS = [
  'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial,currency',
  '411111,Visa,Six Digit Bank,credit,classic,US,false,false,USD',
  '41111122,visa,Eight Digit Bank,debit,gold,GB,,,GBP',
  '555555,MASTERCARD,Debit Union,debit,standard,US,,,',
  '601111,,No Brand Bank,credit,,US,,,',
].join('\n');

const RANGES = ['low,high,issuing_bank,country,card_level_generic', '41111150,41111159,Range Bank,CA,platinum'].join('\n');

let merchant: TestMerchant;
let enhanced: TestMerchant;

beforeAll(async () => {
  merchant = await createMerchant({ name: 'Plain' });
  enhanced = await createMerchant({ name: 'Enhanced', enhanced_bin_lookup: true });
  await importCsv(BINS);
  await importCsv(RANGES, '/admin/bins/ranges/import');
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST /api/lookup/bin/protected', () => {
  it("answers SPEC.md's response object itself, no envelope, no internal fields", async () => {
    const response = await lookupBin(merchant.secretKey, { bin: '411111' });
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toContain('application/json');
    expect(await response.json()).toEqual({
      bin: '411111',
      card_brand: 'visa',
      issuing_bank: 'Six Digit Bank',
      card_type: 'credit',
      card_level_generic: 'classic',
      country: 'US',
      payment_method_type: 'card',
      // Additive fields the BIN data stores (issue: prepaid, commercial, issuer currency).
      is_prepaid: false,
      is_commercial: false,
      issuer_currency: 'USD',
    });
  });

  it('takes the longest stored prefix: an 8-digit record beats its 6-digit parent', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '41111122' })).toMatchObject({ bin: '41111122', issuing_bank: 'Eight Digit Bank', country: 'GB' });
    expect(await lookupOk(merchant.secretKey, { bin: '41111123' })).toMatchObject({ bin: '41111123', issuing_bank: 'Six Digit Bank' });
  });

  it('answers only the first 8 digits of a full card number sent as bin', async () => {
    const body = await lookupOk(merchant.secretKey, { bin: '4111112200001111' });
    expect(body).toMatchObject({ bin: '41111122', issuing_bank: 'Eight Digit Bank' });
    const sixDigit = await lookupOk(merchant.secretKey, { bin: '4111119900001111' });
    expect(sixDigit.bin).toBe('411111');
  });

  it('fills a stored record without a brand from the IIN ranges', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '601111' })).toMatchObject({ card_brand: 'discover', issuing_bank: 'No Brand Bank' });
  });

  it('answers an unknown BIN with the brand its IIN range tells', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '378282' })).toEqual({ bin: '378282', card_brand: 'amex' });
    expect(await lookupOk(merchant.secretKey, { bin: '22230031' })).toEqual({ bin: '22230031', card_brand: 'mastercard' });
  });

  it('answers an unknown BIN of no known brand with the bin alone', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '700000' })).toEqual({ bin: '700000' });
  });
});

describe('enhanced lookup', () => {
  it('lets account ranges win field by field for merchants with the flag', async () => {
    // The range is 7 digits precise, so only the first 6 digits of the number are shown.
    expect(await lookupOk(enhanced.secretKey, { bin: '4111115512345678' })).toEqual({
      bin: '411111',
      card_brand: 'visa',
      issuing_bank: 'Range Bank',
      card_type: 'credit',
      card_level_generic: 'platinum',
      country: 'CA',
      payment_method_type: 'card',
      is_prepaid: false,
      is_commercial: false,
      issuer_currency: 'USD',
    });
  });

  it('never shows account ranges to merchants without the flag', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '4111115512345678' })).toMatchObject({
      bin: '411111',
      issuing_bank: 'Six Digit Bank',
      card_level_generic: 'classic',
      country: 'US',
    });
  });

  it('uses a range only when it holds every number the digits sent can start', async () => {
    // 7 digits "4111115" span 41111150…41111159, all inside the range; 6 digits do not.
    expect(await lookupOk(enhanced.secretKey, { bin: '4111115' })).toMatchObject({ issuing_bank: 'Range Bank' });
    expect(await lookupOk(enhanced.secretKey, { bin: '411111' })).toMatchObject({ issuing_bank: 'Six Digit Bank' });
  });

  it('applies when the merchant flag is switched on', async () => {
    const later = await createMerchant({ name: 'Later' });
    expect(await lookupOk(later.secretKey, { bin: '41111155' })).toMatchObject({ issuing_bank: 'Six Digit Bank' });
    await admin('PATCH', `/admin/merchants/${later.id}`, { enhanced_bin_lookup: true });
    expect(await lookupOk(later.secretKey, { bin: '41111155' })).toMatchObject({ issuing_bank: 'Range Bank' });
  });
});

describe('KV cache', () => {
  it('answers a warm lookup without any D1 query', async () => {
    await lookupCard(env, '555555', { enhanced: true }); // cold: fills the cache
    const prepare = vi.spyOn(env.DB, 'prepare');
    const batch = vi.spyOn(env.DB, 'batch');
    const warm = await lookupCard(env, '555555', { enhanced: true });
    expect(warm).toMatchObject({ bin: '555555', card_brand: 'mastercard', issuing_bank: 'Debit Union', matched_length: 6 });
    expect(prepare).not.toHaveBeenCalled();
    expect(batch).not.toHaveBeenCalled();
  });

  it('answers a warm HTTP lookup (auth, version, record) without any D1 query', async () => {
    await lookupOk(merchant.secretKey, { bin: '55555512' });
    const prepare = vi.spyOn(env.DB, 'prepare');
    expect(await lookupOk(merchant.secretKey, { bin: '55555512' })).toMatchObject({ issuing_bank: 'Debit Union' });
    expect(prepare).not.toHaveBeenCalled();
  });

  it('caches misses too, and an import makes the new data visible at once', async () => {
    expect(await lookupOk(merchant.secretKey, { bin: '424242' })).toEqual({ bin: '424242', card_brand: 'visa' });
    // Written behind the service's back (no version bump): the cached miss is still served.
    await env.DB.prepare(`INSERT INTO bins (prefix, issuing_bank, updated_at) VALUES ('424242', 'Sneaky Bank', 'x')`).run();
    expect(await lookupOk(merchant.secretKey, { bin: '424242' })).toEqual({ bin: '424242', card_brand: 'visa' });
    // An import bumps the data version: answers cached from the old data are not served again.
    await importCsv('bin,issuing_bank,card_type,country\n424242,Stripe Test Bank,credit,US');
    expect(await lookupOk(merchant.secretKey, { bin: '424242' })).toMatchObject({ issuing_bank: 'Stripe Test Bank', country: 'US' });
  });

  it('keeps hits and misses in KV under keys that carry the data version', async () => {
    await lookupOk(merchant.secretKey, { bin: '5555551234567' });
    await lookupOk(merchant.secretKey, { bin: '700001' });
    const version = await env.BIN_CACHE.get('bins:version');
    expect(version).toMatch(/^[0-9]+$/);
    expect(await env.BIN_CACHE.get(`bin:v${version}:55555512345`, 'json')).toMatchObject({ v: { prefix: '555555', issuing_bank: 'Debit Union' } });
    expect(await env.BIN_CACHE.get(`bin:v${version}:700001`, 'json')).toEqual({ v: null });
  });

  it('never puts more than 11 digits of a card number into a cache key', async () => {
    await lookupOk(enhanced.secretKey, { bin: '4111119876543210' });
    const { keys } = await env.BIN_CACHE.list();
    // auth: entries are keyed by a SHA-256 of an API key (hex may hold long digit runs by chance).
    for (const { name } of keys.filter(({ name }) => !name.startsWith('auth:'))) expect(name).not.toMatch(/[0-9]{12}/);
  });
});

describe('validation', () => {
  const cases: [string, unknown, string][] = [
    ['no source', { country: 'US', state: 'CA' }, 'bin: one of bin, temp_token or customer_id is required'],
    ['bin with letters', { bin: '4111ab' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin shorter than 6', { bin: '41111' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin longer than 19', { bin: '41111111111111111111' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin in Arabic-Indic digits', { bin: '٤١١١١١' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin in full-width digits', { bin: '４１１１１１' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin with spaces', { bin: '4111 1111' }, 'bin: must be 6 to 19 digits (0-9 only)'],
    ['bin as a number', { bin: 411111 }, 'bin: must be a string'],
    ['country of three letters', { bin: '411111', country: 'USA', state: 'CA' }, 'country: must be a two-letter country code'],
    ['country with a digit', { bin: '411111', country: 'U1', state: 'CA' }, 'country: must be a two-letter country code'],
    ['state malformed', { bin: '411111', country: 'US', state: 'C@' }, 'state: must be a region code of 1 to 3 letters or digits, such as CA'],
    ['state too long', { bin: '411111', country: 'US', state: 'CALI' }, 'state: must be a region code of 1 to 3 letters or digits, such as CA'],
    ['temp_token malformed', { temp_token: 'tok_short' }, 'temp_token: is not a valid token (tok_ and 32 characters)'],
    ['customer_id malformed', { customer_id: 'not valid!' }, 'customer_id: must be 1 to 40 letters, digits, ".", "-", "_" or "^"'],
    ['customer_id too long', { customer_id: 'a'.repeat(41) }, 'customer_id: must be 1 to 40 letters, digits, ".", "-", "_" or "^"'],
    ['payment_method_id malformed', { customer_id: 'cus1', payment_method_id: 'pm 1' }, 'payment_method_id: must be 1 to 64 letters, digits, ".", "-", "_" or "^"'],
    ['payment_method_id alone', { bin: '411111', payment_method_id: 'pm_1' }, 'payment_method_id: is only used with customer_id'],
    ['two sources', { bin: '411111', customer_id: 'cus1' }, 'customer_id: send only one of bin, temp_token, customer_id (got bin, customer_id)'],
  ];

  it.each(cases)('answers 400 for %s, naming the field', async (_name, body, msg) => {
    const response = await lookupBin(merchant.secretKey, body);
    expect(response.status).toBe(400);
    const answer = await response.json<{ status: string; msg: string; data: null }>();
    expect(answer).toMatchObject({ status: 'failed', msg, data: null });
  });

  it('answers 400 for a body that is not JSON, and 415 for a body not sent as JSON', async () => {
    const response = await call('POST', '/api/lookup/bin/protected', { key: merchant.secretKey, body: '{"bin": ', headers: { 'Content-Type': 'application/json' } });
    expect(response.status).toBe(400);
    expect((await lookupBin(merchant.secretKey, '{"bin": "411111"}')).status).toBe(415);
  });
});

describe('authentication', () => {
  it('answers 401 without a key, with an unknown key and with a public key', async () => {
    for (const key of [null, 'api_notARealKey000000000000000000000', merchant.publicKey]) {
      const response = await lookupBin(key, { bin: '411111' });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ status: 'failed', data: null });
    }
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After once the API key has spent its budget', async () => {
    const prober = await createMerchant({ name: 'Prober' });
    const keyId = await apiKeyId(prober.id, 'secret');
    // The binding's rule (wrangler.toml: 1200 per 60 s, held there by test/node/rate-limit-config)
    // on a clock the test holds (see limiterOnClock). All but one of the key's budget is spent
    // beforehand; the app's own lookup must spend the last one, against this key, so the next is refused.
    const now = Date.UTC(2026, 10, 23, 12, 0, 30);
    const limit = vi.spyOn(env.LOOKUP_RATE_LIMITER, 'limit').mockImplementation(limiterOnClock(1200, 60, () => now));
    for (let i = 0; i < 1200 - 1; i += 1) await env.LOOKUP_RATE_LIMITER.limit({ key: keyId });
    expect((await lookupBin(prober.secretKey, { bin: '411111' })).status).toBe(200);
    expect(limit).toHaveBeenLastCalledWith({ key: keyId });

    const response = await lookupBin(prober.secretKey, { bin: '411111' });
    expect(response.status).toBe(429);
    expect(response.headers.get('Retry-After')).toBe('60');
    expect(await response.json()).toEqual({
      status: 'failed',
      msg: 'rate limit exceeded for this API key; retry in 60 seconds',
      data: null,
    });
    // Another key of the same service is not affected.
    expect((await lookupBin(merchant.secretKey, { bin: '411111' })).status).toBe(200);
  });
});
