/**
 * KV as a cache that cannot fail a request (issue 29, item 4). Production KV refuses a second
 * write to one key within a second with a 429; Miniflare does not, so these tests hand the Worker
 * a KV that does (test/helpers/throttled-kv.ts), shared by every concurrent request as one
 * namespace is shared by every isolate.
 */
import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import worker from '../../src/index';
import { sha256Hex } from '../../src/lib/crypto';
import { bumpLookupDataVersion } from '../../src/services/bin-lookup/data-version';
import { readDataVersion } from '../../src/storage/bins';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv } from '../helpers/bins';
import { throttledKv, type ThrottledKv } from '../helpers/throttled-kv';

/** The Worker's own fetch handler, with BIN_CACHE replaced by `kv`. */
async function fetchWith(kv: KVNamespace, method: string, path: string, key: string, body: unknown): Promise<Response> {
  const wrapped = new Proxy(env, { get: (target, property) => (property === 'BIN_CACHE' ? kv : Reflect.get(target, property)) }) as Env;
  const ctx = createExecutionContext();
  const request = new Request(`http://binbatch.test${path}`, {
    method,
    headers: { Authorization: key, 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },
    body: JSON.stringify(body),
  });
  const handler: ExportedHandler<Env> = worker;
  const response = await handler.fetch?.(request as Request<unknown, IncomingRequestCfProperties>, wrapped, ctx);
  await waitOnExecutionContext(ctx);
  if (!response) throw new Error('no response');
  return response;
}

/** Empties BIN_CACHE: no data version, no caller, no answer cached anywhere. */
async function coldKv(): Promise<void> {
  for (;;) {
    const { keys, list_complete } = await env.BIN_CACHE.list();
    await Promise.all(keys.map((k) => env.BIN_CACHE.delete(k.name)));
    if (list_complete) return;
  }
}

let shop: TestMerchant;
beforeAll(async () => {
  await importCsv(['bin,card_brand,issuing_bank,card_type,country', '47474747,visa,Throttle Bank,credit,US'].join('\n'));
  shop = await createMerchant({ name: 'Throttled Shop', surcharge_rate_bps: 300 });
});

describe('a KV that refuses a second write to a key within a second', () => {
  it('50 concurrent lookups and transactions with a cold cache: none fails', async () => {
    await coldKv();
    const throttled: ThrottledKv = throttledKv(env.BIN_CACHE);
    const lookups = Array.from({ length: 25 }, () =>
      fetchWith(throttled.kv, 'POST', '/api/lookup/bin/protected', shop.secretKey, { bin: '47474747', country: 'US', state: 'NY' }),
    );
    const sales = Array.from({ length: 25 }, (_, i) =>
      fetchWith(throttled.kv, 'POST', '/api/transaction', shop.secretKey, {
        transaction_type: 'sale',
        amount: 1_000 + i,
        cc_number: '4747474747474747',
        cc_expiration: '12/30',
        billing_country: 'US',
        billing_state: 'NY',
      }),
    );
    const answers = await Promise.all([...lookups, ...sales]);
    const statuses = await Promise.all(answers.map(async (answer) => `${answer.status} ${answer.status >= 400 ? await answer.text() : ''}`.trim()));
    expect(statuses.filter((status) => !/^20[01]$/.test(status))).toEqual([]);
    const lookup = await answers[0]?.json<Record<string, unknown>>();
    expect(lookup).toMatchObject({ bin: '47474747', issuing_bank: 'Throttle Bank', is_surchargeable: true });
    // The limit did bite: the concurrent misses of one BIN each tried to cache it, and only one could.
    expect([...throttled.refused.values()].reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);
  });

  it('no reader writes the data version or a caller: only the events that change them do', async () => {
    await coldKv();
    const throttled = throttledKv(env.BIN_CACHE);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => fetchWith(throttled.kv, 'POST', '/api/lookup/bin/protected', shop.secretKey, { bin: '47474747' })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 10 }, () => 200));
    const written = [...throttled.accepted.keys(), ...throttled.refused.keys()];
    expect(written.filter((key) => key === 'bins:version' || key.startsWith('auth:'))).toEqual([]);

    // An import writes the version; a merchant change writes the caller.
    await importCsv(['bin,card_brand,issuing_bank,card_type,country', '47474748,visa,Throttle Bank,credit,US'].join('\n'));
    expect(await env.BIN_CACHE.get('bins:version')).toMatch(/^[0-9]+$/);
    const keyHash = await sha256Hex(shop.secretKey);
    expect(await env.BIN_CACHE.get(`auth:${keyHash}`)).toBeNull();
    const { admin } = await import('../helpers/api');
    expect((await admin('PATCH', `/admin/merchants/${shop.id}`, { name: 'Throttled Shop Two' })).status).toBe(200);
    expect(await env.BIN_CACHE.get(`auth:${keyHash}`, 'json')).toMatchObject({ merchantName: 'Throttled Shop Two' });
  });
});

describe('the data version, written only by the bumps', () => {
  it('two bumps at once against the throttled KV: KV ends with the latest version, each 429 waited out', async () => {
    // The KV's clock is the test's: a bump that waits out a 429 moves it.
    let now = Date.now();
    const throttled = throttledKv(env.BIN_CACHE, () => now);
    const wrapped = new Proxy(env, { get: (target, property) => (property === 'BIN_CACHE' ? throttled.kv : Reflect.get(target, property)) }) as Env;
    const waits: number[] = [];
    const wait = async (ms: number) => {
      waits.push(ms);
      now += ms;
    };
    const versions = await Promise.all([bumpLookupDataVersion(wrapped, new Date(), wait), bumpLookupDataVersion(wrapped, new Date(), wait)]);
    const latest = await readDataVersion(env.DB);
    expect(Math.max(...versions)).toBe(latest);
    expect(await env.BIN_CACHE.get('bins:version')).toBe(String(latest));
    // The second write to the key within the second was refused and tried again after the wait.
    expect(throttled.refused.get('bins:version')).toBeGreaterThan(0);
    expect(waits.length).toBeGreaterThan(0);
  });
});
