/**
 * A merchant's API day spread over ledger sub-shards (docs/capacity.md, "An API day in sub-shards"):
 * a `max` merchant's sales land in 8 shards of the day, each id naming its own (`s{k}`); everything
 * a merchant does by id, settlement and search reach every sub-shard; a tier change moves the count
 * from a later day only, and a key replayed across that midnight still finds yesterday's sale.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { readMeta } from '../../src/storage/ledger-shard/schema';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import type { TransactionInput, TransactionOutcome } from '../../src/schemas/transaction-columns';
import { authenticateKey, changeMerchant } from '../../src/services/merchants';
import { readApiShards } from '../../src/storage/api-shards';
import { processTransactions } from '../../src/services/recorded';
import { shardOfId } from '../../src/services/search/indexer';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { apiPlacement, ledgerShardName, parseTransactionId, utcDay } from '../../src/services/transactions/ledger';
import { getTransaction } from '../../src/services/transactions/engine';
import { ONE_API_SHARD, scheduleAfter } from '../../src/services/transactions/api-shards';
import { ledgerArchivePartKey } from '../../src/storage/ledger-archive';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { ledger } from '../helpers/claims';
import { created as made, customerWithCard, recurring, type Subscription } from '../helpers/recurring';
import { billDue } from '../../src/services/recurring/billing';
import { shardEntries } from '../helpers/ledger';
import { applySchema } from '../helpers/schema';

type TxRecord = Record<string, string | number | boolean | null>;
const SALE = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 };
const DAY = 86_400_000;

function post(shop: TestMerchant, key: string, body: unknown = SALE): Promise<Response> {
  return call('POST', '/api/transaction', { key: shop.secretKey, body, headers: { 'Idempotency-Key': key } });
}

async function created(shop: TestMerchant, key: string, body: unknown = SALE): Promise<TxRecord> {
  const response = await post(shop, key, body);
  expect(response.status).toBe(201);
  return (await response.json<Envelope<TxRecord>>()).data;
}

/** A key whose transaction lands in sub-shard `sub` of a day with `count` sub-shards. */
async function keyIn(merchantId: string, prefix: string, sub: number, count: number): Promise<string> {
  for (let i = 0; i < 1_000; i++) {
    const key = `${prefix}-${i}`;
    if ((await apiPlacement(merchantId, key, '2027-01-01', count)).sub === sub) return key;
  }
  throw new Error('no key found');
}

function subOf(id: unknown): number {
  const parsed = parseTransactionId(String(id));
  if (parsed?.kind !== 'api') throw new Error(`not an API id: ${String(id)}`);
  return parsed.sub;
}

describe("a max merchant's API day in 8 sub-shards", () => {
  let shop: TestMerchant;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Big Shop', rate_tier: 'max' });
  });

  it('sales spread over the sub-shards; each id names its own, GET by id and a replay find it', async () => {
    const sales = await Promise.all(Array.from({ length: 24 }, (_, i) => created(shop, `spread-${i}`)));
    const subs = new Set(sales.map((s) => subOf(s.id)));
    expect(subs.size).toBeGreaterThanOrEqual(4);
    for (const sale of sales) {
      const sub = subOf(sale.id);
      expect(String(sale.id)).toMatch(sub === 0 ? /^txn_a[0-9]{8}[0-9a-v]{20}$/ : new RegExp(`^txn_a[0-9]{8}[0-9a-v]{20}s${sub}$`));
      // The record is in the shard its id names.
      const name = ledgerShardName({ kind: 'api', merchantId: shop.id, day: utcDay(new Date()), sub });
      expect(shardOfId(shop.id, String(sale.id))).toBe(name);
      expect([...(await shardEntries(name)).values()].some((s) => s.record.id === sale.id)).toBe(true);
    }
    const inSub = sales.find((s) => subOf(s.id) !== 0);
    const got = await call('GET', `/api/transaction/${String(inSub?.id)}`, { key: shop.secretKey });
    expect(got.status).toBe(200);
    expect((await got.json<Envelope<TxRecord>>()).data).toEqual({ ...inSub, receipts: [] });
    // The same key again, the same day: the same transaction, nothing charged again.
    const key = `spread-${sales.indexOf(inSub ?? {})}`;
    const again = await post(shop, key);
    expect(again.status).toBe(200);
    expect((await again.json<Envelope<TxRecord>>()).data.id).toBe(inSub?.id);
    expect((await ledger(shop.id, key)).get(key)?.chargeCalls).toBe(1);
  });

  it('20 concurrent requests with one key in a sub-shard: one charge, the others wait or replay', async () => {
    const key = await keyIn(shop.id, 'race', 5, 8);
    expect((await post(shop, 'race-warm-up')).status).toBe(201);
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(shop, key)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.every((s) => s === 201 || s === 200 || s === 409)).toBe(true);
    const first = await (responses[statuses.indexOf(201)] as Response).json<Envelope<TxRecord>>();
    expect(subOf(first.data.id)).toBe(5);
    expect((await ledger(shop.id, key)).get(key)?.chargeCalls).toBe(1);
  });

  it('capture, void and refund by id in a sub-shard; settlement settles every sub-shard; search finds by id', async () => {
    const authKey = await keyIn(shop.id, 'auth', 3, 8);
    const voidKey = await keyIn(shop.id, 'void', 6, 8);
    const saleKeys = [await keyIn(shop.id, 'settle', 0, 8), await keyIn(shop.id, 'settle', 2, 8), await keyIn(shop.id, 'settle', 7, 8)];
    const auth = await created(shop, authKey, { ...SALE, transaction_type: 'authorize' });
    const toVoid = await created(shop, voidKey, { ...SALE, transaction_type: 'authorize' });
    const sales = await Promise.all(saleKeys.map((key) => created(shop, key)));
    expect([auth, toVoid, ...sales].map((t) => subOf(t.id))).toEqual([3, 6, 0, 2, 7]);

    const captured = await call('POST', `/api/transaction/${String(auth.id)}/capture`, { key: shop.secretKey, body: { amount: 600 } });
    expect(captured.status).toBe(200);
    expect((await captured.json<Envelope<TxRecord>>()).data).toMatchObject({ id: auth.id, status: 'pending_settlement', amount_captured: 600 });
    const voided = await call('POST', `/api/transaction/${String(toVoid.id)}/void`, { key: shop.secretKey });
    expect(voided.status).toBe(200);
    expect((await voided.json<Envelope<TxRecord>>()).data).toMatchObject({ id: toVoid.id, status: 'voided' });

    // Every sub-shard holding unsettled money registered with the merchant's settlement.
    const indexed = await settlementObject(env, shop.id).indexedShards();
    const day = utcDay(new Date());
    for (const sub of [2, 3, 7]) expect(indexed).toContain(`${shop.id}/api/${day}/${sub}`);
    expect(indexed).toContain(`${shop.id}/api/${day}`);

    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    for (const t of [auth, ...sales]) {
      const got = await call('GET', `/api/transaction/${String(t.id)}`, { key: shop.secretKey });
      expect((await got.json<Envelope<TxRecord>>()).data).toMatchObject({ id: t.id, status: 'settled' });
    }

    // A refund of a sale in sub-shard 7 lives there too, and its id finds it.
    const refund = await call('POST', `/api/transaction/${String(sales[2]?.id)}/refund`, { key: shop.secretKey, body: { amount: 400 } });
    expect(refund.status).toBe(201);
    const refundId = String((await refund.json<Envelope<TxRecord>>()).data.id);
    expect(refundId).toBe(`txn_r${String(sales[2]?.id).slice(4)}x1`);
    expect(parseTransactionId(refundId)).toMatchObject({ kind: 'refund', original: { kind: 'api', sub: 7 } });
    expect((await call('GET', `/api/transaction/${refundId}`, { key: shop.secretKey })).status).toBe(200);

    const found = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { transaction_id: { operator: '=', value: sales[1]?.id } } });
    expect(found.status).toBe(200);
    expect((await found.json<Envelope<TxRecord[]>>()).data.map((t) => t.id)).toEqual([sales[1]?.id]);
  });

  it("recurring billing (no API key's caller) places its charges by the same schedule", async () => {
    const subscriptions: Subscription[] = [];
    for (let i = 0; i < 10; i++) {
      const customer = await customerWithCard(shop);
      subscriptions.push(await made<Subscription>(recurring(shop, 'POST', '/subscription', { customer: { id: customer.id }, amount: 700 + i, charge_on_day: true })));
    }
    const run = await billDue(env, shop.id, utcDay(new Date()), () => new Date());
    expect(run).toMatchObject({ finished: true });
    expect(run?.charged).toBeGreaterThanOrEqual(10);
    const ids: string[] = [];
    for (const subscription of subscriptions) {
      const found = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { subscription_id: { operator: '=', value: subscription.id } } });
      ids.push(...(await found.json<Envelope<TxRecord[]>>()).data.map((t) => String(t.id)));
    }
    expect(ids).toHaveLength(10);
    expect(new Set(ids.map(subOf)).size).toBeGreaterThanOrEqual(2);
    // Billed again: each cycle's key is found in its sub-shard, nothing charged twice.
    expect((await billDue(env, shop.id, utcDay(new Date()), () => new Date()))?.charged).toBe(0);
  });

  it("a sub-shard keeps its day's retention: hashes cleared and archived when the day's shard's are, its alarm armed", async () => {
    const key0 = await keyIn(shop.id, 'keep', 0, 8);
    const key4 = await keyIn(shop.id, 'keep', 4, 8);
    await created(shop, key0);
    await created(shop, key4);
    const day = utcDay(new Date());
    const metaOf = (sub: number) =>
      runInDurableObject(env.LEDGER_SHARD.getByName(ledgerShardName({ kind: 'api', merchantId: shop.id, day, sub })), async (_i, state) => ({ meta: readMeta(state.storage.sql), alarm: await state.storage.getAlarm() }));
    const [zero, four] = [await metaOf(0), await metaOf(4)];
    expect(four.meta).toMatchObject({ name: `${shop.id}/api/${day}/4`, hashesClearAt: zero.meta?.hashesClearAt, archiveAt: zero.meta?.archiveAt });
    expect(four.meta?.hashesClearAt).toBe(new Date(Date.parse(`${day}T00:00:00Z`) + 2 * DAY).toISOString());
    expect(four.alarm).not.toBeNull();
  });

  it("an id of sub-shard 0 keeps the old form and names the day's shard", async () => {
    const key = await keyIn(shop.id, 'zero', 0, 8);
    const sale = await created(shop, key);
    expect(String(sale.id)).toMatch(/^txn_a[0-9]{8}[0-9a-v]{20}$/);
    expect(parseTransactionId(String(sale.id))).toEqual({ kind: 'api', day: utcDay(new Date()), sub: 0 });
    expect(shardOfId(shop.id, String(sale.id))).toBe(`${shop.id}/api/${utcDay(new Date())}`);
    expect((await call('GET', `/api/transaction/${String(sale.id)}`, { key: shop.secretKey })).status).toBe(200);
  });

  it("past retention, a sub-shard's id is answered archived with its own archive; the day's shard is not taken for it", async () => {
    const day = '2026-02-02';
    const { id } = await apiPlacement(shop.id, await keyIn(shop.id, 'old', 4, 8), day, 8);
    const dayId = (await apiPlacement(shop.id, await keyIn(shop.id, 'old0', 0, 8), day, 8)).id;
    const name = ledgerShardName({ kind: 'api', merchantId: shop.id, day, sub: 4 });
    await env.FILES.put(ledgerArchivePartKey(name, 1), 'x');
    const later = () => new Date(Date.parse(`${day}T00:00:00Z`) + 600 * DAY);
    expect(await getTransaction(env, shop.id, id, later)).toEqual({ ok: false, reason: 'archived', archive: `ledger-archive/${name}/` });
    // Sub-shard 4's archive lies under the day shard's prefix: the day shard itself was never archived.
    expect(await getTransaction(env, shop.id, dayId, later)).toEqual({ ok: false, reason: 'not_found' });
  });
});

describe('a tier change moves the count from a later day only', () => {
  const SALE_INPUT: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };
  let shop: TestMerchant;
  let caller: Caller;
  let from: string;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Growing Shop' });
    const patched = await admin('PATCH', `/admin/merchants/${shop.id}`, { rate_tier: 'max' });
    expect(patched.status).toBe(200);
    const shards = (await patched.json<Envelope<{ api_shards: { today: number; count: number; from: string } }>>()).data.api_shards;
    from = shards.from;
    expect(shards).toEqual({ today: 1, count: 8, from });
    // The first UTC day starting at least an hour after the change.
    expect(Date.parse(`${from}T00:00:00Z`)).toBeGreaterThanOrEqual(Date.now() + 3_600_000);
    expect(Date.parse(`${from}T00:00:00Z`)).toBeLessThan(Date.now() + 3_600_000 + DAY);
    const found = await authenticateKey(env, shop.secretKey);
    if (!found) throw new Error('no caller');
    caller = found;
  });

  async function one(key: string, at: number): Promise<TransactionOutcome> {
    const [outcome] = await processTransactions(env, caller, [{ input: SALE_INPUT, idempotencyKey: key }], { source: 'api', ipAddress: null }, () => new Date(at));
    if (!outcome) throw new Error('no outcome');
    return outcome;
  }

  it('today keeps one shard; from the new day on, the sales spread', async () => {
    const today = await Promise.all(Array.from({ length: 12 }, (_, i) => created(shop, `today-${i}`)));
    expect(today.every((s) => subOf(s.id) === 0)).toBe(true);
    const start = Date.parse(`${from}T12:00:00Z`);
    const next = await Promise.all(Array.from({ length: 12 }, (_, i) => one(`next-${i}`, start + i)));
    expect(new Set(next.map((o) => (o.ok ? subOf(o.record.id) : -1))).size).toBeGreaterThanOrEqual(3);
    // An id of the old day still answers from its one shard.
    expect((await call('GET', `/api/transaction/${String(today[0]?.id)}`, { key: shop.secretKey })).status).toBe(200);
  });

  it("a key sent before midnight (1 shard) and again after it (8): yesterday's sale answers, charged once", async () => {
    const key = await keyIn(shop.id, 'midnight', 6, 8);
    const midnight = Date.parse(`${from}T00:00:00Z`);
    const before = await one(key, midnight - 10 * 60_000);
    expect(before).toMatchObject({ ok: true, replayed: false });
    const after = await one(key, midnight + 10 * 60_000);
    expect(after).toMatchObject({ ok: true, replayed: true });
    if (!before.ok || !after.ok) throw new Error('not recorded');
    expect(after.record.id).toBe(before.record.id);
    expect(subOf(before.record.id)).toBe(0);
    expect((await ledger(shop.id, key, new Date(midnight))).get(key)?.chargeCalls).toBe(1);
  });

  it('a second change while the first is still ahead replaces it (GET and PATCH answer the count now and from when)', async () => {
    const back = await admin('PATCH', `/admin/merchants/${shop.id}`, { rate_tier: 'high' });
    expect(back.status).toBe(200);
    expect((await back.json<Envelope<{ api_shards: unknown }>>()).data.api_shards).toEqual({ today: 1, count: 2, from });
    const get = await admin('GET', `/admin/merchants/${shop.id}`);
    expect((await get.json<Envelope<{ api_shards: unknown; rate_tier: string }>>()).data).toMatchObject({ rate_tier: 'high', api_shards: { today: 1, count: 2, from } });
  });
});

describe('a change of count while the last one is in play', () => {
  it('is a 409 naming when it can be made; the same count is not; the day after, it is taken', async () => {
    const shop = await createMerchant({ name: 'Hasty Shop' });
    const noon = Date.parse('2027-06-10T12:00:00Z');
    await changeMerchant(env, shop.id, { rate_tier: 'max' }, () => new Date(noon));
    expect(await readApiShards(env.DB, shop.id)).toEqual({ count: 8, from: '2027-06-11', before: 1 });
    // The next morning the count of 8 is in play: yesterday had 1.
    const morning = () => new Date(Date.parse('2027-06-11T09:00:00Z'));
    await expect(changeMerchant(env, shop.id, { rate_tier: 'high' }, morning)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('from 2027-06-12T00:00:00Z') });
    expect(await changeMerchant(env, shop.id, { rate_tier: 'max' }, morning)).not.toBeNull();
    expect(await readApiShards(env.DB, shop.id)).toEqual({ count: 8, from: '2027-06-11', before: 1 });
    await changeMerchant(env, shop.id, { rate_tier: 'high' }, () => new Date(Date.parse('2027-06-12T00:00:00Z')));
    expect(await readApiShards(env.DB, shop.id)).toEqual({ count: 2, from: '2027-06-13', before: 8 });
  });
});

describe('a merchant raised to max before sub-shards existed', () => {
  it('applying schema.sql again gives it 8 sub-shards from the first day after the notice, once', async () => {
    const shop = await createMerchant({ name: 'Early Big Shop' });
    await changeMerchant(env, shop.id, { rate_tier: 'max' }, () => new Date());
    // As the database stood before: the tier, no schedule.
    await env.DB.prepare('DELETE FROM merchant_api_shards WHERE merchant_id = ?1').bind(shop.id).run();
    const applied = Date.now();
    await applySchema(env.DB, env.TEST_SCHEMA ?? '');
    const schedule = await readApiShards(env.DB, shop.id);
    expect(schedule).toMatchObject({ count: 8, before: 1 });
    expect(Date.parse(`${schedule?.from ?? ''}T00:00:00Z`)).toBeGreaterThanOrEqual(applied + 3_600_000);
    expect(Date.parse(`${schedule?.from ?? ''}T00:00:00Z`)).toBeLessThanOrEqual(applied + 3_600_000 + DAY);
    // A schedule already there is left as it is.
    await changeMerchant(env, shop.id, { rate_tier: 'high' }, () => new Date());
    const after = await readApiShards(env.DB, shop.id);
    await applySchema(env.DB, env.TEST_SCHEMA ?? '');
    expect(await readApiShards(env.DB, shop.id)).toEqual(after);
  });
});

describe('two tier changes at once', () => {
  it('the tier kept and the sub-shard count kept are always of the same tier; the loser is told to send it again', async () => {
    const tierCounts: Record<string, number> = { standard: 1, high: 2, max: 8 };
    for (const [first, second] of [['max', 'high'], ['high', 'standard'], ['standard', 'max']] as const) {
      const shop = await createMerchant({ name: `Racing Shop ${first}` });
      const noon = () => new Date(Date.parse('2027-07-01T12:00:00Z'));
      const results = await Promise.allSettled([changeMerchant(env, shop.id, { rate_tier: first }, noon), changeMerchant(env, shop.id, { rate_tier: second }, noon)]);
      expect(results.some((r) => r.status === 'fulfilled')).toBe(true);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'conflict', message: expect.stringContaining('rate_tier') });
      const tier = (await admin('GET', `/admin/merchants/${shop.id}`).then((r) => r.json<Envelope<{ rate_tier: string; api_shards: { count: number } }>>())).data;
      expect(tier.api_shards.count).toBe(tierCounts[tier.rate_tier]);
    }
  });
});

describe('the schedule a tier change writes (services/transactions/api-shards.ts)', () => {
  const at = (iso: string) => new Date(iso);
  it('the first UTC day starting at least an hour later; days a lookup needs keep their count', () => {
    expect(scheduleAfter(ONE_API_SHARD, 'max', at('2027-05-10T12:00:00Z'))).toEqual({ ok: true, changed: true, schedule: { count: 8, from: '2027-05-11', before: 1 } });
    // At 23:30 the next midnight is too close: the day after.
    expect(scheduleAfter(ONE_API_SHARD, 'high', at('2027-05-10T23:30:00Z'))).toEqual({ ok: true, changed: true, schedule: { count: 2, from: '2027-05-12', before: 1 } });
    // A change that took effect today: yesterday (1) and today (8) differ; another count waits for tomorrow's end of yesterday.
    const inPlay = { count: 8, from: '2027-05-11', before: 1 };
    expect(scheduleAfter(inPlay, 'high', at('2027-05-11T09:00:00Z'))).toEqual({ ok: false, retryFrom: '2027-05-12' });
    expect(scheduleAfter(inPlay, 'max', at('2027-05-11T09:00:00Z'))).toEqual({ ok: true, changed: false, schedule: inPlay });
    expect(scheduleAfter(inPlay, 'high', at('2027-05-12T00:00:00Z'))).toEqual({ ok: true, changed: true, schedule: { count: 2, from: '2027-05-13', before: 8 } });
    // Taking effect within the hour: in play too.
    expect(scheduleAfter(inPlay, 'standard', at('2027-05-10T23:30:00Z'))).toEqual({ ok: false, retryFrom: '2027-05-12' });
  });
});
