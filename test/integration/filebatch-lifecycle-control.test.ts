/**
 * Capture rows under cancel and in the partial download (docs/batch.md, "Capture, void and refund
 * rows"): a cancelled file of captures counts in processed_lines exactly the rows that acted, and a
 * chunk that acted without writing its results is still reported by the partial download.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { QUEUE_TEST_TIMEOUT, createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, parseResult, uploadOk, waitForStatus } from '../helpers/batch';
import { OPERATION_UNFINISHED_TEXT } from '../../src/services/batches/operation-manifest';
import { captureLogsOfEachTest } from '../helpers/logs';

type TxRecord = Record<string, string | number | boolean | null>;

const OPS_HEADER = ['transaction_type', 'transaction_id', 'amount'];
let shop: TestMerchant;
/** 600 authorizations made by a batch file: their ids, in file order. */
let authorizations: string[];

beforeAll(async () => {
  shop = await createMerchant({ name: 'Lifecycle Control Shop' });
  const rows = Array.from({ length: 600 }, (_, i) => ['authorize', String(1000 + i), '4111111111111111', '12/30']);
  const id = await uploadOk(shop.secretKey, csv(['transaction_type', 'amount', 'cc_number', 'cc_expiration'], rows));
  await waitForStatus(shop.secretKey, id, 'completed');
  const results = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
  authorizations = results.map((row) => String(row.id));
  expect(new Set(results.map((row) => row.status))).toEqual(new Set(['authorized']));
}, QUEUE_TEST_TIMEOUT);

afterEach(() => {
  vi.restoreAllMocks();
});

async function get(id: string): Promise<TxRecord> {
  const response = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function partial(id: string): Promise<Record<string, string>[]> {
  const response = await call('GET', `/api/filebatch/${id}/download?partial=true`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  return parseResult(await response.text()).rows;
}

// The failures these tests cause are logged at error level: captured, so a green run prints none.
captureLogsOfEachTest();

describe('a cancelled file of captures', () => {
  it('counts in processed_lines exactly the rows that acted', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const targets = authorizations.slice(0, 550);
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, targets.map((txn) => ['capture', txn, ''])));
    await markQueuedWithoutSending(id);
    expect(messages).toHaveLength(2);
    expect((await deliver('binbatch-chunks', [messages[0]])).retryMessages).toEqual([]);
    const cancelled = await call('POST', `/api/filebatch/${id}/cancel`, { key: shop.secretKey });
    expect(cancelled.status).toBe(200);
    const record = (await cancelled.json<Envelope<{ status: string; processed_lines: number }>>()).data;
    expect(record).toMatchObject({ status: 'failed', processed_lines: 500 });
    const rows = await partial(id);
    const acted = rows.filter((row) => row.response === 'approved');
    expect(acted).toHaveLength(record.processed_lines);
    // The records agree: the first chunk's authorizations captured, the second's untouched.
    expect(await get(targets[0] ?? '')).toMatchObject({ status: 'pending_settlement' });
    expect(await get(targets[499] ?? '')).toMatchObject({ status: 'pending_settlement' });
    expect(await get(targets[500] ?? '')).toMatchObject({ status: 'authorized' });
    expect(rows[500]?.processor_response_text).toBe('not processed: the batch was cancelled; nothing was charged');
  });
});

describe('a chunk of captures that acted but could not write its results', () => {
  it('is reported by the partial download: each row shows the transaction it named as it is now', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const targets = authorizations.slice(550, 560);
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, targets.map((txn) => ['capture', txn, '500'])));
    await markQueuedWithoutSending(id);
    // Its result part cannot be written: the chunk is retried, and then given up.
    const put = env.FILES.put.bind(env.FILES);
    vi.spyOn(env.FILES, 'put').mockImplementation((async (key: string, ...rest: unknown[]) => {
      if (key.endsWith('/000000.csv')) throw new Error('R2 unavailable');
      return (put as (...args: unknown[]) => Promise<unknown>)(key, ...rest);
    }) as typeof env.FILES.put);
    const delivered = await deliver('binbatch-chunks', messages);
    expect(delivered.retryMessages).toHaveLength(1);
    vi.restoreAllMocks();
    await env.BATCH_PROGRESS.getByName(id).fail('chunk 0 (from line 2) could not be processed after repeated attempts', 0);
    const rows = await partial(id);
    expect(rows).toHaveLength(10);
    for (const [i, row] of rows.entries()) {
      expect(row).toMatchObject({ id: targets[i], idempotency_key: `${id}:${i + 2}`, status: 'pending_settlement', amount_captured: '500' });
      expect(row.processor_response_text).toBe(OPERATION_UNFINISHED_TEXT);
    }
  });
});
