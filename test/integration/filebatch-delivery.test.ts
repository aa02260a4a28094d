import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/time';
import { retryDelaySeconds } from '../../src/queues/chunk-consumer';
import { processTransactions } from '../../src/services/recorded';
import { authenticateKey } from '../../src/services/merchants';
import { call, createMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, parseResult, recordedTransactions, saleRows, status } from '../helpers/batch';
import { captureLogsOfEachTest } from '../helpers/logs';

// These tests fail chunks on purpose: the warn and error lines that causes are read, not printed.
const logs = captureLogsOfEachTest();

const CHUNKS = 'binbatch-chunks';
const DEAD_LETTERS = 'binbatch-chunks-dlq';

async function download(key: string, id: string) {
  const response = await call('GET', `/api/filebatch/${id}/download`, { key });
  expect(response.status).toBe(200);
  return parseResult(await response.text());
}

describe('chunk consumer', () => {
  it('moves the batch pending → queued → processing → completed, step by step', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(1001)));
    expect(messages.map((m) => [m.chunk, m.firstLine])).toEqual([[0, 2], [1, 502], [2, 1002]]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'pending', num_lines: 1001, processed_lines: 0 });
    // What enqueueBatch does once every message is sent.
    await markQueuedWithoutSending(id);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'queued', processed_lines: 0 });
    await deliver(CHUNKS, [messages[1]]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'processing', processed_lines: 500 });
    await deliver(CHUNKS, [messages[2]]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'processing', processed_lines: 501 });
    expect(await env.FILES.head(`uploads/${id}.csv`)).not.toBeNull();
    await deliver(CHUNKS, [messages[0]]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 1001 });
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
    // Results follow the file's order, not the order chunks finished in.
    const { rows } = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.idempotency_key)).toEqual(Array.from({ length: 1001 }, (_, i) => `${id}:${i + 2}`));
  });

  it('yields one result row per data row, in order, with row errors inside a completed batch', async () => {
    const merchant = await createMerchant();
    const text = csv(CARD_HEADER, [
      ['sale', '100', '4111111111111111', '12/30', 'ok1'],
      ['refnd', '100', '4111111111111111', '12/30', 'badtype'],
      ['sale', '', '4111111111111111', '12/30', 'noamount'],
      ['authorize', '12.50', '4111111111111111', '12/30', 'decimal'],
      ['credit', '300', '4111111111111111', '12/30', 'gwdecline'], // the sandbox declines an amount of 300
    ]);
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, text);
    const result = await deliver(CHUNKS, messages);
    expect(result.explicitAcks).toHaveLength(messages.length);
    expect(result.retryMessages).toEqual([]);

    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', num_lines: 5, processed_lines: 5 });
    const { rows } = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.response)).toEqual(['approved', 'error', 'error', 'error', 'declined']);
    expect(rows.map((r) => r.response_code)).toEqual(['100', '400', '400', '400', '300']);
    // Each error line names the field at fault.
    expect(rows[1]?.processor_response_text).toContain('transaction_type');
    expect(rows[2]?.processor_response_text).toContain('amount');
    expect(rows[3]?.processor_response_text).toContain('amount');
    expect(rows.map((r) => r.idempotency_key)).toEqual([2, 3, 4, 5, 6].map((line) => `${id}:${line}`));
    expect(rows.every((r) => r.ip_address === '203.0.113.7' && r.transaction_source === 'batch')).toBe(true);
    // Refused rows are not transactions; the approved and the declined one are.
    expect(await recordedTransactions(id)).toEqual({ count: 2, keys: 2 });
  });

  it('counts a chunk once when the same message is delivered twice', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(1200)));
    expect(messages).toHaveLength(3);
    const [first, second, third] = messages;
    // Chunk 0 twice in one delivery, then again on its own: still 500 lines counted.
    await deliver(CHUNKS, [first, first]);
    await deliver(CHUNKS, [first], 2);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'processing', processed_lines: 500 });
    await deliver(CHUNKS, [second, third]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 1200 });
    // A late redelivery after completion changes nothing and is acked.
    const late = await deliver(CHUNKS, [second], 3);
    expect(late.explicitAcks).toHaveLength(1);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 1200 });

    const { rows } = await download(merchant.secretKey, id);
    expect(rows).toHaveLength(1200);
    expect(new Set(rows.map((r) => r.idempotency_key)).size).toBe(1200);
    // One transaction per row in the engine's table, however many times chunks ran.
    expect(await recordedTransactions(id)).toEqual({ count: 1200, keys: 1200 });
    expect(new Set(rows.map((r) => r.id)).size).toBe(1200);
  });

  it('retries with backoff when a chunk fails midway, and the retry completes it with exact counts', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(10)));
    const [message] = messages;
    // A crash midway: the first 4 rows went through the engine, then the worker died.
    const caller = await authenticateKey(env, merchant.secretKey);
    if (!caller || !message) throw new Error('setup');
    const firstRows = saleRows(4).map((fields, i) => ({
      input: Object.fromEntries(CARD_HEADER.map((column, c) => [column, fields[c]])),
      idempotencyKey: `${id}:${i + 2}`,
      line: i + 2,
    }));
    const crashed = await processTransactions(env, caller, firstRows, { source: 'batch', ipAddress: '203.0.113.7', batchId: id }, systemClock);
    expect(await recordedTransactions(id)).toEqual({ count: 4, keys: 4 });

    // The next attempt runs every row and writes the result part, then fails to record the chunk:
    // the batch's object cannot read its state (its table is moved away for this attempt).
    const progress = env.BATCH_PROGRESS.getByName(id);
    await runInDurableObject(progress, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE state RENAME TO state_away');
    });
    // Each failed attempt asks for a retry after a longer delay: 5 s after the first, 10 s after the second.
    for (const [attempt, delaySeconds] of [
      [1, 5],
      [2, 10],
    ] as const) {
      const failed = await deliver(CHUNKS, [message], attempt);
      expect(failed.explicitAcks).toEqual([]);
      expect(failed.retryMessages).toEqual([{ msgId: expect.any(String), delaySeconds }]);
    }
    await runInDurableObject(progress, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE state_away RENAME TO state');
    });
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'pending', processed_lines: 0 });

    const retried = await deliver(CHUNKS, [message], 3);
    expect(retried.explicitAcks).toHaveLength(1);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 10 });
    const { rows } = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.idempotency_key)).toEqual(Array.from({ length: 10 }, (_, i) => `${id}:${i + 2}`));
    // The 4 rows of the crashed attempt were reused (same transaction ids), never charged again.
    expect(rows.slice(0, 4).map((r) => r.id)).toEqual(crashed.map((outcome) => outcome.record?.id));
    expect(rows.every((r) => r.response === 'approved')).toBe(true);
    expect(await recordedTransactions(id)).toEqual({ count: 10, keys: 10 });
    expect(logs.events()).toContain('chunk_failed');
  });

  it('acks and drops a malformed message instead of retrying it forever', async () => {
    const result = await deliver(CHUNKS, [{ batchId: 'bat_x', chunk: -1 }, 'not even an object']);
    expect(result.explicitAcks).toHaveLength(2);
    expect(result.retryMessages).toEqual([]);
    expect(logs.events()).toEqual(['chunk_message_malformed', 'chunk_message_malformed']);
  });
});

describe('retry backoff', () => {
  it('waits longer after each failed attempt, capped at five minutes', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map(retryDelaySeconds)).toEqual([5, 10, 20, 40, 80, 160, 300]);
  });
});

describe('dead-letter consumer', () => {
  it('marks the batch failed with a reason, deletes the uploaded file, and download stays refused', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(700)));
    await deliver(CHUNKS, [messages[0]]);
    const result = await deliver(DEAD_LETTERS, [messages[1]]);
    expect(result.explicitAcks).toHaveLength(1);

    const record = await status(merchant.secretKey, id);
    expect(record).toMatchObject({
      status: 'failed',
      num_lines: 700,
      processed_lines: 500,
      failure_reason: 'chunk 1 (from line 502) could not be processed after repeated attempts',
    });
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(download.status).toBe(409);
    expect(await download.json()).toEqual({ status: 'failed', msg: 'batch is not in completed status', data: null });
    // The failure is final: a late chunk does not revive the batch.
    await deliver(CHUNKS, [messages[1]]);
    expect((await status(merchant.secretKey, id)).status).toBe('failed');
  });
});
