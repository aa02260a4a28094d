/**
 * GET /api/filebatch/{id}/download?partial=true: a failed batch's results as far as they go, one
 * line per data row in file order, the rows that never ran marked, every row charged reported.
 */
import { env } from 'cloudflare:workers';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChunkMessage } from '../../src/schemas/queue';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, parseResult, saleRows, status } from '../helpers/batch';
import { clockAt, deliverChunksAt, ledger, ledgerAuthCode } from '../helpers/claims';
import { batchShardName, failShardWrites, shardEntryList } from '../helpers/ledger';

const CHUNKS = 'binbatch-chunks';
const DEAD_LETTERS = 'binbatch-chunks-dlq';
const NOT_PROCESSED = 'not processed: the batch failed before this row ran; nothing was charged';

let merchant: TestMerchant;
let chunkRows: string;
beforeAll(async () => {
  merchant = await createMerchant({ name: 'Partial Shop' });
  // Chunks of 4 rows: 10 rows are chunks 0 (lines 2-5), 1 (6-9) and 2 (10-11).
  chunkRows = env.BATCH_CHUNK_ROWS;
  env.BATCH_CHUNK_ROWS = '4';
});
afterAll(() => {
  env.BATCH_CHUNK_ROWS = chunkRows;
});
beforeEach(() => {
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function tenRowBatch(): Promise<{ id: string; messages: ChunkMessage[] }> {
  const batch = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(10)), 'june.csv');
  expect(batch.messages).toHaveLength(3);
  return batch;
}

/** Chunk 1 exhausts its retries: the dead-letter consumer fails the batch. */
async function failOnChunk1(id: string, messages: ChunkMessage[]): Promise<void> {
  expect((await deliver(DEAD_LETTERS, [messages[1]])).explicitAcks).toHaveLength(1);
  expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'failed' });
}

function download(id: string, query = '?partial=true'): Promise<Response> {
  return call('GET', `/api/filebatch/${id}/download${query}`, { key: merchant.secretKey });
}

const line = (id: string, n: number) => `${id}:${n}`;

describe('partial download of a failed batch', () => {
  it('streams the chunks that ran and one "not processed" line per row that did not, in file order', async () => {
    const { id, messages } = await tenRowBatch();
    await deliver(CHUNKS, [messages[0], messages[2]]);
    await failOnChunk1(id, messages);

    // Without partial=true the answer is the one a failed batch always had.
    const plain = await download(id, '');
    expect(plain.status).toBe(409);
    expect(await plain.json()).toEqual({ status: 'failed', msg: 'batch is not in completed status', data: null });

    const response = await download(id);
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('Content-Disposition')).toContain('filename="june-partial-results.csv"');
    const { header, rows } = parseResult(await response.text());
    expect(header[0]).toBe('id');
    expect(rows.map((r) => r.idempotency_key)).toEqual(Array.from({ length: 10 }, (_, i) => line(id, i + 2)));
    expect(rows.map((r) => r.response)).toEqual(['approved', 'approved', 'approved', 'approved', 'error', 'error', 'error', 'error', 'approved', 'approved']);
    for (const row of rows.slice(4, 8)) {
      expect(row).toMatchObject({
        id: '',
        user_name: 'Partial Shop',
        transaction_source: 'batch',
        ip_address: '203.0.113.7',
        response: 'error',
        response_code: '',
        status: 'failed',
        processor_response_text: NOT_PROCESSED,
        masked_account: '',
        amount: '',
      });
    }
    // The rows that ran are the ones the processor charged.
    const entries = await ledger(merchant.id, `${id}:`);
    expect([...entries.keys()].sort()).toEqual([2, 3, 4, 5, 10, 11].map((n) => line(id, n)).sort());
  });

  it('reports the rows a failed chunk charged before it failed, from the processor, and marks the rest', async () => {
    const { id, messages } = await tenRowBatch();
    await deliver(CHUNKS, [messages[0], messages[2]]);
    // Chunk 1's last attempt, ten minutes ago: lines 6 and 7 were charged, 8 and 9 failed on their
    // way to the processor, and the ledger shard refused every answer. Then the batch failed.
    const charge = SandboxProcessor.prototype.charge;
    const spy = vi.spyOn(SandboxProcessor.prototype, 'charge').mockImplementation(async function (this: SandboxProcessor, request) {
      if (Number(request.idempotencyKey.split(':')[1]) >= 8) throw new Error('processor connection reset');
      return charge.call(this, request);
    });
    const heal = await failShardWrites(batchShardName(merchant.id, id), 'INSERT', 'pages');
    expect((await deliverChunksAt(clockAt(-10 * 60_000), [messages[1]], 6)).retryMessages).toHaveLength(1);
    await heal();
    spy.mockRestore();
    await failOnChunk1(id, messages);

    const response = await download(id);
    expect(response.status).toBe(200);
    const { rows } = parseResult(await response.text());
    const entries = await ledger(merchant.id, `${id}:`);
    expect(rows.map((r) => r.response)).toEqual(['approved', 'approved', 'approved', 'approved', 'approved', 'approved', 'error', 'error', 'approved', 'approved']);
    expect(rows.slice(4, 6).map((r) => r.auth_code)).toEqual([6, 7].map((n) => ledgerAuthCode(entries.get(line(id, n)))));
    expect(rows.slice(4, 6).every((r) => (r.id ?? '').startsWith('txn_') && r.masked_account === '411111******1111')).toBe(true);
    expect(rows.slice(6, 8).map((r) => r.processor_response_text)).toEqual([NOT_PROCESSED, NOT_PROCESSED]);
    // Nothing charged is missing from the file, and nothing was charged twice to find out.
    const reported = new Map(rows.map((r) => [r.idempotency_key, r]));
    for (const [key, entry] of entries) {
      expect(reported.get(key)?.auth_code).toBe(ledgerAuthCode(entry));
      expect(entry.chargeCalls).toBe(1);
    }
    expect(entries.size).toBe(8);
    // The settled rows are ordinary records now: the next download says the same without asking.
    const lookup = vi.spyOn(SandboxProcessor.prototype, 'lookup');
    expect(parseResult(await (await download(id)).text()).rows).toEqual(rows);
    expect(lookup).not.toHaveBeenCalled();
  });

  it('answers 409 with Retry-After while a failed chunk\'s claims are too fresh to settle', async () => {
    const { id, messages } = await tenRowBatch();
    await deliver(CHUNKS, [messages[0], messages[2]]);
    const heal = await failShardWrites(batchShardName(merchant.id, id), 'INSERT', 'pages');
    await deliverChunksAt(clockAt(0), [messages[1]], 6);
    await heal();
    await failOnChunk1(id, messages);

    const response = await download(id);
    expect(response.status).toBe(409);
    const retryAfter = Number(response.headers.get('Retry-After'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await response.json<Envelope>()).toEqual({
      status: 'failed',
      msg: 'some rows are still being settled with the processor; retry after the Retry-After seconds',
      data: null,
    });
  });

  it("keeps a failed chunk's open claims in its batch's own ledger shard, apart from the merchant's other batches", async () => {
    const other = await tenRowBatch();
    await deliver(CHUNKS, other.messages);
    const { id, messages } = await tenRowBatch();
    await deliver(CHUNKS, [messages[0], messages[2]]);
    const heal = await failShardWrites(batchShardName(merchant.id, id), 'INSERT', 'pages');
    await deliverChunksAt(clockAt(0), [messages[1]], 6);
    await heal();

    // Each batch has a shard of its own: the failed chunk's claims are there, none in the other's.
    const open = (await shardEntryList(batchShardName(merchant.id, id))).filter((stored) => stored.record.status === 'processing');
    expect(open.map((claim) => claim.record.idempotency_key).sort()).toEqual([6, 7, 8, 9].map((n) => line(id, n)));
    const others = await shardEntryList(batchShardName(merchant.id, other.id));
    expect(others).toHaveLength(10);
    expect(others.filter((stored) => stored.record.status === 'processing')).toEqual([]);
    // No batch row is in D1.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name IN ('transactions', 'sandbox_charges')").first<number>('n')).toBe(0);
  });

  it('serves a completed batch whole, refuses a running one, and checks the parameter', async () => {
    const { id, messages } = await tenRowBatch();
    await deliver(CHUNKS, [messages[0]]);
    const running = await download(id);
    expect(running.status).toBe(409);
    expect(await running.json()).toEqual({ status: 'failed', msg: 'batch is still running: partial=true downloads a failed batch', data: null });

    const bad = await download(id, '?partial=yes');
    expect(bad.status).toBe(400);
    expect((await bad.json<Envelope>()).msg).toBe('partial: must be true or false');

    await deliver(CHUNKS, [messages[1], messages[2]]);
    const whole = await download(id);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('Content-Disposition')).toContain('filename="june-results.csv"');
    const { rows } = parseResult(await whole.text());
    expect(rows).toHaveLength(10);
    expect(rows.every((r) => r.response === 'approved')).toBe(true);
    expect((await download(id, '?partial=false')).status).toBe(200);
  });

  it('is another merchant\'s batch: 404, as without partial', async () => {
    const { id, messages } = await tenRowBatch();
    await failOnChunk1(id, messages);
    const stranger = await createMerchant();
    const response = await call('GET', `/api/filebatch/${id}/download?partial=true`, { key: stranger.secretKey });
    expect(response.status).toBe(404);
  });
});
