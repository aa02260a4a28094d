import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEMP_TOKEN_PATTERN } from '../../src/schemas/tokenizer';
import { readTempToken } from '../../src/services/tokens';
import { apiKeyId, call, createMerchant, type TestMerchant, type Envelope } from '../helpers/api';
import { limiterOnClock } from '../helpers/rate-limits';

interface TokenData {
  temp_token: string;
  expires_at: string;
}

const VISA = '4111111111111111';
const CARD = { cc_number: VISA, cc_expiration: '12/39', cc_cvc: '7391' };

let merchant: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  merchant = await createMerchant({ name: 'Tokenizing Shop' });
  other = await createMerchant({ name: 'Other Shop' });
});

async function tokenize(key: string, body: unknown = CARD): Promise<Response> {
  return call('POST', '/api/tokenizer/token', { key, body });
}

describe('POST /api/tokenizer/token', () => {
  it('turns a card into a temp token for the public key, valid for 15 minutes', async () => {
    const before = Date.now();
    const response = await tokenize(merchant.publicKey);
    expect(response.status).toBe(201);
    const body = await response.json<Envelope<TokenData>>();
    expect(body.status).toBe('success');
    expect(body.data.temp_token).toMatch(TEMP_TOKEN_PATTERN);
    expect(body.data.temp_token).toMatch(/^tok_[A-Za-z0-9_-]{32}$/);
    const ttl = Date.parse(body.data.expires_at) - before;
    expect(ttl).toBeGreaterThan(14.9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    expect(JSON.stringify(body)).not.toContain(VISA);

    const read = await readTempToken(env, merchant.id, body.data.temp_token, new Date());
    expect(read).toEqual({ ok: true, card: { number: VISA, expiration: '12/39', cvc: '7391' } });
  });

  it('accepts the secret key too, and a card without CVC', async () => {
    const response = await tokenize(merchant.secretKey, { cc_number: '3782 822463 10005', cc_expiration: '0741' });
    expect(response.status).toBe(201);
    const { data } = await response.json<Envelope<TokenData>>();
    const read = await readTempToken(env, merchant.id, data.temp_token, new Date());
    expect(read).toEqual({ ok: true, card: { number: '378282246310005', expiration: '07/41' } });
  });

  it('gives every card a different token', async () => {
    const [a, b] = await Promise.all([tokenize(merchant.publicKey), tokenize(merchant.publicKey)]);
    const tokens = await Promise.all([a, b].map(async (r) => (await r.json<Envelope<TokenData>>()).data.temp_token));
    expect(tokens[0]).not.toBe(tokens[1]);
  });

  it('answers 401 without a key', async () => {
    const response = await call('POST', '/api/tokenizer/token', { body: CARD });
    expect(response.status).toBe(401);
  });

  it('rejects a number failing Luhn with 400 naming the field, without echoing the number', async () => {
    const response = await tokenize(merchant.publicKey, { ...CARD, cc_number: '4111111111111112' });
    expect(response.status).toBe(400);
    const body = await response.json<Envelope>();
    expect(body.msg).toBe('cc_number: fails the Luhn check');
    expect(JSON.stringify(body)).not.toContain('4111111111111112');
  });

  it.each([
    [{ cc_expiration: '12/39' }, 'cc_number'],
    [{ ...CARD, cc_number: '41111' }, 'cc_number: must be 12 to 19 digits'],
    [{ ...CARD, cc_expiration: '13/39' }, 'cc_expiration: must be MM/YY'],
    [{ ...CARD, cc_expiration: '01/20' }, 'cc_expiration: card has expired'],
    [{ ...CARD, cc_cvc: '12' }, 'cc_cvc: must be 3 or 4 digits'],
    [{ ...CARD, extra: 1 }, 'extra'],
  ])('rejects a malformed card %j with 400', async (body, expected) => {
    const response = await tokenize(merchant.publicKey, body);
    expect(response.status).toBe(400);
    const envelope = await response.json<Envelope>();
    expect(envelope.status).toBe('failed');
    expect(envelope.msg).toContain(expected);
  });
});

describe('reading a temp token', () => {
  async function freshToken(): Promise<string> {
    const response = await tokenize(merchant.publicKey);
    return (await response.json<Envelope<TokenData>>()).data.temp_token;
  }

  it('can be read more than once within its TTL (a lookup does not burn it)', async () => {
    const token = await freshToken();
    const now = new Date();
    expect((await readTempToken(env, merchant.id, token, now)).ok).toBe(true);
    expect((await readTempToken(env, merchant.id, token, new Date(now.getTime() + 14 * 60_000))).ok).toBe(true);
  });

  it('is unknown or expired once 15 minutes have passed (injected clock)', async () => {
    const token = await freshToken();
    const later = new Date(Date.now() + 15 * 60_000 + 1_000);
    expect(await readTempToken(env, merchant.id, token, later)).toEqual({ ok: false, reason: 'unknown_or_expired' });
  });

  it("is unknown to another merchant", async () => {
    const token = await freshToken();
    expect(await readTempToken(env, other.id, token, new Date())).toEqual({ ok: false, reason: 'unknown_or_expired' });
  });

  it('is unknown when malformed or never issued', async () => {
    expect(await readTempToken(env, merchant.id, 'tok_short', new Date())).toEqual({ ok: false, reason: 'unknown_or_expired' });
    expect(await readTempToken(env, merchant.id, 'tok_' + 'A'.repeat(32), new Date())).toEqual({
      ok: false,
      reason: 'unknown_or_expired',
    });
  });

  it('keeps neither the card number nor the CVC readable in KV, and expires the entry', async () => {
    await freshToken();
    const { keys } = await env.TOKENS.list();
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(key.name).not.toMatch(/tok_/); // keys are hashes: a listing hands out no usable token
      expect(key.expiration).toBeGreaterThan(Date.now() / 1000);
      expect(key.expiration).toBeLessThanOrEqual(Date.now() / 1000 + 15 * 60 + 5);
      const value = (await env.TOKENS.get(key.name)) ?? '';
      expect(value).not.toContain(VISA);
      expect(value).not.toContain('7391');
    }
  });
});

describe('tokenizer rate limit', () => {
  afterEach(() => vi.restoreAllMocks());

  it('answers 429 with Retry-After once a key passes its limit', async () => {
    const shop = await createMerchant({ name: 'Busy Shop' });
    const keyId = await apiKeyId(shop.id, 'public');
    // The binding's rule (wrangler.toml: 600 per 60 s, held there by test/node/rate-limit-config)
    // on a clock the test holds (see limiterOnClock). All but one of the key's budget is spent
    // beforehand; the app's own request must spend the last one, against this key, so the next is refused.
    const now = Date.UTC(2026, 10, 23, 12, 0, 30);
    const limit = vi.spyOn(env.TOKENIZER_RATE_LIMITER, 'limit').mockImplementation(limiterOnClock(600, 60, () => now));
    for (let i = 0; i < 600 - 1; i += 1) await env.TOKENIZER_RATE_LIMITER.limit({ key: keyId });
    // Empty bodies on purpose: the limit counts attempts, valid or not, which is what card testers produce.
    const last = await call('POST', '/api/tokenizer/token', { key: shop.publicKey, body: {} });
    expect(last.status).toBe(400);
    await last.body?.cancel();
    expect(limit).toHaveBeenLastCalledWith({ key: keyId });
    const limited = await call('POST', '/api/tokenizer/token', { key: shop.publicKey, body: {} });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('Retry-After')).toBe('60');
    const body = await limited.json<Envelope>();
    expect(body).toMatchObject({ status: 'failed', data: null });
    expect(body.msg).toBe('rate limit exceeded for this API key; retry in 60 seconds');

    // Another key (another merchant) is not affected.
    expect((await tokenize(merchant.publicKey)).status).toBe(201);
  });
});
