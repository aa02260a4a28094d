/**
 * Limits a big merchant can live with: its API transactions are counted per merchant at the rate
 * tier the operator sets (not once per key, so a merchant's rate is not its number of keys), and at
 * most EXPORTS_RUNNING_MAX of its exports run at once.
 */
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXPORT_SLOT_STALE_MS, EXPORTS_RUNNING_MAX, startExport, transactionExport } from '../../src/services/search/exports';
import { admin, call, createMerchant, type Envelope } from '../helpers/api';
import { limiterOnClock } from '../helpers/rate-limits';

const sale = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 };

describe('rate tiers', () => {
  afterEach(() => vi.restoreAllMocks());

  it('the admin API sets and answers a merchant\'s tier; standard by default; an unknown tier is a 400 naming rate_tier', async () => {
    const shop = await createMerchant({ name: 'Tier Shop' });
    const read = async () => (await (await admin('GET', `/admin/merchants/${shop.id}`)).json<Envelope<{ rate_tier: string }>>()).data.rate_tier;
    expect(await read()).toBe('standard');
    const patched = await admin('PATCH', `/admin/merchants/${shop.id}`, { rate_tier: 'max' });
    expect(patched.status).toBe(200);
    expect((await patched.json<Envelope<{ rate_tier: string }>>()).data.rate_tier).toBe('max');
    expect(await read()).toBe('max');
    const wrong = await admin('PATCH', `/admin/merchants/${shop.id}`, { rate_tier: 'unlimited' });
    expect(wrong.status).toBe(400);
    expect((await wrong.json<{ msg: string }>()).msg).toContain('rate_tier');
    const created = await admin('POST', '/admin/merchants', { name: 'High Shop', rate_tier: 'high' });
    expect((await created.json<Envelope<{ rate_tier: string }>>()).data.rate_tier).toBe('high');
  });

  it("a merchant's keys share its budget: a second key does not double its rate", async () => {
    const shop = await createMerchant({ name: 'Two Keys Shop' });
    const second = await admin('POST', `/admin/merchants/${shop.id}/keys`, { type: 'secret' });
    const secondKey = (await second.json<Envelope<{ key: string }>>()).data.key;
    const now = Date.UTC(2026, 10, 23, 12, 0, 30);
    vi.spyOn(env.TRANSACTION_RATE_LIMITER, 'limit').mockImplementation(limiterOnClock(3, 60, () => now));
    const statuses: number[] = [];
    for (const key of [shop.secretKey, secondKey, shop.secretKey, secondKey]) {
      const response = await call('POST', '/api/transaction', { key, body: sale });
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses).toEqual([201, 201, 201, 429]);
  });

  it('a tier change applies to the next request: the merchant is counted by its new tier\'s limiter', async () => {
    const shop = await createMerchant({ name: 'Upgrade Shop' });
    const standard = vi.spyOn(env.TRANSACTION_RATE_LIMITER, 'limit');
    const max = vi.spyOn(env.TRANSACTION_RATE_MAX, 'limit');
    expect((await call('POST', '/api/transaction', { key: shop.secretKey, body: sale })).status).toBe(201);
    expect(standard).toHaveBeenLastCalledWith({ key: shop.id });
    expect((await admin('PATCH', `/admin/merchants/${shop.id}`, { rate_tier: 'max' })).status).toBe(200);
    expect((await call('POST', '/api/transaction', { key: shop.secretKey, body: sale })).status).toBe(201);
    expect(max).toHaveBeenCalledWith({ key: shop.id });
    expect(standard).toHaveBeenCalledTimes(1);
  });
});

describe('exports running at once', () => {
  it(`at most ${EXPORTS_RUNNING_MAX} per merchant: the next is a 429 until one completes; other merchants are not held up`, async () => {
    const shop = await createMerchant({ name: 'Export Cap Shop' });
    const other = await createMerchant({ name: 'Other Export Shop' });
    const clock = () => new Date();
    const started: string[] = [];
    for (let i = 0; i < EXPORTS_RUNNING_MAX; i++) {
      const outcome = await startExport(env, shop.id, {}, clock, { arm: false });
      expect(outcome.ok).toBe(true);
      if (outcome.ok) started.push(outcome.export.id);
    }
    const refused = await call('POST', '/api/transaction/export', { key: shop.secretKey, body: {} });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('Retry-After')).toBe('60');
    expect((await refused.json<{ msg: string }>()).msg).toContain(`${EXPORTS_RUNNING_MAX} exports of this merchant are running`);
    expect((await startExport(env, other.id, {}, clock, { arm: false })).ok).toBe(true);

    // One completes (an empty merchant's export is one step): its slot is free again.
    const done = await transactionExport(env, started[0] ?? '').run(new Date().toISOString());
    expect(done.export?.status).toBe('completed');
    const accepted = await call('POST', '/api/transaction/export', { key: shop.secretKey, body: {} });
    expect(accepted.status).toBe(202);
    await accepted.body?.cancel();
  });

  it('an export that never finished stops counting 24 hours after it started', async () => {
    const shop = await createMerchant({ name: 'Stale Export Shop' });
    const dayAgo = new Date(Date.now() - EXPORT_SLOT_STALE_MS - 1_000).toISOString();
    for (let i = 0; i < EXPORTS_RUNNING_MAX; i++) {
      await env.DB.prepare('INSERT INTO running_exports (export_id, merchant_id, started_at) VALUES (?1, ?2, ?3)').bind(`exp_stale${i}`, shop.id, dayAgo).run();
    }
    expect((await startExport(env, shop.id, {}, () => new Date(), { arm: false })).ok).toBe(true);
    const left = await env.DB.prepare('SELECT COUNT(*) AS n FROM running_exports WHERE merchant_id = ?1').bind(shop.id).first<{ n: number }>();
    expect(left?.n).toBe(1);
  });
});
