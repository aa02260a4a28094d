/**
 * The search index split into parts by ledger shard (services/search/names.ts, `searchPartOf`;
 * docs/capacity.md, "Search"): a merchant's files of one day land in several parts of the day's
 * index, an API day's sub-shards each in its own; a search reads every part of every day and
 * answers as if the day were one object: every transaction once, newest first, pages that resume
 * exactly, references, captures, settlement and exports across the parts.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { authenticateKey } from '../../src/services/merchants';
import { indexUnits } from '../../src/services/search/indexer';
import { SEARCH_PARTS, searchDay, searchDirectory, searchKeys, searchPartOf, weekOf } from '../../src/services/search/names';
import { startExport, transactionExport } from '../../src/services/search/exports';
import { mergeParts } from '../../src/services/search/query';
import { unitRow } from '../../src/services/search/unit-rows';
import { searchTransactions } from '../../src/services/search/search';
import { processTransactions } from '../../src/services/recorded';
import { settleMerchantNow } from '../../src/services/settlement/runs';
import { transactionSearchSchema } from '../../src/schemas/transaction-search';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';
import { batchTransactionId, chunkPage, ledgerShardName } from '../../src/services/transactions/ledger';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, uploadOk, waitForStatus } from '../helpers/batch';
import { templateRecord } from '../helpers/shard-seed';

const VISA = '4111111111111111';
const DAY = '2027-06-15';
const eq = (value: string) => ({ operator: '=', value });

type Found = { id: string; created_at: string; status: string; order_id: string | null; settlement_batch_id: string | null };

async function callerOf(merchant: TestMerchant): Promise<Caller> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('unknown key');
  return caller;
}

async function searchAt(merchantId: string, body: object, at: string) {
  const outcome = await searchTransactions(env, merchantId, transactionSearchSchema.parse({ limit: 100, ...body }), () => new Date(at));
  if (!outcome.ok) throw new Error(outcome.message);
  return { ...outcome.answer, data: outcome.answer.data as unknown as Found[] };
}

/** Every page of a search, `limit` at a time through its cursors. */
async function allPages(merchantId: string, body: object, limit: number, at: string): Promise<Found[]> {
  const found: Found[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const answer = await searchAt(merchantId, { ...body, limit, ...(cursor ? { cursor } : {}) }, at);
    found.push(...answer.data);
    if (answer.next_cursor === null) return found;
    cursor = answer.next_cursor;
  }
  throw new Error('the search did not end');
}

/** A batch id (of this test's `salt`) whose ledger shard goes to `part` of the index. */
function batchIdInPart(merchantId: string, part: number, salt: string): string {
  for (let i = 0; i < 10_000; i++) {
    const id = `bat_${`${salt}${i}`.padEnd(20, '0')}`;
    if (searchPartOf(ledgerShardName({ kind: 'batch', merchantId, batchId: id })) === part) return id;
  }
  throw new Error(`no batch id in part ${part}`);
}

/** The search order: newer first, then the greater id first. */
function newestFirst(ids: readonly { id: string; at: string }[]): string[] {
  return [...ids].sort((a, b) => (a.at !== b.at ? (a.at > b.at ? -1 : 1) : a.id > b.id ? -1 : 1)).map((r) => r.id);
}

async function unitsIn(stub: DurableObjectStub): Promise<number> {
  return runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    const has = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'units'").toArray().length > 0;
    return has ? sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM units').one().n : 0;
  });
}

describe('a day of several files in several parts of the index', () => {
  it('lands in the parts of its batches; a search answers each transaction once, newest first, and pages with no duplicate or gap', async () => {
    const shop = await createMerchant({ name: 'Parts Day Shop' });
    const caller = await callerOf(shop);
    const parts = [1, 3, 6];
    const batches = parts.map((part) => batchIdInPart(shop.id, part, 'pd'));
    const made: { id: string; at: string }[] = [];
    // Three files' chunks interleaved in time, two of them (parts 1 and 3) at the very same instant,
    // so the parts' positions interleave and tie.
    const chunk = async (b: number, firstLine: number, minute: number) => {
      const batchId = batches[b] as string;
      const at = new Date(Date.parse(`${DAY}T10:00:00.000Z`) + minute * 60_000).toISOString();
      const lines = [0, 1, 2, 3, 4].map((i) => firstLine + i);
      const outcomes = await processTransactions(
        env,
        caller,
        lines.map((line) => ({ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: String(1000 + line), order_id: `o${b}x${line}` }, idempotencyKey: `${batchId}:${line}`, line })),
        { source: 'batch', ipAddress: null, batchId, batchCreatedAt: `${DAY}T09:00:00.000Z`, chunkFirstLine: firstLine },
        () => new Date(at),
      );
      for (const outcome of outcomes) {
        if (!outcome.ok) throw new Error(`sale failed: ${JSON.stringify(outcome)}`);
        made.push({ id: String(outcome.record.id), at: String(outcome.record.created_at) });
      }
    };
    await chunk(0, 2, 0);
    await chunk(1, 2, 0);
    await chunk(2, 2, 1);
    await chunk(0, 7, 2);
    await chunk(1, 7, 3);
    await chunk(2, 7, 2);
    // And an API sale of that day: part 0.
    const [api] = await processTransactions(env, caller, [{ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '2500' }, idempotencyKey: crypto.randomUUID() }], { source: 'api', ipAddress: null }, () => new Date(`${DAY}T10:02:30.000Z`));
    if (!api?.ok) throw new Error('api sale failed');
    made.push({ id: String(api.record.id), at: String(api.record.created_at) });

    // The directory lists the day's parts, and each part's object holds its file's units (two chunks each).
    expect(await searchDirectory(env, shop.id).dayParts(DAY, DAY)).toEqual([{ day: DAY, parts: [0, ...parts] }]);
    for (const part of parts) expect(await unitsIn(searchDay(env, shop.id, DAY, part))).toBe(2);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 0))).toBe(1);
    for (const part of [2, 4, 5, 7]) expect(await unitsIn(searchDay(env, shop.id, DAY, part))).toBe(0);

    const at = `${DAY}T12:00:00.000Z`;
    const window = { created_at: { start_date: `${DAY}T00:00:00Z`, end_date: `${DAY}T23:59:59Z` } };
    const whole = await searchAt(shop.id, window, at);
    expect(whole.total_count).toBe(31);
    expect(whole.total_count_exact).toBe(true);
    expect(whole.data.map((r) => r.id)).toEqual(newestFirst(made));
    // Pages of 4 cross the parts (and the tie between two of them) and resume exactly.
    const paged = await allPages(shop.id, window, 4, at);
    expect(paged.map((r) => r.id)).toEqual(newestFirst(made));
    // FluidPay's offset paging too.
    const offset = await searchAt(shop.id, { ...window, limit: 5, offset: 9 }, at);
    expect(offset.data.map((r) => r.id)).toEqual(newestFirst(made).slice(9, 14));
    // A filter that reads the records (not the unit counts) counts across the parts.
    expect((await searchAt(shop.id, { ...window, amount: { operator: '>', value: 1005 } }, at)).total_count).toBe(19);
    // batch_id reads only its part.
    expect((await searchAt(shop.id, { batch_id: eq(batches[1] as string) }, at)).data.map((r) => r.id)).toEqual(newestFirst(made.filter((m) => m.id.includes((batches[1] as string).slice(4)))));
  });

  it('a part that ran out of its budget keeps the day certain only down to where it stopped', () => {
    const part = (positions: { at: string; id: string }[], stoppedAt: string | null) => ({ positions, count: positions.length, exact: stoppedAt === null, read: positions.length, stoppedAt });
    const merged = mergeParts([
      part([{ at: '2027-06-15T10:05:00.000Z', id: 'a' }, { at: '2027-06-15T10:01:00.000Z', id: 'b' }], null),
      part([{ at: '2027-06-15T10:04:00.000Z', id: 'c' }, { at: '2027-06-15T10:03:00.000Z', id: 'd' }], '2027-06-15T10:03:00.000Z'),
    ]);
    // The second part read nothing older than 10:03: the first part's 10:01 waits for the next page.
    expect(merged.positions.map((p) => p.id)).toEqual(['a', 'c', 'd']);
    expect(merged).toMatchObject({ stoppedAt: '2027-06-15T10:03:00.000Z', count: 4, exact: false, read: 4 });
  });
});

/** The merchant's directory as the build before the split left it: no parts, its schema one step behind. */
async function asOlderBuild(merchantId: string): Promise<void> {
  await runInDurableObject(searchDirectory(env, merchantId), (_i, state) => {
    state.storage.sql.exec('DROP TABLE day_parts');
    state.storage.sql.exec('ALTER TABLE shard_days DROP COLUMN legacy');
    state.storage.sql.exec('UPDATE meta SET schema_version = schema_version - 1');
  });
}

describe('an index written before the split', () => {
  it('is read: a directory of an older build lists its days in part 0, from its first read', async () => {
    const shop = await createMerchant({ name: 'Parts Upgrade Shop' });
    const caller = await callerOf(shop);
    const [sale] = await processTransactions(env, caller, [{ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1234', order_id: 'old1' }, idempotencyKey: crypto.randomUUID() }], { source: 'api', ipAddress: null }, () => new Date(`${DAY}T07:00:00.000Z`));
    if (!sale?.ok) throw new Error('sale failed');
    await asOlderBuild(shop.id);
    const at = `${DAY}T12:00:00.000Z`;
    const window = { created_at: { start_date: `${DAY}T00:00:00Z` } };
    expect((await searchAt(shop.id, window, at)).data.map((r) => r.id)).toEqual([String(sale.record.id)]);
    expect((await searchAt(shop.id, { ...window, order_id: eq('old1') }, at)).data.map((r) => r.id)).toEqual([String(sale.record.id)]);
    expect(await searchDirectory(env, shop.id).dayParts(DAY, DAY)).toEqual([{ day: DAY, parts: [0] }]);
  });
});

describe('a file indexed before the split, running on after it', () => {
  it('keeps its later chunks, its settlement marks and its batch_id search in part 0, where its first chunk is', async () => {
    const shop = await createMerchant({ name: 'Parts Legacy Batch Shop' });
    const caller = await callerOf(shop);
    const batchId = batchIdInPart(shop.id, 3, 'lg');
    const shard = ledgerShardName({ kind: 'batch', merchantId: shop.id, batchId });
    const template = await templateRecord(caller, new Date(`${DAY}T08:00:00.000Z`), { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000' });
    // The first chunk as the older build indexed it: in the day's one object (part 0), its shard listed.
    const at = `${DAY}T09:00:00.000Z`;
    const records = [2, 3, 4, 5, 6].map((line) => ({ ...template.record, id: batchTransactionId(batchId, at, line), idempotency_key: `${batchId}:${line}`, transaction_source: 'batch', created_at: at }) as TransactionRecord);
    expect(await searchDay(env, shop.id, DAY, 0).add({ merchantId: shop.id, day: DAY }, [await unitRow({ shard, page: chunkPage(2), at, records })])).toBe(1);
    expect(await searchDirectory(env, shop.id).addShards(shop.id, [{ shard, day: DAY }])).toEqual({ parts: [3] });
    await asOlderBuild(shop.id);

    // The next chunk, after the split: written where the first one is.
    const later = `${DAY}T09:05:00.000Z`;
    const outcomes = await processTransactions(
      env,
      caller,
      [7, 8, 9, 10, 11].map((line) => ({ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: String(1000 + line) }, idempotencyKey: `${batchId}:${line}`, line })),
      { source: 'batch', ipAddress: null, batchId, batchCreatedAt: at, chunkFirstLine: 7 },
      () => new Date(later),
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 3))).toBe(0);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 0))).toBe(3);
    const now = `${DAY}T12:00:00.000Z`;
    const byBatch = await searchAt(shop.id, { batch_id: eq(batchId) }, now);
    expect(byBatch.total_count).toBe(10);

    // Settled where its units are: the ledger's five (the first chunk was only ever in the index here).
    const run = await settleMerchantNow(env, shop.id, () => new Date(`${DAY}T23:00:00.000Z`));
    expect(run.finished).toBe(true);
    const settled = await searchAt(shop.id, { batch_id: eq(batchId), status: eq('settled') }, `${DAY}T23:30:00.000Z`);
    expect(settled.data.map((r) => r.id).sort()).toEqual(outcomes.map((o) => (o.ok ? String(o.record.id) : '')).sort());
  });
});

describe('an API day in sub-shards (shard names as the sub-shards make them)', () => {
  it("writes each sub-shard's units and references to its own part; window and order_id searches find them", async () => {
    const shop = await createMerchant({ name: 'Parts Subshard Shop' });
    const caller = await callerOf(shop);
    const template = await templateRecord(caller, new Date(`${DAY}T08:00:00.000Z`), { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000' });
    const compact = DAY.replaceAll('-', '');
    const made: { id: string; at: string }[] = [{ id: String(template.record.id), at: String(template.record.created_at) }];
    const units = [3, 5, 3, 5, 7].map((k, i) => {
      const at = new Date(Date.parse(`${DAY}T08:00:00.000Z`) + i * 1_000).toISOString();
      const id = `txn_a${compact}${String(i).padStart(20, 'k')}s${k}`;
      made.push({ id, at });
      const record = { ...template.record, id, created_at: at, order_id: `SUB${k}x${i}`, customer_id: `cus${k}` } as TransactionRecord;
      return { shard: `${shop.id}/api/${DAY}/${k}`, page: id, at, records: [record] };
    });
    await indexUnits(env, shop.id, units);

    // Part 0 holds the template (a real API sale of the day shard).
    expect(await searchDirectory(env, shop.id).dayParts(DAY, DAY)).toEqual([{ day: DAY, parts: [0, 3, 5, 7] }]);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 3))).toBe(2);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 5))).toBe(2);
    expect(await unitsIn(searchDay(env, shop.id, DAY, 0))).toBe(1);
    // The references are in the week's part of their sub-shard, not in part 0.
    const fresh = (part: number) =>
      runInDurableObject(searchKeys(env, shop.id, weekOf(DAY), part), (_i, state) => {
        const sql = state.storage.sql;
        return sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'fresh'").toArray().length > 0 ? sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM fresh').one().n : 0;
      });
    // One indexing call: one fresh row in each sub-shard's week part, none in part 0's (the template has no references).
    expect(await fresh(3)).toBe(1);
    expect(await fresh(5)).toBe(1);
    expect(await fresh(0)).toBe(0);

    const at = `${DAY}T12:00:00.000Z`;
    const window = { created_at: { start_date: `${DAY}T00:00:00Z` } };
    expect((await searchAt(shop.id, window, at)).data.map((r) => r.id)).toEqual(newestFirst(made));
    const bySub5 = await searchAt(shop.id, { ...window, order_id: eq('SUB5x3') }, at);
    expect(bySub5.data.map((r) => r.id)).toEqual([made[4]?.id]);
    const byCustomer = await searchAt(shop.id, { ...window, customer_id: eq('cus3') }, at);
    expect(byCustomer.data.map((r) => r.id)).toEqual(newestFirst([made[1], made[3]] as { id: string; at: string }[]));
    expect(byCustomer.total_count).toBe(2);
  });
});

describe('real files in parts, captured, settled and exported', () => {
  it('a capture in part k changes what search answers; settlement_batch_id and an export find every part', { timeout: QUEUE_TEST_TIMEOUT * 3 }, async () => {
    const shop = await createMerchant({ name: 'Parts Lifecycle Shop' });
    const files: { id: string; part: number; createdAt: string }[] = [];
    // Files until two parts hold them, one of them past part 0 (each file lands in a random part).
    for (let n = 0; n < 8 && (new Set(files.map((f) => f.part)).size < 2 || files.every((f) => f.part === 0)); n++) {
      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, [['authorize', String(1500 + n), VISA, '12/30', `auth${n}`], ['sale', String(1600 + n), VISA, '12/30', `sale${n}`]]), `parts${n}.csv`);
      const batch = await waitForStatus(shop.secretKey, id, 'completed');
      files.push({ id, part: searchPartOf(ledgerShardName({ kind: 'batch', merchantId: shop.id, batchId: id })), createdAt: batch.created_at });
    }
    const target = files.find((f) => f.part > 0);
    if (!target) throw new Error('no file past part 0');
    const authId = batchTransactionId(target.id, target.createdAt, 2);
    const now = () => new Date().toISOString();
    const authorized = await searchAt(shop.id, { status: eq('authorized') }, now());
    expect(authorized.total_count).toBe(files.length);

    const captured = await call('POST', `/api/transaction/${authId}/capture`, { key: shop.secretKey, body: {} });
    expect(captured.status, await captured.clone().text()).toBe(200);
    expect((await captured.json<Envelope<{ status: string }>>()).data.status).toBe('pending_settlement');
    // The capture's change went to the file's part: the search sees it at once.
    const afterCapture = await searchAt(shop.id, { status: eq('authorized') }, now());
    expect(afterCapture.data.map((r) => r.id)).not.toContain(authId);
    expect(afterCapture.total_count).toBe(files.length - 1);
    expect((await searchAt(shop.id, { transaction_id: eq(authId) }, now())).data).toEqual([expect.objectContaining({ id: authId, status: 'pending_settlement' })]);

    const run = await settleMerchantNow(env, shop.id, () => new Date());
    expect(run.finished).toBe(true);
    const settlement = run.batches[0];
    // Every sale and the captured authorization settled, in every part.
    expect(settlement?.num_transactions).toBe(files.length + 1);
    const bySettlement = await searchAt(shop.id, { settlement_batch_id: eq(String(settlement?.id)) }, now());
    expect(bySettlement.total_count).toBe(files.length + 1);
    expect(new Set(bySettlement.data.map((r) => r.id)).has(authId)).toBe(true);
    expect(bySettlement.data.every((r) => r.status === 'settled')).toBe(true);

    // An export of the whole window lists every transaction of every part, once.
    const everything = await allPages(shop.id, {}, 3, now());
    expect(everything).toHaveLength(files.length * 2);
    expect(new Set(everything.map((r) => r.id)).size).toBe(files.length * 2);
    const started = await startExport(env, shop.id, {}, () => new Date(), { arm: false });
    if (!started.ok) throw new Error('export not started');
    const exporter = transactionExport(env, started.export.id);
    for (let step = 0; step < 10; step++) if ((await exporter.run(now())).export?.status !== 'running') break;
    expect((await exporter.state(shop.id))?.status).toBe('completed');
    const text = await (await call('GET', `/api/transaction/export/${started.export.id}/download`, { key: shop.secretKey })).text();
    const lines = text.trim().split('\n').slice(1);
    expect(lines).toHaveLength(files.length * 2);
    for (const tx of everything) expect(text).toContain(tx.id);
    expect(SEARCH_PARTS).toBe(8);
  });
});
