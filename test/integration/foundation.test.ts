import { env } from 'cloudflare:workers';
import { Hono } from 'hono';
import { requestId } from 'hono/request-id';
import { describe, expect, it, vi } from 'vitest';
import type { AppEnv } from '../../src/env';
import { handleError } from '../../src/errors';
import { requireAnyKey, requireSecretKey } from '../../src/middleware/auth';
import { ADMIN_TOKEN, admin, call, createMerchant, type Envelope } from '../helpers/api';

describe('health and shared behaviour', () => {
  it('answers /healthz with 200 and a request id', async () => {
    const response = await call('GET', '/healthz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
    expect(response.headers.get('X-Request-Id')).toMatch(/.+/);
    expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff');
  });

  it('answers an unknown route with a 404 envelope', async () => {
    const response = await call('GET', '/api/nothing-here');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ status: 'failed', msg: 'no route for GET /api/nothing-here', data: null });
  });

  it('answers a wrong method with 405 and the allowed methods', async () => {
    const response = await admin('PUT', '/admin/merchants');
    expect(response.status).toBe(405);
    expect(response.headers.get('Allow')).toBe('POST');
    const body = await response.json<Envelope>();
    expect(body.status).toBe('failed');
    expect(body.msg).toContain('PUT not allowed');
  });

  it('answers malformed JSON with 400', async () => {
    const response = await call('POST', '/admin/merchants', {
      key: ADMIN_TOKEN,
      body: '{"name": ',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ status: 'failed', msg: 'Malformed JSON in request body', data: null });
  });

  it('answers a JSON endpoint called without a JSON Content-Type with 415 saying so (docs/api-decisions.md)', async () => {
    const response = await call('POST', '/admin/merchants', { key: ADMIN_TOKEN, body: '{"name": "A"}' });
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual({ status: 'failed', msg: 'Content-Type must be application/json', data: null });
  });

  it('answers a body over the JSON limit with 413', async () => {
    const response = await admin('POST', '/admin/merchants', { name: 'x'.repeat(70_000) });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ status: 'failed', msg: 'request body exceeds 65536 bytes', data: null });
  });

  it('answers a storage failure inside a real route with a generic 500 and the request id', async () => {
    const original = console.error;
    console.error = () => undefined;
    const prepare = vi.spyOn(env.DB, 'prepare').mockImplementation(() => {
      throw new Error('D1_ERROR: database is locked');
    });
    try {
      const response = await admin('GET', '/admin/merchants/anymerchant');
      expect(response.status).toBe(500);
      const body = await response.json<Envelope>();
      expect(body).toMatchObject({ status: 'failed', msg: 'internal server error', data: null });
      expect(body.request_id).toBe(response.headers.get('X-Request-Id'));
      expect(JSON.stringify(body)).not.toContain('D1_ERROR');
    } finally {
      prepare.mockRestore();
      console.error = original;
    }
  });

  it('answers an unexpected exception with a generic 500 carrying the request id, echoing nothing', async () => {
    const errors: string[] = [];
    const original = console.error;
    console.error = (line: string) => errors.push(line);
    try {
      const probe = new Hono<AppEnv>();
      probe.use(requestId());
      probe.onError(handleError);
      probe.get('/boom', () => {
        throw new Error('lookup failed for card 4111111111111111 cvc 123');
      });
      const response = await probe.request('/boom', {}, env);
      expect(response.status).toBe(500);
      const body = await response.json<Envelope>();
      expect(body.msg).toBe('internal server error');
      expect(body.request_id).toBe(response.headers.get('X-Request-Id'));
      expect(JSON.stringify(body)).not.toContain('4111');
      // The log keeps the message's shape with the digits redacted (the request id is random, so
      // only the message's own digits are checked).
      const logged = errors.join('\n');
      expect(logged).toContain('lookup failed for card *** cvc ***');
      expect(logged).not.toMatch(/4111|cvc 123/);
    } finally {
      console.error = original;
    }
  });
});

describe('admin API', () => {
  it('refuses a missing or wrong admin token with 401', async () => {
    const missing = await call('POST', '/admin/merchants', { body: { name: 'A' } });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ status: 'failed', msg: 'missing or invalid admin token', data: null });
    const wrong = await call('POST', '/admin/merchants', { key: 'not-the-token', body: { name: 'A' } });
    expect(wrong.status).toBe(401);
  });

  it('creates a merchant with one secret and one public key, shown once', async () => {
    const response = await admin('POST', '/admin/merchants', { name: 'Corner Shop', surcharge_rate_bps: 300 });
    expect(response.status).toBe(201);
    const { status, data } = await response.json<Envelope<Record<string, unknown>>>();
    expect(status).toBe('success');
    expect(data).toMatchObject({ name: 'Corner Shop', enhanced_bin_lookup: false, surcharge_rate_bps: 300 });
    expect(data.secret_key).toMatch(/^api_[A-Za-z0-9_-]{32}$/);
    expect(data.public_key).toMatch(/^pub_[A-Za-z0-9_-]{32}$/);

    const fetched = await admin('GET', `/admin/merchants/${String(data.id)}`);
    expect(fetched.status).toBe(200);
    const merchant = (await fetched.json<Envelope<Record<string, unknown>>>()).data;
    expect(merchant.name).toBe('Corner Shop');
    expect(merchant).not.toHaveProperty('secret_key');
    expect(merchant).not.toHaveProperty('public_key');
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const merchant = await createMerchant();
    const { results } = await env.DB.prepare('SELECT * FROM api_keys WHERE merchant_id = ?1').bind(merchant.id).all();
    expect(results).toHaveLength(2);
    const stored = JSON.stringify(results);
    expect(stored).not.toContain(merchant.secretKey);
    expect(stored).not.toContain(merchant.publicKey);
    for (const row of results) expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('validates merchant fields and names the field', async () => {
    const response = await admin('POST', '/admin/merchants', { name: '', surcharge_rate_bps: 1.5 });
    expect(response.status).toBe(400);
    const body = await response.json<Envelope>();
    expect(body.errors?.map((e) => e.field).sort()).toEqual(['name', 'surcharge_rate_bps']);
    expect(body.msg).toContain('name:');
  });

  it('updates a merchant with PATCH', async () => {
    const merchant = await createMerchant();
    const response = await admin('PATCH', `/admin/merchants/${merchant.id}`, { enhanced_bin_lookup: true });
    expect(response.status).toBe(200);
    expect((await response.json<Envelope<{ enhanced_bin_lookup: boolean; name: string }>>()).data).toMatchObject({
      enhanced_bin_lookup: true,
      name: 'Test Merchant',
    });
  });

  it('answers 404 for an unknown merchant', async () => {
    expect((await admin('GET', '/admin/merchants/nosuchmerchant')).status).toBe(404);
    expect((await admin('PATCH', '/admin/merchants/nosuchmerchant', { name: 'x' })).status).toBe(404);
    expect((await admin('POST', '/admin/merchants/nosuchmerchant/keys', { type: 'secret' })).status).toBe(404);
  });
});

describe('API keys', () => {
  // A probe app with the real middleware: a secret-only route and a route any key may call.
  const probe = new Hono<AppEnv>();
  probe.onError(handleError);
  probe.get('/secret', requireSecretKey, (c) => c.json(c.get('caller')));
  probe.get('/any', requireAnyKey, (c) => c.json(c.get('caller')));
  const get = (path: string, authorization?: string) =>
    probe.request(path, { headers: authorization ? { Authorization: authorization } : {} }, env);

  it('identifies the merchant from a secret key, with or without "Bearer "', async () => {
    const merchant = await createMerchant({ name: 'Key Shop' });
    for (const header of [merchant.secretKey, `Bearer ${merchant.secretKey}`]) {
      const response = await get('/secret', header);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ merchantId: merchant.id, merchantName: 'Key Shop', keyType: 'secret' });
    }
  });

  it('refuses a public key where a secret key is required, and accepts it where any key is', async () => {
    const merchant = await createMerchant();
    const refused = await get('/secret', merchant.publicKey);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ status: 'failed', msg: 'this operation requires a secret API key', data: null });
    expect((await get('/any', merchant.publicKey)).status).toBe(200);
  });

  it('answers 401 for a missing, malformed or unknown key', async () => {
    expect((await get('/secret')).status).toBe(401);
    expect((await get('/secret', 'Bearer ')).status).toBe(401);
    expect((await get('/secret', 'x'.repeat(300))).status).toBe(401);
    const unknown = await get('/secret', 'api_thisKeyWasNeverIssuedToAnyone0000');
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toEqual({ status: 'failed', msg: 'invalid or revoked API key', data: null });
  });

  it('creates further keys and refuses a revoked key from then on', async () => {
    const merchant = await createMerchant();
    const created = await admin('POST', `/admin/merchants/${merchant.id}/keys`, { type: 'secret' });
    expect(created.status).toBe(201);
    const { data } = await created.json<Envelope<{ id: string; type: string; key: string }>>();
    expect(data.type).toBe('secret');
    expect((await get('/secret', data.key)).status).toBe(200); // warms the auth cache

    const revoked = await admin('DELETE', `/admin/keys/${data.id}`);
    // One rule for every DELETE: 200 with { id, deleted: true } in the success envelope.
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toEqual({ status: 'success', msg: 'success', data: { id: data.id, deleted: true } });
    expect((await get('/secret', data.key)).status).toBe(401);
    expect((await get('/secret', merchant.secretKey)).status).toBe(200); // other keys unaffected
    expect((await admin('DELETE', `/admin/keys/${data.id}`)).status).toBe(404);
  });

  it('applies a merchant change to cached callers at once', async () => {
    const merchant = await createMerchant();
    expect(await (await get('/secret', merchant.secretKey)).json()).toMatchObject({ enhancedBinLookup: false });
    await admin('PATCH', `/admin/merchants/${merchant.id}`, { enhanced_bin_lookup: true });
    expect(await (await get('/secret', merchant.secretKey)).json()).toMatchObject({ enhancedBinLookup: true });
  });
});
