/**
 * The search index's objects on their own (issue 33): the week object's log-structured reference
 * index (fresh rows folded into runs, runs merged level by level, a value spanning blocks), a day
 * object's scan budget (an inexact count and where it stopped), and retention.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { SearchDay } from '../../src/durable-objects/search/day';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';
import { changeInput, unitsBefore, type ChangeInput } from '../../src/storage/search/day';
import { BLOCK_MIN_CHANGES, MAX_BLOCKS_PER_UNIT } from '../../src/storage/search/day-changes';
import { FOLD_AT, MERGE_FANIN } from '../../src/durable-objects/search/keys';
import { keyHash, shardOfId } from '../../src/services/search/indexer';
import { searchDayName, searchKeysName, searchPartOf } from '../../src/services/search/names';
import { batchTransactionId, utcDay } from '../../src/services/transactions/ledger';
import { BLOCK_ENTRIES } from '../../src/storage/search/keys';
import { call, createMerchant, type Envelope } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, saleRows, uploadOk, waitForStatus } from '../helpers/batch';

function keys(merchantId: string, week: string) {
  return env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week));
}

async function tableCounts(stub: DurableObjectStub, tables: string[]): Promise<Record<string, number>> {
  return runInDurableObject(stub, (_instance, state) => {
    const counts: Record<string, number> = {};
    for (const table of tables) counts[table] = state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
    return counts;
  });
}

describe('the week object (order_id and customer_id references)', () => {
  it('folds fresh rows into runs and merges a level, and every value stays found at its time', async () => {
    const merchantId = `keys${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const week = '2027-03-01';
    const stub = keys(merchantId, week);
    const calls = FOLD_AT * MERGE_FANIN + 5;
    const at = (i: number) => new Date(Date.parse(`${week}T00:00:00.000Z`) + i * 60_000).toISOString();
    for (let i = 0; i < calls; i++) {
      // Each call: its own order, and a customer shared by every call.
      const done = await stub.add({ merchantId, week }, [
        { hash: keyHash('order_id', `ORD${i}`), at: at(i) },
        { hash: keyHash('customer_id', 'frequent'), at: at(i) },
      ]);
      expect(done).toBe(true);
      if ((i + 1) % FOLD_AT === 0) expect(await stub.upkeep(at(i))).toBe(false);
    }
    // 8 runs of 64 entries were merged into one of 512 (level 0 still: a level is a size); 5 calls still wait as fresh rows.
    const runs = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec<{ level: number; entries: number }>('SELECT level, entries FROM runs').toArray());
    expect(runs).toEqual([{ level: 0, entries: FOLD_AT * MERGE_FANIN * 2 }]);
    expect((await tableCounts(stub, ['fresh'])).fresh).toBe(5);
    for (const i of [0, 31, 32, 200, calls - 1]) expect(await stub.lookup(keyHash('order_id', `ORD${i}`), 10)).toEqual({ ats: [at(i)], truncated: false });
    const frequent = await stub.lookup(keyHash('customer_id', 'frequent'), 100_000);
    expect(frequent.truncated).toBe(false);
    expect(frequent.ats.sort()).toEqual(Array.from({ length: calls }, (_, i) => at(i)));
    expect((await stub.lookup(keyHash('customer_id', 'frequent'), 10)).truncated).toBe(true);
    expect((await stub.lookup(keyHash('order_id', 'missing'), 10)).ats).toEqual([]);
  });

  it('a value with more references than a block is read across blocks', async () => {
    const merchantId = `keys${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const week = '2027-03-08';
    const stub = keys(merchantId, week);
    const base = Date.parse(`${week}T00:00:00.000Z`);
    const many = BLOCK_ENTRIES + 500;
    const refs = Array.from({ length: many }, (_, i) => ({ hash: keyHash('customer_id', 'everywhere'), at: new Date(base + i).toISOString() }));
    for (let i = 0; i < FOLD_AT; i++) await stub.add({ merchantId, week }, i === 0 ? refs : [{ hash: keyHash('order_id', `X${i}`), at: new Date(base).toISOString() }]);
    await stub.upkeep(new Date(base).toISOString());
    expect((await tableCounts(stub, ['blocks'])).blocks).toBe(2);
    expect((await stub.lookup(keyHash('customer_id', 'everywhere'), 100_000)).ats).toHaveLength(many);
  });
});

/** A batch of `rows` sales: its day object and its records as processed, in line order. */
async function processedBatch(shop: { id: string; secretKey: string }, day: string, rows: number) {
  const batchId = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(rows)));
  const batch = await waitForStatus(shop.secretKey, batchId, 'completed');
  const ids = Array.from({ length: rows }, (_, i) => batchTransactionId(batchId, batch.created_at, i + 2));
  const shard = shardOfId(shop.id, ids[0] ?? '') ?? '';
  const stub = env.SEARCH_DAY.getByName(searchDayName(shop.id, day, searchPartOf(shard)));
  const present = await stub.records(
    (await runInDurableObject(stub, (_i, state) => unitsBefore(state.storage.sql, { from: `${day}T00:00:00.000Z`, to: `${day}T23:59:59.999Z` }, 10))).flatMap((unit) =>
      ids.map((id) => ({ at: unit.at, id })),
    ),
    '2000-01-01T00:00:00.000Z',
  );
  if (!Array.isArray(present)) throw new Error(present.failed);
  const byId = new Map(present.map((p) => [String(p.record.id), p.record]));
  return { shard, stub, records: ids.map((id) => byId.get(id) as TransactionRecord) };
}

describe('a day object', () => {
  it('counts within its budget: past it the count is a lower bound and the scan says where it stopped', async () => {
    const shop = await createMerchant({ name: 'Budget Shop' });
    for (let i = 0; i < 4; i++) {
      const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 + i } });
      expect(response.status).toBe(201);
    }
    const created = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: {} });
    const records = (await created.json<{ data: { created_at: string }[] }>()).data;
    const day = records[0]?.created_at.slice(0, 10) ?? '';
    const stub = env.SEARCH_DAY.getByName(searchDayName(shop.id, day));
    const scan = (budget: number, count: boolean) =>
      stub.scan({
        from: `${day}T00:00:00.000Z`,
        to: `${day}T23:59:59.999Z`,
        after: null,
        restrict: { kind: 'all' },
        conditions: [{ kind: 'int', field: 'amount', op: '>', value: 1000 }],
        want: 10,
        count,
        budget,
        expiredBefore: '2000-01-01T00:00:00.000Z',
      });
    expect(await scan(100, true)).toMatchObject({ count: 3, exact: true, read: 4, stoppedAt: null });
    const short = await scan(2, true);
    expect(short).toMatchObject({ count: 2, exact: false, read: 2 });
    expect('stoppedAt' in short && short.stoppedAt).toBe(records[1]?.created_at);
    // Without a filter the count is the units' stored counts, one index entry each: exact within the
    // budget, a lower bound past it (a day of a million API transactions is not counted whole).
    const unfiltered = (budget: number) => stub.scan({ from: `${day}T00:00:00.000Z`, to: `${day}T23:59:59.999Z`, after: null, restrict: { kind: 'all' }, conditions: [], want: 1, count: true, budget, expiredBefore: '2000-01-01T00:00:00.000Z' });
    expect(await unfiltered(100)).toMatchObject({ count: 4, exact: true });
    expect(await unfiltered(3)).toMatchObject({ count: 3, exact: false });
  });

  it("marks a batch's rows settled with a few statements per chunk, not per row", async () => {
    // A settlement hands a day object up to SETTLED_IDS_PER_CALL ids at once; a 500,000-row file's
    // step is hundreds of thousands of them, so statements per row would pass the 30 s CPU limit.
    const shop = await createMerchant({ name: 'Settle Cost Shop' });
    const batchId = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(2_000)));
    const batch = await waitForStatus(shop.secretKey, batchId, 'completed');
    // Data rows are lines 2 to 2,001 of the file.
    const ids = Array.from({ length: 2_000 }, (_, i) => batchTransactionId(batchId, batch.created_at, i + 2));
    const shard = shardOfId(shop.id, ids[0] ?? '') ?? '';
    const day = utcDay(new Date());
    // The batch's rows are in its shard's part of the day's index.
    const stub = env.SEARCH_DAY.getByName(searchDayName(shop.id, day, searchPartOf(shard)));
    const statements = await runInDurableObject(stub, async (instance: SearchDay, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec.bind(sql);
      let count = 0;
      sql.exec = ((query: string, ...bindings: unknown[]) => {
        count++;
        return exec(query, ...bindings);
      }) as typeof sql.exec;
      try {
        expect(await instance.settled(shard, ids, day, new Date().toISOString())).toBe(2_000);
      } finally {
        sql.exec = exec;
      }
      return count;
    });
    // Four chunks: a few statements each (their unit, its lines, its mark), and a few for the call.
    expect(statements).toBeLessThan(40);
    const settled = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { batch_id: { operator: '=', value: batchId }, status: { operator: '=', value: 'settled' }, limit: 1 } });
    expect((await settled.json<{ total_count: number }>()).total_count).toBe(2_000);
  }, QUEUE_TEST_TIMEOUT);

  it("writes a chunk's changes in a few statements, each transaction left as its changes one call at a time leave it", async () => {
    // A batch chunk's captures, voids or refunds reach a day object as one call of up to 500 changes.
    const shop = await createMerchant({ name: 'Change Cost Shop' });
    const day = utcDay(new Date());
    const processed = (rows: number) => processedBatch(shop, day, rows);
    // The first transaction's two changes arrive out of order (its partial refund, then its capture's
    // state); the second's in order (a partial refund, then the rest); the others are voided.
    const changesOf = (shard: string, records: TransactionRecord[]): ChangeInput[] => {
      const [first, second, ...rest] = records as [TransactionRecord, TransactionRecord, ...TransactionRecord[]];
      const change = (record: TransactionRecord, status: string, amountRefunded: number): ChangeInput => changeInput(String(record.id), shard, { ...record, status }, amountRefunded);
      return [
        change(first, 'partially_refunded', 500),
        change(first, 'pending_settlement', 0),
        change(second, 'partially_refunded', 300),
        change(second, 'refunded', 1001),
        ...rest.map((record) => change(record, 'voided', 0)),
      ];
    };
    /** Each transaction as a search reads it now, and how many transactions its units count as changed. */
    const now = async ({ stub, shard, records }: Awaited<ReturnType<typeof processed>>) => {
      const present = await stub.records(records.map((r) => ({ at: String(r.created_at), id: String(r.id) })), '2000-01-01T00:00:00.000Z');
      if (!Array.isArray(present)) throw new Error(present.failed);
      const changed = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>('SELECT SUM(changed) AS n FROM units WHERE shard = ?', shard).one().n);
      return { states: present.map((p) => [p.record.status, p.amountRefunded]), changed };
    };

    const bulk = await processed(500);
    const identity = { merchantId: shop.id, day };
    const statements = await runInDurableObject(bulk.stub, async (instance: SearchDay, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec.bind(sql);
      let count = 0;
      sql.exec = ((query: string, ...bindings: unknown[]) => {
        count++;
        return exec(query, ...bindings);
      }) as typeof sql.exec;
      try {
        // 502 changes; the capture's state arriving after the refund is not written.
        expect(await instance.change(identity, changesOf(bulk.shard, bulk.records))).toBe(501);
      } finally {
        sql.exec = exec;
      }
      return count;
    });
    // Row by row it was three statements per change (1,506); now a few for the call.
    expect(statements).toBeLessThan(20);

    // The same changes, one call each, on a file of 4 rows: the same states.
    const single = await processed(4);
    for (const change of changesOf(single.shard, single.records)) expect(await single.stub.change(identity, [change])).toBeLessThanOrEqual(1);
    const one = await now(single);
    const many = await now(bulk);
    expect(one.states).toEqual([
      ['partially_refunded', 500],
      ['refunded', 1001],
      ['voided', 0],
      ['voided', 0],
    ]);
    expect(many.states.slice(0, 4)).toEqual(one.states);
    expect(many.states.slice(4).every(([status, refunded]) => status === 'voided' && refunded === 0)).toBe(true);
    // Each transaction counted once on its unit, however many changes it had.
    expect(one.changed).toBe(4);
    expect(many.changed).toBe(500);
  }, QUEUE_TEST_TIMEOUT);

  it("keeps a chunk's changes on a unit as one block, at most MAX_BLOCKS_PER_UNIT a unit; the furthest state wins, and settlement sees them", async () => {
    const shop = await createMerchant({ name: 'Change Block Shop' });
    const day = utcDay(new Date());
    const identity = { merchantId: shop.id, day };
    const batch = await processedBatch(shop, day, 40);
    const change = (record: TransactionRecord, status: string, amountRefunded: number) => changeInput(String(record.id), batch.shard, { ...record, status }, amountRefunded);
    const read = async () => {
      const present = await batch.stub.records(batch.records.map((r) => ({ at: String(r.created_at), id: String(r.id) })), '2000-01-01T00:00:00.000Z');
      if (!Array.isArray(present)) throw new Error(present.failed);
      return present.map((p) => [p.record.status, p.amountRefunded]);
    };
    const tables = () => tableCounts(batch.stub, ['changes', 'change_blocks']);

    // A capture file's chunk: its 40 captures in one call are one block, no change rows.
    expect(await batch.stub.change(identity, batch.records.map((r) => change(r, 'pending_settlement', 0)))).toBe(40);
    expect(await tables()).toEqual({ changes: 0, change_blocks: 1 });
    expect((await read()).every(([status]) => status === 'pending_settlement')).toBe(true);

    // Refund files one after another, each refunding the first 20 by 10 more: the unit's blocks are
    // folded when one more would pass the bound, each transaction's latest change kept.
    const first = batch.records.slice(0, BLOCK_MIN_CHANGES + 4);
    const rounds = MAX_BLOCKS_PER_UNIT + 2;
    for (let round = 1; round <= rounds; round++) {
      expect(await batch.stub.change(identity, first.map((r) => change(r, 'partially_refunded', round * 10)))).toBe(first.length);
      expect((await tables()).change_blocks).toBeLessThanOrEqual(MAX_BLOCKS_PER_UNIT);
    }
    const refunded = first.map(() => ['partially_refunded', rounds * 10]);
    expect((await read()).slice(0, first.length)).toEqual(refunded);
    // An earlier refund indexed late does not take a transaction back.
    expect(await batch.stub.change(identity, first.map((r) => change(r, 'partially_refunded', 10)))).toBe(0);
    expect((await read()).slice(0, first.length)).toEqual(refunded);
    // Fewer than BLOCK_MIN_CHANGES changes on a unit: rows of their own, read over its blocks.
    const voided = batch.records.slice(first.length, first.length + 2);
    expect(await batch.stub.change(identity, voided.map((r) => change(r, 'voided', 0)))).toBe(2);
    expect((await tables()).changes).toBe(2);
    // Each transaction counted once on its unit, however many changes it had.
    const changed = await runInDurableObject(batch.stub, (_i, state) => state.storage.sql.exec<{ n: number }>('SELECT SUM(changed) AS n FROM units WHERE shard = ?', batch.shard).one().n);
    expect(changed).toBe(40);

    // The settlement run: those still awaiting settlement (in the block) are settled; the refunded
    // and voided ones are found and keep their later states.
    const ids = batch.records.map((r) => String(r.id));
    expect(await batch.stub.settled(batch.shard, ids, '2026-11-28', '2026-11-28T02:00:00.000Z')).toBe(40);
    const settled = await read();
    expect(settled.slice(0, first.length)).toEqual(refunded);
    expect(settled.slice(first.length, first.length + 2)).toEqual([
      ['voided', 0],
      ['voided', 0],
    ]);
    expect(settled.slice(first.length + 2).every(([status]) => status === 'settled')).toBe(true);
    // Left out of a run while an operation was in flight: each has a later state, so none gets a row.
    const before = await tables();
    expect(await batch.stub.held(batch.shard, ids)).toBe(0);
    expect(await tables()).toEqual(before);
  }, QUEUE_TEST_TIMEOUT);

  it('empties itself TRANSACTION_RETENTION_DAYS after its day', async () => {
    const shop = await createMerchant({ name: 'Retention Shop' });
    const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 } });
    const record = (await response.json<Envelope<{ created_at: string }>>()).data;
    const stub = env.SEARCH_DAY.getByName(searchDayName(shop.id, record.created_at.slice(0, 10)));
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).toBe(Date.parse(`${record.created_at.slice(0, 10)}T00:00:00.000Z`) + 549 * 86_400_000);
  });
});
