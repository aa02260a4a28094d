/**
 * Read-your-writes of the search index (issue 33): a batch row is found as soon as its chunk counts
 * in processed_lines; a capture, void, refund or settlement changes what the search finds as soon
 * as it answered; exact filters (transaction_id of an API row, a batch row and a refund; batch_id;
 * settlement_batch_id; order_id of batch rows) find them; an index write that fails fails the
 * chunk, and the retry indexes it.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { searchDayName, searchDirectory, searchPartOf } from '../../src/services/search/names';
import { searchTransactions } from '../../src/services/search/search';
import { processTransactions } from '../../src/services/recorded';
import { settleMerchantNow } from '../../src/services/settlement/runs';
import { transactionSearchSchema } from '../../src/schemas/transaction-search';
import { ledgerShardName, utcDay } from '../../src/services/transactions/ledger';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, createUnqueuedBatch, csv, deliver, saleRows, status, uploadOk, waitForStatus } from '../helpers/batch';

type Tx = { [field: string]: string | number | boolean | null } & { id: string; status: string };
type SearchAnswer = { total_count: number; total_count_exact: boolean; data: Tx[]; next_cursor: string | null };

const VISA = '4111111111111111';

async function create(merchant: TestMerchant, body: { [k: string]: unknown }): Promise<Tx> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { cc_number: VISA, cc_expiration: '12/30', ...body } });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<Tx>>()).data;
}

async function operate(merchant: TestMerchant, id: string, kind: 'capture' | 'void' | 'refund', body: unknown = {}): Promise<Tx> {
  const response = await call('POST', `/api/transaction/${id}/${kind}`, { key: merchant.secretKey, body });
  expect(response.status, await response.clone().text()).toBe(kind === 'refund' ? 201 : 200);
  return (await response.json<Envelope<Tx>>()).data;
}

async function search(merchant: TestMerchant, body: { [k: string]: unknown }): Promise<SearchAnswer> {
  const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body: { limit: 100, ...body } });
  expect(response.status).toBe(200);
  return response.json<SearchAnswer>();
}

const eq = (value: string) => ({ operator: '=', value });
const idsOf = (answer: SearchAnswer) => answer.data.map((r) => r.id).sort();

describe('after each operation, the search finds the transaction as it is now', () => {
  it('capture, refund, void and settlement, each as soon as it answered', async () => {
    const shop = await createMerchant({ name: 'Lifecycle Search Shop' });
    const auth = await create(shop, { transaction_type: 'authorize', amount: 1500, order_id: 'LIFE1' });
    const sale = await create(shop, { transaction_type: 'sale', amount: 900 });
    expect(idsOf(await search(shop, { status: eq('authorized') }))).toEqual([auth.id]);

    await operate(shop, auth.id, 'capture', { amount: 1200 });
    expect(idsOf(await search(shop, { status: eq('authorized') }))).toEqual([]);
    expect(idsOf(await search(shop, { status: eq('pending_settlement') }))).toEqual([auth.id, sale.id].sort());
    expect(idsOf(await search(shop, { amount_captured: { operator: '=', value: 1200 } }))).toEqual([auth.id]);
    expect((await search(shop, { captured_at: { start_date: '2000-01-01T00:00:00Z' } })).total_count).toBe(2);

    await operate(shop, sale.id, 'void');
    expect(idsOf(await search(shop, { status: eq('voided') }))).toEqual([sale.id]);

    const settled = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    const batch = (await settled.json<Envelope<{ id: string }[]>>()).data[0];
    expect(batch).toBeDefined();
    const bySettlement = await search(shop, { settlement_batch_id: eq(String(batch?.id)) });
    expect(idsOf(bySettlement)).toEqual([auth.id]);
    expect(bySettlement.data[0]).toMatchObject({ status: 'settled', amount_settled: 1200, settlement_batch_id: batch?.id });
    expect(idsOf(await search(shop, { status: eq('settled') }))).toEqual([auth.id]);
    expect(idsOf(await search(shop, { settled_at: { start_date: '2000-01-01T00:00:00Z' } }))).toEqual([auth.id]);

    const refund = await operate(shop, auth.id, 'refund', { amount: 200 });
    const original = await search(shop, { transaction_id: eq(auth.id) });
    expect(original.data).toEqual([expect.objectContaining({ id: auth.id, status: 'partially_refunded', amount_refunded: 200 })]);
    const refunds = await search(shop, { type: eq('refund') });
    expect(refunds.data).toEqual([expect.objectContaining({ id: refund.id, status: 'pending_settlement', referenced_transaction_id: auth.id })]);
    expect(idsOf(await search(shop, { transaction_id: eq(refund.id) }))).toEqual([refund.id]);
    // The refund carries its original's order_id: both are found by it.
    expect(idsOf(await search(shop, { order_id: eq('LIFE1') }))).toEqual([auth.id, refund.id].sort());

    // The refund settles at the next run; the original, refunded in full later, reads refunded.
    await admin('POST', `/admin/merchants/${shop.id}/settle`);
    expect((await search(shop, { transaction_id: eq(refund.id) })).data[0]?.status).toBe('settled');
    await operate(shop, auth.id, 'refund', {});
    expect((await search(shop, { transaction_id: eq(auth.id) })).data[0]).toMatchObject({ status: 'refunded', amount_refunded: 1200 });
    // Every answer equals what GET answers (but for its email receipts, which only GET reads: docs/receipts.md).
    for (const record of (await search(shop, {})).data) {
      const response = await call('GET', `/api/transaction/${record.id}`, { key: shop.secretKey });
      const { receipts: _receipts, ...answered } = (await response.json<Envelope<Tx>>()).data;
      expect(record).toEqual(answered);
    }
  });
});

describe('batch rows', () => {
  it('a chunk\'s rows are found as soon as it counts in processed_lines, by batch_id, window, order_id and id', async () => {
    const shop = await createMerchant({ name: 'Batch Search Shop' });
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(1_200)), 'search.csv');
    expect(messages.length).toBe(3);
    for (const [i, message] of messages.entries()) {
      const delivered = await deliver('binbatch-chunks', [message]);
      expect(delivered.explicitAcks).toHaveLength(1);
      const { processed_lines } = await status(shop.secretKey, id);
      expect(processed_lines).toBe(Math.min(1_200, (i + 1) * 500));
      expect((await search(shop, { batch_id: eq(id), limit: 1 })).total_count).toBe(processed_lines);
      expect((await search(shop, { limit: 1 })).total_count).toBe(processed_lines);
    }
    // A row of the last chunk by its order_id (the week index) and by its id (its chunk's unit).
    const row = await search(shop, { order_id: eq('ord1150') });
    expect(row.data).toEqual([expect.objectContaining({ order_id: 'ord1150', amount: 2149, transaction_source: 'batch' })]);
    expect(idsOf(await search(shop, { transaction_id: eq(String(row.data[0]?.id)) }))).toEqual([row.data[0]?.id]);
    expect((await search(shop, { batch_id: eq(id), amount: { operator: '<', value: 1010 } })).total_count).toBe(10);
    // Paging through the whole batch with the cursor: every row once.
    const seen = new Set<string>();
    let page = await search(shop, { batch_id: eq(id) });
    for (;;) {
      for (const r of page.data) seen.add(r.id);
      if (page.next_cursor === null) break;
      page = await search(shop, { batch_id: eq(id), cursor: page.next_cursor });
    }
    expect(seen.size).toBe(1_200);
  });

  it('batch rows settle whole chunks at a time, and the search finds them settled', async () => {
    const shop = await createMerchant({ name: 'Batch Settle Shop' });
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(600)));
    await waitForStatus(shop.secretKey, id, 'completed');
    expect((await search(shop, { batch_id: eq(id), status: eq('pending_settlement'), limit: 1 })).total_count).toBe(600);
    const settled = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    const batch = (await settled.json<Envelope<{ id: string; num_transactions: number }[]>>()).data[0];
    expect(batch?.num_transactions).toBe(600);
    expect((await search(shop, { batch_id: eq(id), status: eq('settled'), limit: 1 })).total_count).toBe(600);
    expect((await search(shop, { settlement_batch_id: eq(String(batch?.id)), limit: 1 })).total_count).toBe(600);
    expect((await search(shop, { status: eq('pending_settlement'), limit: 1 })).total_count).toBe(0);
  }, QUEUE_TEST_TIMEOUT);

  it('an index write that fails fails the chunk; the retried chunk indexes its rows', async () => {
    const shop = await createMerchant({ name: 'Index Fault Shop' });
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(5)), 'fault.csv');
    // The batch's part of the day's index (its shard's part).
    const part = searchPartOf(ledgerShardName({ kind: 'batch', merchantId: shop.id, batchId: id }));
    const day = env.SEARCH_DAY.getByName(searchDayName(shop.id, utcDay(new Date()), part));
    // The day object exists (its tables are made on first write): make its next write fail.
    await day.add({ merchantId: shop.id, day: utcDay(new Date()) }, []);
    await runInDurableObject(day, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE units RENAME TO units_away');
    });
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const failed = await deliver('binbatch-chunks', messages, 1);
    expect(failed.retryMessages).toHaveLength(1);
    expect((await status(shop.secretKey, id)).processed_lines).toBe(0);
    errors.mockRestore();
    await runInDurableObject(day, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE units_away RENAME TO units');
    });
    const retried = await deliver('binbatch-chunks', messages, 2);
    expect(retried.explicitAcks).toHaveLength(1);
    expect((await status(shop.secretKey, id)).processed_lines).toBe(5);
    expect((await search(shop, { batch_id: eq(id) })).total_count).toBe(5);
  });
});

describe('a batch whose chunks ran on two days', () => {
  it('is found on both days, by batch_id and by the settlement batch both days settled into', async () => {
    const shop = await createMerchant({ name: 'Midnight Batch Shop' });
    const caller = { merchantId: shop.id, merchantName: shop.name, keyId: 'key_test', keyType: 'secret' as const, enhancedBinLookup: false, surchargeRateBps: 0, maxCreditAmount: 100_000 };
    const batchId = 'bat_midnight00000000000a';
    const chunk = async (firstLine: number, at: string) => {
      const lines = [firstLine, firstLine + 1, firstLine + 2];
      const outcomes = await processTransactions(
        env,
        caller,
        lines.map((line) => ({ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: String(1000 + line) }, idempotencyKey: `${batchId}:${line}`, line })),
        { source: 'batch', ipAddress: null, batchId, batchCreatedAt: '2027-05-01T23:50:00.000Z', chunkFirstLine: firstLine },
        () => new Date(at),
      );
      expect(outcomes.every((o) => o.ok)).toBe(true);
    };
    await chunk(2, '2027-05-01T23:59:00.000Z');
    await chunk(5, '2027-05-02T00:01:00.000Z');
    const searchAt = async (body: object, at: string) => {
      const outcome = await searchTransactions(env, shop.id, transactionSearchSchema.parse({ limit: 100, ...body }), () => new Date(at));
      if (!outcome.ok) throw new Error(outcome.message);
      return outcome.answer;
    };
    expect((await searchAt({ batch_id: eq(batchId) }, '2027-05-02T00:02:00.000Z')).total_count).toBe(6);
    const run = await settleMerchantNow(env, shop.id, () => new Date('2027-05-02T00:05:00.000Z'));
    expect(run.finished).toBe(true);
    const settled = run.batches[0];
    expect(settled?.num_transactions).toBe(6);
    const bySettlement = await searchAt({ settlement_batch_id: eq(String(settled?.id)) }, '2027-05-02T00:06:00.000Z');
    expect(bySettlement.total_count).toBe(6);
    expect(new Set(bySettlement.data.map((r) => String(r.created_at).slice(0, 10)))).toEqual(new Set(['2027-05-01', '2027-05-02']));
    expect(bySettlement.data.every((r) => r.status === 'settled' && r.settlement_batch_id === settled?.id)).toBe(true);
    expect(await searchDirectory(env, shop.id).settledDays('2027-05-02')).toEqual(['2027-05-02', '2027-05-01']);
  });
});
