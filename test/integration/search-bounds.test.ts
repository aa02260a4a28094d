/**
 * The search index's reads at a big merchant's volume: a restricted scan (a settlement day's units,
 * the times a week object referenced) reads its keys a page at a time instead of the day's whole
 * list; a long list of times is bound in pieces under SQLite's 2 MB parameter; and one search reads
 * a bounded number of rows, its count saying when it is a lower bound.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { gunzipText } from '../../src/lib/gzip';
import { runSearch } from '../../src/services/search/query';
import { unitRow } from '../../src/services/search/unit-rows';
import { searchDayName } from '../../src/services/search/names';
import { initialiseDay, insertUnit, markUnitSettled, packRecord, readUnits, unpackRecord, type DayScan, type StoredUnit } from '../../src/storage/search/day';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';
import { call, createMerchant, type Envelope } from '../helpers/api';

const DAY = '2027-05-12';
const SETTLED_ON = '2027-05-13';

/** One real API transaction's record, as the index holds it: the template of the units seeded below. */
async function templateRecord(): Promise<{ merchantId: string; record: TransactionRecord }> {
  const shop = await createMerchant({ name: 'Bounds Shop' });
  const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1234 } });
  expect(response.status).toBe(201);
  const created = (await response.json<Envelope<{ id: string; created_at: string }>>()).data;
  const stub = env.SEARCH_DAY.getByName(searchDayName(shop.id, created.created_at.slice(0, 10)));
  const record = await runInDurableObject(stub, (_instance, state) => {
    const unit = readUnits(state.storage.sql, [{ shard: `${shop.id}/api/${created.created_at.slice(0, 10)}`, page: created.id, at: created.created_at }])[0] as StoredUnit;
    return JSON.parse(String(unit.records))[0] as unknown[];
  });
  return { merchantId: shop.id, record: unpackRecord(record) };
}

/** `n` API units of one transaction each, on DAY, a millisecond apart; `settled` of them (the newest) marked settled on SETTLED_ON. */
async function seedDay(merchantId: string, template: TransactionRecord, day: string, n: number, settled = 0): Promise<string[]> {
  const stub = env.SEARCH_DAY.getByName(searchDayName(merchantId, day));
  return runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    initialiseDay(sql, { merchantId, day, deleteAt: '2099-01-01T00:00:00.000Z' });
    const ats: string[] = [];
    for (let i = 0; i < n; i++) {
      const at = new Date(Date.parse(`${day}T01:00:00.000Z`) + i).toISOString();
      const id = `txn_a${day.replaceAll('-', '')}${String(i).padStart(20, '0')}`;
      const record = { ...template, id, created_at: at, status: 'pending_settlement' } as TransactionRecord;
      const key = { shard: `${merchantId}/api/${day}`, page: id, at };
      insertUnit(sql, { ...key, count: 1, pending: 1, members: [id], format: 'json', records: JSON.stringify([packRecord(record)]) });
      if (i >= n - settled) markUnitSettled(sql, key, SETTLED_ON, `${SETTLED_ON}T00:00:00.000Z`);
      ats.push(at);
    }
    return ats;
  });
}

/** A scan, with the rows its SQL statements read counted (the object's own `rowsRead` of each cursor). */
async function scanCounting(merchantId: string, day: string, request: Omit<DayScan, 'from' | 'to' | 'after' | 'conditions' | 'expiredBefore'>) {
  const stub = env.SEARCH_DAY.getByName(searchDayName(merchantId, day));
  return runInDurableObject(stub, async (instance, state) => {
    const sql = state.storage.sql;
    const exec = sql.exec.bind(sql);
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    let largestBound = 0;
    sql.exec = ((query: string, ...bindings: unknown[]) => {
      // Durable Object SQLite refuses a string over 2 MB (platform-limits.ts); local SQLite does not.
      for (const b of bindings) if (typeof b === 'string') largestBound = Math.max(largestBound, new TextEncoder().encode(b).length);
      const cursor = exec(query, ...bindings);
      cursors.push(cursor);
      return cursor;
    }) as typeof sql.exec;
    try {
      const answer = await (instance as unknown as { scan(r: DayScan): Promise<unknown> }).scan({
        ...request,
        from: `${day}T00:00:00.000Z`,
        to: `${day}T23:59:59.999Z`,
        after: null,
        conditions: [],
        expiredBefore: '2000-01-01T00:00:00.000Z',
      });
      return { answer: answer as { positions: { at: string; id: string }[]; count: number; exact: boolean; failed?: string }, rowsRead: cursors.reduce((sum, c) => sum + c.rowsRead, 0), largestBound };
    } finally {
      sql.exec = exec;
    }
  });
}

describe('restricted scans of a big day', () => {
  it('a settlement day of 3,000 API transactions: the first page reads a few hundred keys, not all 3,000, and a count walks them all', async () => {
    const { merchantId, record } = await templateRecord();
    const ats = await seedDay(merchantId, record, DAY, 3_000, 3_000);
    const page = await scanCounting(merchantId, DAY, { restrict: { kind: 'settled', day: SETTLED_ON }, want: 10, count: false, budget: 200_000 });
    expect(page.answer.failed).toBeUndefined();
    expect(page.answer.positions.map((p) => p.at)).toEqual(ats.slice(-10).reverse());
    // One read of keys (500) and the ten units: never the day's whole list.
    expect(page.rowsRead).toBeLessThan(1_200);
    const counted = await scanCounting(merchantId, DAY, { restrict: { kind: 'settled', day: SETTLED_ON }, want: 0, count: true, budget: 200_000 });
    expect(counted.answer).toMatchObject({ count: 3_000, exact: true });
  });

  it('a value referenced at 100,000 times (2.7 MB of them) is read in pieces under the 2 MB bound parameter', async () => {
    const { merchantId, record } = await templateRecord();
    const stored = await seedDay(merchantId, record, DAY, 5);
    // The week object's answer for a guest customer id used all day: most times are other units'.
    const times = Array.from({ length: 100_000 }, (_, i) => new Date(Date.parse(`${DAY}T02:00:00.000Z`) + i).toISOString());
    const found = await scanCounting(merchantId, DAY, { restrict: { kind: 'ats', ats: [...times, ...stored] }, want: 10, count: true, budget: 200_000 });
    expect(found.answer.failed).toBeUndefined();
    expect(found.answer).toMatchObject({ count: 5, exact: true });
    expect(found.answer.positions.map((p) => p.at)).toEqual([...stored].reverse());
    expect(found.largestBound).toBeLessThan(2_000_000);
  });
});

describe('rows one search reads', () => {
  it('counts the window up to its read bound: past it total_count is a lower bound and says so', async () => {
    const { merchantId, record } = await templateRecord();
    const days = ['2027-06-01', '2027-06-02', '2027-06-03'];
    for (const day of days) await seedDay(merchantId, record, day, 2_000);
    const directory = env.SEARCH_DIRECTORY.getByName(merchantId);
    expect(await directory.addShards(merchantId, days.map((day) => ({ shard: `${merchantId}/api/${day}`, day })))).toEqual({ parts: days.map(() => 0) });
    const input = { conditions: [], window: { from: '2027-06-01T00:00:00.000Z', to: '2027-06-04T00:00:00.000Z', defaulted: false }, limit: 10, offset: 0, after: null, count: true };
    const clock = () => new Date('2027-06-05T00:00:00.000Z');
    const whole = await runSearch(env, merchantId, input, clock);
    expect({ total: whole.totalCount, exact: whole.exact, page: whole.records.length }).toEqual({ total: 6_000, exact: true, page: 10 });
    const bounded = await runSearch(env, merchantId, { ...input, readMax: 4_500 }, clock);
    expect(bounded.exact).toBe(false);
    expect(bounded.totalCount).toBeLessThanOrEqual(4_500);
    expect(bounded.totalCount).toBeGreaterThan(0);
    // The page itself is whole: the newest ten, and a cursor after them.
    expect(bounded.records.map((r) => r.id)).toEqual(whole.records.map((r) => r.id));
    expect(bounded.next).not.toBeNull();
  });
});

describe('writes to a day object', () => {
  it('store the rows the caller encoded: a chunk is compressed by its indexer, and the day object keeps those bytes as given', async () => {
    const { merchantId, record } = await templateRecord();
    const day = '2027-05-20';
    const at = `${day}T03:00:00.000Z`;
    const records = [0, 1].map((i) => ({ ...record, id: `txn_a20270520${String(i).padStart(20, '0')}`, created_at: at }) as TransactionRecord);
    const row = await unitRow({ shard: `${merchantId}/api/${day}`, page: 'chunk', at, records });
    expect(row.format).toBe('gzip');
    const stub = env.SEARCH_DAY.getByName(searchDayName(merchantId, day));
    expect(await stub.add({ merchantId, day }, [row])).toBe(1);
    const stored = await runInDurableObject(stub, (_instance, state) => readUnits(state.storage.sql, [{ shard: row.shard, page: row.page, at }])[0] as StoredUnit);
    expect(new Uint8Array(stored.records as ArrayBuffer)).toEqual(row.records);
    expect(JSON.parse(await gunzipText(stored.records as ArrayBuffer))).toHaveLength(2);
  });
});
