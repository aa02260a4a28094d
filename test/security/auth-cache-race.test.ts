/**
 * A key revoked while a request is authenticating stays revoked: the in-flight request must not
 * write the caller it read before the revocation back into the KV or isolate cache afterwards.
 * The revocation is made to land at the worst moment by running it inside the cache binding's own
 * call (the real KV answers; the test only chooses when the revocation happens).
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256Hex } from '../../src/lib/crypto';
import { putCachedCaller } from '../../src/storage/auth-cache';
import { admin, call, createMerchant } from '../helpers/api';

let merchantId: string;
beforeAll(async () => {
  merchantId = (await createMerchant({ name: 'Race Shop' })).id;
}, 30_000);

/** A new secret key of the test merchant, never used yet (so cached nowhere). */
async function newKey(): Promise<{ id: string; key: string; merchantId: string }> {
  const response = await admin('POST', `/admin/merchants/${merchantId}/keys`, { type: 'secret' });
  expect(response.status).toBe(201);
  const { data } = await response.json<{ data: { id: string; key: string } }>();
  return { ...data, merchantId };
}

const listing = (key: string) => call('GET', '/api/filebatch', { key });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('revocation while a request authenticates', () => {
  it('lands between the D1 read and the KV write: the key is refused from then on, and not cached', async () => {
    const { id, key } = await newKey();
    const put = env.BIN_CACHE.put.bind(env.BIN_CACHE);
    let revoked = false;
    vi.spyOn(env.BIN_CACHE, 'put').mockImplementation(async (name, value, options) => {
      if (!revoked && String(name).startsWith('auth:')) {
        revoked = true;
        expect((await admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
      }
      return put(name, value, options);
    });
    const inFlight = await listing(key);
    expect(revoked).toBe(true);
    // The revocation committed before this answer was decided: it is refused too.
    expect(inFlight.status).toBe(401);
    expect(await env.BIN_CACHE.get(`auth:${await sha256Hex(key)}`)).toBeNull();
    expect((await listing(key)).status).toBe(401);
  });

  it('lands while a KV hit is being read: the isolate does not keep the caller it read', async () => {
    const { id, key } = await newKey();
    // Another isolate had cached the caller in KV; this isolate has not seen the key yet.
    const keyHash = await sha256Hex(key);
    await putCachedCaller(env.BIN_CACHE, keyHash, {
      merchantId,
      merchantName: 'Race Shop',
      keyId: id,
      keyType: 'secret',
      enhancedBinLookup: false,
      surchargeRateBps: 0,
      maxCreditAmount: 100_000,
    });
    const get = env.BIN_CACHE.get.bind(env.BIN_CACHE) as (name: string, type: 'json') => Promise<unknown>;
    let revoked = false;
    vi.spyOn(env.BIN_CACHE, 'get').mockImplementation((async (name: string, type: 'json') => {
      const value = await get(name, type);
      if (!revoked && name.startsWith('auth:')) {
        revoked = true;
        expect((await admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
      }
      return value;
    }) as never);
    const inFlight = await listing(key);
    expect(revoked).toBe(true);
    expect(inFlight.status).toBe(401);
    vi.restoreAllMocks();
    expect((await listing(key)).status).toBe(401);
  });

  it('a merchant change landing the same way: the next request sees the new flags', async () => {
    const { key } = await newKey();
    const put = env.BIN_CACHE.put.bind(env.BIN_CACHE);
    let changed = false;
    vi.spyOn(env.BIN_CACHE, 'put').mockImplementation(async (name, value, options) => {
      if (!changed && String(name).startsWith('auth:')) {
        changed = true;
        expect((await admin('PATCH', `/admin/merchants/${merchantId}`, { name: 'Renamed Race Shop' })).status).toBe(200);
      }
      return put(name, value, options);
    });
    expect((await listing(key)).status).toBe(200);
    vi.restoreAllMocks();
    // The in-flight request wrote the caller it read (the old name) after the change had deleted
    // the entry; it saw the change on reading D1 again and took its write back.
    const cacheKey = `auth:${await sha256Hex(key)}`;
    expect(await env.BIN_CACHE.get(cacheKey)).toBeNull();
    // user_name on a new transaction is the merchant's current name, and that request caches it.
    const sale = await call('POST', '/api/transaction', {
      key,
      body: { transaction_type: 'sale', amount: 100, cc_number: '4111111111111111', cc_expiration: '12/30' },
    });
    expect((await sale.json<{ data: { user_name: string } }>()).data.user_name).toBe('Renamed Race Shop');
    expect(await env.BIN_CACHE.get(cacheKey, 'json')).toMatchObject({ merchantName: 'Renamed Race Shop' });
  });
});
