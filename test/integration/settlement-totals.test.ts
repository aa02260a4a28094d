/**
 * Settlement keeps totals, not lists (docs/capacity.md, "Settlement"): the merchant's one settlement
 * object grows per handoff piece (a few rows for thousands of transactions), never per settled
 * transaction; a batch's transactions are listed, paged, from the ledger shards that settled them;
 * `settlement_batch_id =` search finds every one of them.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { authenticateKey } from '../../src/services/merchants';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { getSettlementBatch, settleMerchantNow } from '../../src/services/settlement/runs';
import { PAGE_MAX_PIECES } from '../../src/services/settlement/batch-transactions';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, saleRows, uploadOk, waitForStatus } from '../helpers/batch';
import { likeRecords, seedShard, shardOf, templateRecord } from '../helpers/shard-seed';

const DAY = 86_400_000;
const VISA = '4111111111111111';
/** Days ahead of now: their settlement runs only when a test says so. */
const D = Math.floor(Date.now() / DAY) * DAY + 9 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
/** The bound: bytes a settled transaction may add to any per-merchant object. */
const MAX_BYTES_PER_SETTLED = 10;

async function callerOf(merchant: TestMerchant): Promise<Caller> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('unknown key');
  return caller;
}

function settlementBytes(merchant: TestMerchant): Promise<number> {
  return runInDurableObject(settlementObject(env, merchant.id), (_instance, state) => state.storage.sql.databaseSize);
}

async function allIds(merchant: TestMerchant, batchId: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; ) {
    const page = await getSettlementBatch(env, merchant.id, batchId, { limit, offset });
    if (!page) throw new Error('no batch');
    ids.push(...page.transactions.map((t) => t.id));
    if (page.transactions.length === 0 || ids.length >= page.batch.num_transactions) return ids;
    offset += page.transactions.length;
  }
}

describe('settlement keeps totals, not lists', () => {
  it('settling 12,001 API transactions and a 1,200-row file adds at most 10 bytes each to the settlement object; every one is listed and found', async () => {
    const shop = await createMerchant({ name: 'Totals Shop' });
    const caller = await callerOf(shop);
    // A first small settlement: the object and its tables exist before the measure.
    const first = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(3)));
    await waitForStatus(shop.secretKey, first, 'completed');
    expect((await settleMerchantNow(env, shop.id, () => new Date(D))).finished).toBe(true);
    const before = await settlementBytes(shop);

    // An API day of 12,001 sales (seeded through the shard's own claim and complete) and a file.
    const template = await templateRecord(caller, new Date(D + DAY), { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000' });
    const shard = shardOf({ kind: 'api', merchantId: shop.id, day: iso(D + DAY).slice(0, 10) }, iso(D + DAY));
    await seedShard(shard, likeRecords(template, 12_000, 'tot'), 2_000);
    const file = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1_200)));
    await waitForStatus(shop.secretKey, file, 'completed');

    const run = await settleMerchantNow(env, shop.id, () => new Date(D + 2 * DAY));
    expect(run.finished).toBe(true);
    expect(run.batches).toHaveLength(1);
    const batch = run.batches[0];
    if (!batch) throw new Error('no batch');
    const settled = 12_001 + 1_200;
    expect(batch.num_transactions).toBe(settled);

    const grown = (await settlementBytes(shop)) - before;
    expect(grown / settled).toBeLessThanOrEqual(MAX_BYTES_PER_SETTLED);

    // Listed from the shards, paged: every transaction once, the totals' count.
    const ids = await allIds(shop, batch.id, 1_000);
    expect(ids).toHaveLength(settled);
    expect(new Set(ids).size).toBe(settled);
    // A page that starts inside a piece, through the API.
    const page = await call('GET', `/api/settlement/batch/${batch.id}?limit=3&offset=4999`, { key: shop.secretKey });
    expect(page.status).toBe(200);
    expect((await page.json<Envelope<{ transactions: { id: string }[] }>>()).data.transactions.map((t) => t.id)).toEqual(ids.slice(4_999, 5_002));

    // The file's rows (the API day was seeded past the search index) are found by the batch's id.
    const found = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { settlement_batch_id: { operator: '=', value: batch.id }, limit: 100 } });
    expect(found.status).toBe(200);
    expect((await found.json<{ total_count: number }>()).total_count).toBe(1_200);
  }, QUEUE_TEST_TIMEOUT * 3);

  it('a batch of many tiny pieces answers pages of at most 100 pieces, and going on at offset + length lists every transaction once', async () => {
    const shop = await createMerchant({ name: 'Tiny Pieces Shop' });
    const caller = await callerOf(shop);
    const template = await templateRecord(caller, new Date(D + 3 * DAY), { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000' });
    const shard = shardOf({ kind: 'api', merchantId: shop.id, day: iso(D + 3 * DAY).slice(0, 10) }, iso(D + 3 * DAY));
    await seedShard(shard, likeRecords(template, 249, 'tiny'), 249);
    const stub = settlementObject(env, shop.id);
    const now = iso(D + 4 * DAY);
    // Pieces of one transaction each: 250 pieces.
    for (let step = 0; step < 50; step++) if ((await stub.settleNow(shop.id, now, { pageEntries: 1 })).done) break;
    const found = await stub.search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    const batchId = found.batches[0]?.id ?? '';
    expect(found.batches[0]?.num_transactions).toBe(250);
    const first = await getSettlementBatch(env, shop.id, batchId, { limit: 1_000, offset: 0 });
    expect(first?.transactions).toHaveLength(PAGE_MAX_PIECES);
    const ids = await allIds(shop, batchId, 1_000);
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
  }, QUEUE_TEST_TIMEOUT);

  it("a batch recorded by the version that kept lists is still listed from its own rows", async () => {
    const shop = await createMerchant({ name: 'Legacy Lists Shop' });
    const stub = settlementObject(env, shop.id);
    await stub.cutoff(shop.id);
    const id = 'stl_20260101_sandbox_legacy';
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("INSERT INTO batches (id, batch_date, processor_id, created_at, updated_at) VALUES (?, '2026-01-01', 'sandbox_legacy', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z')", id);
      state.storage.sql.exec(
        "INSERT INTO entries (batch_id, shard, seq, num, captured, credit, entries) VALUES (?, 'gone/api/2026-01-01', 0, 3, 600, 0, ?)",
        id,
        JSON.stringify([['txn_old1', 'sale', 100], ['txn_old2', 'sale', 200], ['txn_old3', 'sale', 300]]),
      );
    });
    const page = await getSettlementBatch(env, shop.id, id, { limit: 2, offset: 1 });
    expect(page?.batch).toMatchObject({ num_transactions: 3, amount_captured: 600 });
    expect(page?.transactions).toEqual([{ id: 'txn_old2', type: 'sale', amount: 200 }, { id: 'txn_old3', type: 'sale', amount: 300 }]);
  });
});
