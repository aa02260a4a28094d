import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { call, createMerchant } from '../helpers/api';
import { runDailyCron } from '../helpers/cron';
import { captureLogsOfEachTest } from '../helpers/logs';
import { type BatchRecord, CARD_HEADER, createUnqueuedBatch, csv, deliver, QUEUE_TEST_TIMEOUT, saleRows, status, uploadOk, waitForStatus } from '../helpers/batch';
import { STALL_GIVE_UP_HOURS } from '../../src/services/batches/limits';

const DAY = 86_400_000;

// The cron and the watchdog log what they did: read by the tests, not printed.
const logs = captureLogsOfEachTest();

describe('status and download access', () => {
  it("answers 404 for another merchant's batch and for an unknown id, on status and download", async () => {
    const owner = await createMerchant({ name: 'Owner' });
    const other = await createMerchant({ name: 'Other' });
    const { id, messages } = await createUnqueuedBatch(owner.secretKey, csv(CARD_HEADER, saleRows(2)));
    await deliver('binbatch-chunks', messages);
    for (const path of [`/api/filebatch/${id}`, `/api/filebatch/${id}/download`, '/api/filebatch/bat_unknown', '/api/filebatch/bat_unknown/download']) {
      const response = await call('GET', path, { key: path.includes('unknown') ? owner.secretKey : other.secretKey });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ status: 'failed', msg: 'batch not found', data: null });
    }
  });

  it('refuses the download with 409 and the exact msg before the batch is completed', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(600)));
    const before = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(before.status).toBe(409);
    expect(await before.json()).toEqual({ status: 'failed', msg: 'batch is not in completed status', data: null });
    await deliver('binbatch-chunks', [messages[0]]);
    expect((await status(merchant.secretKey, id)).status).toBe('processing');
    const midway = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(midway.status).toBe(409);
    expect(await midway.json()).toEqual({ status: 'failed', msg: 'batch is not in completed status', data: null });
  });

  it('expires results after the retention period: download 410, status still answers', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(3)));
    await deliver('binbatch-chunks', messages);
    const completed = await status(merchant.secretKey, id);
    expect(completed.status).toBe('completed');
    const completedAt = Date.parse(completed.updated_at);

    // Nine days on: the cron keeps the results.
    await runDailyCron(new Date(completedAt + 9 * DAY));
    expect((await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey })).status).toBe(200);

    // Eleven days on: deleted.
    await runDailyCron(new Date(completedAt + 11 * DAY));
    const listing = await env.FILES.list({ prefix: `results/${id}/` });
    expect(listing.objects).toEqual([]);
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(download.status).toBe(410);
    expect(await download.json()).toEqual({ status: 'failed', msg: 'batch results expired', data: null });
    expect(await status(merchant.secretKey, id)).toEqual(completed);
    // Each cron run logs its jobs; the request log's lines are left out.
    const cronEvents = logs.events().filter((event) => event !== 'request');
    const sweeps = ['batch_retention', 'batch_record_retention', 'webhook_retention', 'webhook_stuck_deliveries', 'upload_fingerprint_retention', 'recurring_billing', 'export_file_retention'];
    expect(cronEvents).toEqual([...sweeps, ...sweeps]);
  });
});

describe('listing', () => {
  it("lists the merchant's own batches newest first, paginated with total_count", { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const merchant = await createMerchant();
    const other = await createMerchant();
    const ids: string[] = [];
    for (const name of ['one.csv', 'two.csv', 'three.csv']) ids.push(await uploadOk(merchant.secretKey, csv(CARD_HEADER, saleRows(2)), name));
    await uploadOk(other.secretKey, csv(CARD_HEADER, saleRows(1)), 'theirs.csv');
    for (const id of ids) await waitForStatus(merchant.secretKey, id, 'completed');

    const all = await call('GET', '/api/filebatch', { key: merchant.secretKey });
    expect(all.status).toBe(200);
    const body = await all.json<{ status: string; msg: string; data: BatchRecord[]; total_count: number; limit: number; offset: number }>();
    expect(body).toMatchObject({ status: 'success', msg: 'success', total_count: 3, limit: 20, offset: 0 });
    expect(body.data.map((b) => b.file_name)).toEqual(['three.csv', 'two.csv', 'one.csv']);
    expect(body.data[0]).toMatchObject({ user_id: merchant.id, status: 'completed', num_lines: 2, processed_lines: 2 });

    const page = await call('GET', '/api/filebatch?limit=1&offset=1', { key: merchant.secretKey });
    const second = await page.json<{ data: BatchRecord[]; total_count: number }>();
    expect(second.total_count).toBe(3);
    expect(second.data.map((b) => b.file_name)).toEqual(['two.csv']);

    const bad = await call('GET', '/api/filebatch?limit=0', { key: merchant.secretKey });
    expect(bad.status).toBe(400);
    expect((await bad.json<{ msg: string }>()).msg).toBe('limit: must be 1 or more');
  });
});

describe('stall watchdog', () => {
  it('re-enqueues the chunks of a batch that made no progress, which then completes', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const merchant = await createMerchant();
    // Created but its messages never sent: as if the enqueue after the answer was lost.
    const { id } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(1100)));
    expect((await status(merchant.secretKey, id)).status).toBe('pending');
    expect(await runDurableObjectAlarm(env.BATCH_PROGRESS.getByName(id))).toBe(true);
    const done = await waitForStatus(merchant.secretKey, id, 'completed');
    expect(done.processed_lines).toBe(1100);
    expect(logs.events()).toContain('batch_stalled_requeued');
  });

  it('re-sends the chunks as often as it stalls, and fails a batch only after STALL_GIVE_UP_HOURS without progress', async () => {
    // An object whose chunks can never be processed (no such batch in D1: consumers skip them).
    const stub = env.BATCH_PROGRESS.getByName('bat_stalled');
    await stub.init({
      batchId: 'bat_stalled',
      numLines: 3,
      chunks: [{ index: 0, offset: 40, length: 90, firstLine: 2, rows: 3 }],
      createdAt: new Date().toISOString(),
    });
    // Each stall re-sends, however many there are (a process that dies again after the re-send).
    for (let stall = 1; stall <= 3; stall++) {
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect((await stub.snapshot())?.status, `stall ${stall}`).toBe('queued');
    }
    // Six hours without progress (the last progress moved back): the next stall gives up.
    const longAgo = new Date(Date.now() - STALL_GIVE_UP_HOURS * 3_600_000 - 1).toISOString();
    await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec('UPDATE state SET updated_at = ?', longAgo));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.snapshot()).toMatchObject({
      status: 'failed',
      failureReason: 'no progress for 6 hours, though the chunks not recorded were re-sent every 10 minutes',
    });
    // What is left scheduled is its retention: BATCH_RETENTION_DAYS (10) after it ended.
    const endedAt = Date.parse((await stub.snapshot())?.updatedAt ?? '');
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).toBe(endedAt + 10 * 86_400_000);
    // The re-enqueued chunk reaches the consumer, which skips it: no such batch in D1.
    await vi.waitFor(() => expect(logs.events()).toContain('chunk_skipped'), { timeout: 10_000, interval: 10 });
  });
});
