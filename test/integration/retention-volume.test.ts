/**
 * Retention that keeps up at any volume (issue 29, item 5). What a batch leaves behind is removed
 * by its own object at its deadline, one alarm per batch, so no shared cap limits how many batches
 * may end in a day; the hourly sweeps (webhook history, and batches whose alarm never ran) go on
 * page after page within a budget per run, and the next run takes the rest. Shown here at a small
 * scale with the caps lowered through the jobs' own options; docs/limits.md ("Retention at any
 * volume") computes the real figures (10,000 ended batches and a million webhook events a day).
 * Every run's D1 statements and other subrequests are counted (test/helpers/invocation-meter.ts).
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { isoTimestamp } from '../../src/lib/time';
import { deleteLapsedUploadFingerprints } from '../../src/services/batches/fingerprints';
import { deleteExpiredResults } from '../../src/services/batches/results';
import { runMaintenance, type MaintenanceJob } from '../../src/services/maintenance';
import { webhookDeps } from '../../src/services/webhooks/deps';
import { createEndpoint } from '../../src/services/webhooks/endpoints';
import { deleteExpiredWebhookEvents, failStuckDeliveries, STUCK_DELIVERY_ERROR } from '../../src/services/webhooks/retention';
import { insertEventWithDeliveries } from '../../src/storage/webhooks';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, saleRows, status } from '../helpers/batch';
import { meterInvocation } from '../helpers/invocation-meter';

const DAY = 86_400_000;
const daysAgo = (days: number) => isoTimestamp(new Date(Date.now() - days * DAY));

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Volume Shop' });
});

/** A completed batch with its result parts in R2; answers its id. */
async function completedBatch(): Promise<string> {
  const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
  await deliver('binbatch-chunks', messages);
  expect((await status(shop.secretKey, id)).status).toBe('completed');
  return id;
}

async function resultParts(batchId: string): Promise<number> {
  return (await env.FILES.list({ prefix: `results/${batchId}/` })).objects.length;
}

async function objectTables(batchId: string): Promise<number> {
  return runInDurableObject(env.BATCH_PROGRESS.getByName(batchId), (_instance, state) =>
    state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'").toArray().length,
  );
}

/** One hourly run of `jobs`, its spending counted: every D1 statement, R2 and object call. */
async function meteredRun(jobs: MaintenanceJob[]): Promise<{ outcome: Record<string, unknown>; spent: number }> {
  const meter = meterInvocation(env);
  const [report] = await runMaintenance(meter.env, () => new Date(), jobs);
  if (!report?.ok) throw new Error(`the job failed: ${JSON.stringify(report)}`);
  // A D1 batch is one subrequest but each of its statements a query: count the larger.
  const subrequests = meter.totalSubrequests() - (meter.subrequests.get('DB') ?? 0) + meter.d1Statements;
  return { outcome: report.outcome, spent: subrequests };
}

describe("a batch's own alarm", () => {
  it('at its deadline, deletes its result parts, marks its record and empties its object: 12 batches, 12 alarms, no cron', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, () => completedBatch()));
    for (const id of ids) {
      expect(await resultParts(id)).toBe(1);
      // Its retention alarm is set; a day before the deadline it only waits.
      await runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) => {
        state.storage.sql.exec('UPDATE state SET ended_at = ?', daysAgo(9));
      });
      expect(await runDurableObjectAlarm(env.BATCH_PROGRESS.getByName(id))).toBe(true);
      expect(await resultParts(id)).toBe(1);
    }
    for (const id of ids) {
      await runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) => {
        state.storage.sql.exec('UPDATE state SET ended_at = ?', daysAgo(10.01));
      });
      expect(await runDurableObjectAlarm(env.BATCH_PROGRESS.getByName(id))).toBe(true);
    }
    for (const id of ids) {
      expect(await resultParts(id)).toBe(0);
      expect(await objectTables(id)).toBe(0);
      const row = await env.DB.prepare('SELECT results_deleted_at FROM batches WHERE id = ?1').bind(id).first<{ results_deleted_at: string | null }>();
      expect(row?.results_deleted_at).not.toBeNull();
      expect((await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).status).toBe(410);
      expect(await status(shop.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 2 });
    }
  });
});

describe('the hourly sweeps, beyond one run\'s cap', () => {
  it('batches whose alarm never ran: each run sweeps what its cap allows, the next the rest; no run passes its cap', async () => {
    await deleteExpiredResults(env, () => new Date()); // nothing of an earlier test left to sweep
    const ids = await Promise.all(Array.from({ length: 7 }, () => completedBatch()));
    for (const id of ids) {
      // As a batch that ended before objects had retention alarms (or whose alarm gave up).
      await runInDurableObject(env.BATCH_PROGRESS.getByName(id), async (_instance, state) => {
        await state.storage.deleteAlarm();
      });
      await env.DB.prepare('UPDATE batches SET ended_at = ?2 WHERE id = ?1').bind(id, daysAgo(12)).run();
    }
    // A cap of 8: a page of two batches (the listing, three calls each, the UPDATE).
    const job: MaintenanceJob = { name: 'batch_retention', maxStatements: 8, run: deleteExpiredResults };
    const runs: { outcome: Record<string, unknown>; spent: number }[] = [];
    for (let run = 0; run < 6 && runs.at(-1)?.outcome.finished !== true; run++) runs.push(await meteredRun([job]));
    expect(runs.map((r) => r.outcome)).toEqual([
      { swept: 2, finished: false },
      { swept: 2, finished: false },
      { swept: 2, finished: false },
      { swept: 1, finished: true },
    ]);
    for (const run of runs) expect(run.spent).toBeLessThanOrEqual(8);
    for (const id of ids) {
      expect(await resultParts(id)).toBe(0);
      expect(await objectTables(id)).toBe(0);
    }
  });

  it('webhook history: 2,500 events past 30 days, pages of 100 and a cap of 30 statements: three runs, each within its cap', async () => {
    await deleteExpiredWebhookEvents(env, () => new Date()); // no event of an earlier test left to remove
    const made = await createEndpoint(webhookDeps(env), shop.id, { url: 'https://hooks.example.test/volume' });
    if (!made.ok) throw new Error(made.msg);
    const tag = crypto.randomUUID().slice(0, 8);
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
       INSERT INTO webhook_events (id, merchant_id, type, batch_id, payload, created_at)
       SELECT 'evt_vol_' || ?1 || '_' || i, ?2, 'batch.completed', 'bat_vol_' || ?1 || '_' || i, '{}', ?3 FROM n`,
    )
      .bind(tag, shop.id, daysAgo(40))
      .run();
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, status, attempts, created_at)
       SELECT 'whd_' || substr(id, 5), merchant_id, ?2, id, 'delivered', 1, created_at FROM webhook_events WHERE id LIKE 'evt_vol_' || ?1 || '_%'`,
    )
      .bind(tag, made.endpoint.id)
      .run();
    const left = async () =>
      (await env.DB.prepare(`SELECT COUNT(*) AS n FROM webhook_events WHERE id LIKE 'evt_vol_' || ?1 || '_%'`).bind(tag).first<{ n: number }>())?.n;
    expect(await left()).toBe(2_500);

    const job: MaintenanceJob = { name: 'webhook_retention', maxStatements: 30, run: (e, clock, cap) => deleteExpiredWebhookEvents(e, clock, cap, 100) };
    const runs: { outcome: Record<string, unknown>; spent: number }[] = [];
    for (let run = 0; run < 5 && runs.at(-1)?.outcome.finished !== true; run++) runs.push(await meteredRun([job]));
    expect(runs.map((r) => r.outcome)).toEqual([
      { removed: 1_000, finished: false },
      { removed: 1_000, finished: false },
      { removed: 500, finished: true },
    ]);
    for (const run of runs) expect(run.spent).toBeLessThanOrEqual(30);
    expect(await left()).toBe(0);
    const deliveries = await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?1').bind(made.endpoint.id).first<{ n: number }>();
    expect(deliveries?.n).toBe(0);
  });

  it('a delivery stuck pending a day past its due attempt is ended failed; its event then passes retention', async () => {
    const made = await createEndpoint(webhookDeps(env), shop.id, { url: 'https://hooks.example.test/stuck' });
    if (!made.ok) throw new Error(made.msg);
    const make = async (createdAt: string) => {
      const eventId = `evt_stuck${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const payload = JSON.stringify({ id: eventId, type: 'batch.completed', created_at: createdAt, data: {} });
      const [deliveryId] =
        (await insertEventWithDeliveries(env.DB, { id: eventId, merchant_id: shop.id, type: 'batch.completed', batch_id: `bat_${crypto.randomUUID()}`, payload, created_at: createdAt }, isoTimestamp(new Date()))) ?? [];
      return { eventId, deliveryId };
    };
    // Pending with no message behind it: due two days ago. Another is due an hour ago (its message may still come).
    const stuck = await make(daysAgo(2));
    const recent = await make(daysAgo(1 / 24));
    expect((await failStuckDeliveries(env, () => new Date())).finished).toBe(true);
    const row = (id: string | undefined) => env.DB.prepare('SELECT status, last_error, next_attempt_at FROM webhook_deliveries WHERE id = ?1').bind(id).first();
    expect(await row(stuck.deliveryId)).toEqual({ status: 'failed', last_error: STUCK_DELIVERY_ERROR, next_attempt_at: null });
    expect(await row(recent.deliveryId)).toMatchObject({ status: 'pending' });
    // Thirty days on, the stuck one's event goes; the other is still pending, so its event stays.
    await deleteExpiredWebhookEvents(env, () => new Date(Date.now() + 31 * DAY));
    const event = (id: string) => env.DB.prepare('SELECT 1 FROM webhook_events WHERE id = ?1').bind(id).first();
    expect(await event(stuck.eventId)).toBeNull();
    expect(await event(recent.eventId)).not.toBeNull();
  });

  it('upload fingerprint claims older than 24 hours are removed; a fresh one stays', async () => {
    const insert = (fingerprint: string, createdAt: string) =>
      env.DB.prepare('INSERT INTO upload_fingerprints (merchant_id, fingerprint, batch_id, created_at) VALUES (?1, ?2, ?3, ?4)')
        .bind(shop.id, fingerprint, `bat_${fingerprint}`, createdAt)
        .run();
    const old = `old${crypto.randomUUID()}`;
    const fresh = `new${crypto.randomUUID()}`;
    await insert(old, daysAgo(2));
    await insert(fresh, daysAgo(0.5));
    const outcome = await deleteLapsedUploadFingerprints(env, () => new Date());
    expect(outcome.finished).toBe(true);
    expect(outcome.removed).toBeGreaterThanOrEqual(1);
    const { results } = await env.DB.prepare('SELECT fingerprint FROM upload_fingerprints WHERE fingerprint IN (?1, ?2)').bind(old, fresh).all<{ fingerprint: string }>();
    expect(results.map((r) => r.fingerprint)).toEqual([fresh]);
  });
});
