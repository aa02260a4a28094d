/**
 * The daily cron's jobs (src/services/maintenance.ts): each runs on its own, so one that fails
 * leaves the others done, and each logs its outcome or its failure (without the card data an
 * error message may quote). Each is bounded: a run stops at its cap of D1 statements, says so, and
 * the next run goes on. Real D1 and R2; the cron's clock is its scheduled time.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import { isoTimestamp } from '../../src/lib/time';
import { deleteExpiredResults } from '../../src/services/batches/results';
import { D1_QUERIES_PER_INVOCATION, DAILY_JOBS } from '../../src/services/maintenance';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/transactions/engine';
import { deleteExpiredWebhookEvents } from '../../src/services/webhooks/retention';
import { insertEventWithDeliveries } from '../../src/storage/webhooks';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, saleRows, status } from '../helpers/batch';
import { runDailyCron } from '../helpers/cron';
import { captureConsole } from '../helpers/leak-scan';

const DAY = 86_400_000;
/** Past every retention: batch results (10 days), the idempotency window (24 h), webhook history (30 days). */
const LATER = () => new Date(Date.now() + 40 * DAY);

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Maintenance Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('no caller');
  caller = found;
});

afterEach(() => vi.restoreAllMocks());

/** A completed batch (its results in R2); answers its id. */
async function completedBatch(): Promise<string> {
  const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
  await deliver('binbatch-chunks', messages);
  expect((await status(shop.secretKey, id)).status).toBe('completed');
  return id;
}

async function resultParts(batchId: string): Promise<number> {
  return (await env.FILES.list({ prefix: `results/${batchId}/` })).objects.length;
}

/** A webhook event made now; the shop has no endpoint, so it has no delivery and is settled. */
async function webhookEvent(): Promise<string> {
  const id = `evt_maint${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const now = isoTimestamp(new Date());
  const payload = JSON.stringify({ id, type: 'batch.completed', created_at: now, data: {} });
  const batchId = `bat_${crypto.randomUUID()}`;
  const made = await insertEventWithDeliveries(env.DB, { id, merchant_id: shop.id, type: 'batch.completed', batch_id: batchId, payload, created_at: now }, now);
  expect(made).toEqual([]);
  return id;
}

async function eventExists(id: string): Promise<boolean> {
  return (await env.DB.prepare('SELECT 1 FROM webhook_events WHERE id = ?1').bind(id).first()) !== null;
}

/** The JSON log lines written while `run` ran. */
async function logLines(run: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const capture = captureConsole();
  try {
    await run();
  } finally {
    capture.restore();
  }
  return capture.lines.map((line) => JSON.parse(line.slice(line.indexOf(': ') + 2)) as Record<string, unknown>);
}

describe('the daily jobs', () => {
  it('a failing first job leaves the other two done; each logs its outcome, the failure without card data', async () => {
    expect(DAILY_JOBS.map((job) => job.name)).toEqual(['batch_retention', 'idempotency_window', 'webhook_retention']);
    const batchId = await completedBatch();
    expect(await resultParts(batchId)).toBe(1);
    const [sale] = await processTransactions(
      env,
      caller,
      [{ input: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' }, idempotencyKey: 'maint-1' }],
      { source: 'api', ipAddress: null },
      () => new Date(),
    );
    if (!sale?.ok) throw new Error('sale not recorded');
    const eventId = await webhookEvent();

    // R2 fails the first job, with a message that quotes a card number.
    vi.spyOn(env.FILES, 'list').mockRejectedValue(new Error('R2 list failed near 4111 1111 1111 1111'));
    const lines = await logLines(() => runDailyCron(LATER()));
    vi.restoreAllMocks();

    expect(lines).toEqual([
      { level: 'error', event: 'maintenance_job_failed', job: 'batch_retention', error: 'Error', message: 'R2 list failed near ***' },
      { level: 'info', event: 'idempotency_window', cleared: 3, finished: true }, // the sale and the batch's two rows
      { level: 'info', event: 'webhook_retention', removed: 1, finished: true },
    ]);
    // The two later jobs did their work; the failed one left its batch as it was.
    const hash = await env.DB.prepare('SELECT request_hash FROM transactions WHERE id = ?1').bind(sale.record.id).first<{ request_hash: string }>();
    expect(hash).toEqual({ request_hash: '' });
    expect(await eventExists(eventId)).toBe(false);
    expect(await resultParts(batchId)).toBe(1);

    // The next run, with R2 back, sweeps the batch.
    expect((await logLines(() => runDailyCron(LATER())))[0]).toEqual({ level: 'info', event: 'batch_retention', swept: 1, finished: true });
    expect(await resultParts(batchId)).toBe(0);
  });

  it('together stay under what one invocation may spend on D1', () => {
    const total = DAILY_JOBS.reduce((sum, job) => sum + job.maxStatements, 0);
    expect(total).toBeLessThan(D1_QUERIES_PER_INVOCATION);
  });
});

describe('a job stops at its cap, says so, and the next run goes on', () => {
  it('batch retention: a listing, an UPDATE and two R2 calls per batch count against the cap', async () => {
    await deleteExpiredResults(env, LATER); // no batch of an earlier test left to sweep
    const ids = [await completedBatch(), await completedBatch()];
    const d1 = vi.spyOn(env.DB, 'prepare');
    const r2 = [vi.spyOn(env.FILES, 'list'), vi.spyOn(env.FILES, 'delete')];
    const calls = () => d1.mock.calls.length + r2.reduce((sum, spy) => sum + spy.mock.calls.length, 0);

    // 4 statements: one batch's page (listing, its parts listed and deleted, the UPDATE).
    expect(await deleteExpiredResults(env, LATER, 4)).toEqual({ swept: 1, finished: false });
    expect(calls()).toBe(4);
    expect((await Promise.all(ids.map(resultParts))).sort()).toEqual([0, 1]);
    expect(await deleteExpiredResults(env, LATER, 4)).toEqual({ swept: 1, finished: false });
    expect(await Promise.all(ids.map(resultParts))).toEqual([0, 0]);
    expect(await deleteExpiredResults(env, LATER, 4)).toEqual({ swept: 0, finished: true });
  });

  it('webhook retention: 3 statements a page of 100 events', async () => {
    await deleteExpiredWebhookEvents(env, LATER); // no event of an earlier test left to remove
    const events: string[] = [];
    for (let i = 0; i < 101; i += 1) events.push(await webhookEvent());
    expect(await deleteExpiredWebhookEvents(env, LATER, 5)).toEqual({ removed: 100, finished: false });
    expect((await Promise.all(events.map(eventExists))).filter(Boolean)).toHaveLength(1);
    expect(await deleteExpiredWebhookEvents(env, LATER, 5)).toEqual({ removed: 1, finished: true });
    expect((await Promise.all(events.map(eventExists))).filter(Boolean)).toHaveLength(0);
  });
});
