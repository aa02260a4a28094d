/**
 * The hourly cron's jobs (src/services/maintenance.ts): each runs on its own, so one that fails
 * leaves the others done, and each logs its outcome or its failure (without the card data an
 * error message may quote). Each is bounded: a run goes on until done or its cap of D1 statements,
 * says so, and the next run goes on. Real D1 and R2; the cron's clock is its scheduled time.
 * Retention at volume, past one run's cap: test/integration/retention-volume.test.ts.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isoTimestamp } from '../../src/lib/time';
import { deleteExpiredBatchRecords } from '../../src/services/batches/records';
import { deleteExpiredResults } from '../../src/services/batches/results';
import { HALF, D1 } from '../../src/lib/platform-limits';
import { MAINTENANCE_BUDGET, MAINTENANCE_JOBS } from '../../src/services/maintenance';
import { deleteExpiredWebhookEvents } from '../../src/services/webhooks/retention';
import { insertEventWithDeliveries } from '../../src/storage/webhooks';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, saleRows, status } from '../helpers/batch';
import { runDailyCron } from '../helpers/cron';
import { captureConsole } from '../helpers/leak-scan';

const DAY = 86_400_000;
/** Past batch results' retention (10 days) and webhook history's (30 days); not the ledger's (548 days). */
const LATER = () => new Date(Date.now() + 40 * DAY);

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Maintenance Shop' });
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
  it('a failing first job leaves the others done; each logs its outcome, the failure without card data', async () => {
    expect(MAINTENANCE_JOBS.map((job) => job.name)).toEqual([
      'batch_retention',
      'batch_record_retention',
      'webhook_retention',
      'webhook_stuck_deliveries',
      'upload_fingerprint_retention',
      'recurring_billing',
      'export_file_retention',
    ]);
    const batchId = await completedBatch();
    expect(await resultParts(batchId)).toBe(1);
    const eventId = await webhookEvent();

    // R2 fails the first job, with a message that quotes a card number.
    vi.spyOn(env.FILES, 'list').mockRejectedValue(new Error('R2 list failed near 4111 1111 1111 1111'));
    const lines = await logLines(() => runDailyCron(LATER()));
    vi.restoreAllMocks();

    expect(lines.slice(0, 3)).toEqual([
      { level: 'error', event: 'maintenance_job_failed', job: 'batch_retention', error: 'Error', message: 'R2 list failed near ***' },
      { level: 'info', event: 'batch_record_retention', removed: 0, finished: true }, // records are kept 549 days
      { level: 'info', event: 'webhook_retention', removed: 1, finished: true },
    ]);
    expect(lines.slice(3).map((line) => [line.event, line.finished])).toEqual([
      ['webhook_stuck_deliveries', true],
      ['upload_fingerprint_retention', true],
      ['recurring_billing', true],
      // The export sweep lists R2 too: it fails on its own, after the others ran.
      ['maintenance_job_failed', undefined],
    ]);
    // The later jobs did their work; the failed one left its batch as it was.
    expect(await eventExists(eventId)).toBe(false);
    expect(await resultParts(batchId)).toBe(1);

    // The next run, with R2 back, sweeps the batch.
    expect((await logLines(() => runDailyCron(LATER())))[0]).toEqual({ level: 'info', event: 'batch_retention', swept: 1, finished: true });
    expect(await resultParts(batchId)).toBe(0);
  });

  it('together stay under half of what one invocation may spend on D1', () => {
    const total = MAINTENANCE_JOBS.reduce((sum, job) => sum + job.maxStatements, 0);
    expect(total).toBeLessThanOrEqual(MAINTENANCE_BUDGET);
    expect(MAINTENANCE_BUDGET).toBeLessThanOrEqual(D1.queriesPerInvocation * HALF);
  });
});

describe('a job stops at its cap, says so, and the next run goes on', () => {
  it('batch retention: a listing, an UPDATE, two R2 calls and the object emptied per batch count against the cap', async () => {
    await deleteExpiredResults(env, LATER); // no batch of an earlier test left to sweep
    const ids = [await completedBatch(), await completedBatch()];
    const d1 = vi.spyOn(env.DB, 'prepare');
    const r2 = [vi.spyOn(env.FILES, 'list'), vi.spyOn(env.FILES, 'delete')];
    const objects = vi.spyOn(env.BATCH_PROGRESS, 'getByName');
    const calls = () => d1.mock.calls.length + objects.mock.calls.length + r2.reduce((sum, spy) => sum + spy.mock.calls.length, 0);

    // 5 statements: one batch's page (listing, its parts listed and deleted, its object emptied, the UPDATE).
    expect(await deleteExpiredResults(env, LATER, 5)).toEqual({ swept: 1, finished: false });
    expect(calls()).toBe(5);
    expect((await Promise.all(ids.map(resultParts))).sort()).toEqual([0, 1]);
    expect(await deleteExpiredResults(env, LATER, 5)).toEqual({ swept: 1, finished: false });
    expect(await Promise.all(ids.map(resultParts))).toEqual([0, 0]);
    expect(await deleteExpiredResults(env, LATER, 5)).toEqual({ swept: 0, finished: true });
  });

  it('batch records: deleted a day after their ledger retention, 500 a statement', async () => {
    const id = await completedBatch();
    const at = (days: number) => () => new Date(Date.now() + days * DAY);
    expect(await deleteExpiredBatchRecords(env, at(548), 1)).toMatchObject({ finished: true });
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'completed' });
    expect((await deleteExpiredBatchRecords(env, at(550), 1)).removed).toBeGreaterThanOrEqual(1);
    expect(await env.DB.prepare('SELECT 1 FROM batches WHERE id = ?1').bind(id).first()).toBeNull();
  });

  it('webhook retention: 3 statements a page (of 1,000 events; 100 here)', async () => {
    await deleteExpiredWebhookEvents(env, LATER); // no event of an earlier test left to remove
    const events: string[] = [];
    for (let i = 0; i < 101; i += 1) events.push(await webhookEvent());
    expect(await deleteExpiredWebhookEvents(env, LATER, 5, 100)).toEqual({ removed: 100, finished: false });
    expect((await Promise.all(events.map(eventExists))).filter(Boolean)).toHaveLength(1);
    expect(await deleteExpiredWebhookEvents(env, LATER, 5, 100)).toEqual({ removed: 1, finished: true });
    expect((await Promise.all(events.map(eventExists))).filter(Boolean)).toHaveLength(0);
  });
});
