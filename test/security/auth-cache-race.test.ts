/**
 * A key revoked while a request is authenticating stays revoked. Authentication only reads the
 * caches (the events that change a caller write KV: storage/auth-cache.ts), so the in-flight
 * request cannot put the caller it read back into KV; and the isolate does not keep a caller it
 * read before a revocation. The revocation is made to land at the worst moment by running it inside
 * the binding's own call (the real KV and D1 answer; the test only chooses when it happens).
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

/** A new secret key of the test merchant, never used yet. */
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
  it('lands while the request reads D1 (no KV entry): the key is refused from then on, and nothing is cached', async () => {
    const { id, key } = await newKey();
    const cacheKey = `auth:${await sha256Hex(key)}`;
    // A key without an entry (made before events wrote them, or a location the write has not reached).
    await env.BIN_CACHE.delete(cacheKey);
    const puts = vi.spyOn(env.BIN_CACHE, 'put');
    const prepare = env.DB.prepare.bind(env.DB);
    let revoked = false;
    vi.spyOn(env.DB, 'prepare').mockImplementation((query: string) => {
      if (!revoked && query.includes('FROM api_keys k JOIN merchants')) {
        revoked = true;
        // The revocation commits while this request is on its way to D1.
        return {
          bind: (...args: unknown[]) => ({
            first: async () => {
              vi.mocked(env.DB.prepare).mockRestore();
              expect((await admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
              return prepare(query).bind(...args).first();
            },
          }),
        } as unknown as D1PreparedStatement;
      }
      return prepare(query);
    });
    expect((await listing(key)).status).toBe(401);
    expect(revoked).toBe(true);
    // The reader wrote nothing; the revocation left no entry.
    expect(puts.mock.calls.filter(([name]) => String(name).startsWith('auth:'))).toEqual([]);
    expect(await env.BIN_CACHE.get(cacheKey)).toBeNull();
    expect((await listing(key)).status).toBe(401);
  });

  it('lands while a KV hit is being read: the isolate does not keep the caller it read', async () => {
    const { id, key } = await newKey();
    // KV holds the caller (the key's creation wrote it); this isolate has not seen the key yet.
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
    expect(await env.BIN_CACHE.get(`auth:${keyHash}`)).toBeNull();
    expect((await listing(key)).status).toBe(401);
  });

  it('a revocation landing while a merchant change writes the key\'s entry: the entry ends deleted, the key refused', async () => {
    const { id, key } = await newKey();
    const cacheKey = `auth:${await sha256Hex(key)}`;
    const put = env.BIN_CACHE.put.bind(env.BIN_CACHE);
    let revoked = false;
    vi.spyOn(env.BIN_CACHE, 'put').mockImplementation(async (name, value, options) => {
      if (!revoked && name === cacheKey) {
        // The change read the key as active; the revocation commits (and deletes the entry) before
        // the change's write lands, which would bring the revoked key back but for the re-read.
        revoked = true;
        expect((await admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
      }
      return put(name, value, options);
    });
    expect((await admin('PATCH', `/admin/merchants/${merchantId}`, { name: 'Renamed Race Shop' })).status).toBe(200);
    expect(revoked).toBe(true);
    vi.restoreAllMocks();
    expect(await env.BIN_CACHE.get(cacheKey)).toBeNull();
    expect((await listing(key)).status).toBe(401);
  });

  it('a merchant change rewrites the entries of its keys: the next request sees the new name', async () => {
    const { key } = await newKey();
    const cacheKey = `auth:${await sha256Hex(key)}`;
    expect((await listing(key)).status).toBe(200);
    expect((await admin('PATCH', `/admin/merchants/${merchantId}`, { name: 'Race Shop Again' })).status).toBe(200);
    expect(await env.BIN_CACHE.get(cacheKey, 'json')).toMatchObject({ merchantName: 'Race Shop Again' });
    const sale = await call('POST', '/api/transaction', {
      key,
      body: { transaction_type: 'sale', amount: 100, cc_number: '4111111111111111', cc_expiration: '12/30' },
    });
    expect((await sale.json<{ data: { user_name: string } }>()).data.user_name).toBe('Race Shop Again');
  });
});
