/**
 * Webhook history is kept 30 days: the hourly cron removes each older event with all its
 * deliveries once none is still being retried. The merchant sees it through the delivery list
 * and redelivery; the cron's clock is its scheduled time.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isoTimestamp } from '../../src/lib/time';
import { webhookDeps } from '../../src/services/webhooks/deps';
import { createEndpoint } from '../../src/services/webhooks/endpoints';
import { WEBHOOK_EVENT_RETENTION_DAYS } from '../../src/services/webhooks/retention';
import { insertDelivery, insertEventWithDeliveries, markDeliveryFailed, recordAttempt } from '../../src/storage/webhooks';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { runDailyCron } from '../helpers/cron';

const T0 = new Date('2026-09-01T10:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (ms: number) => new Date(T0.getTime() + ms);

let shop: TestMerchant;
let endpointId: string;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Retention Shop' });
  const created = await createEndpoint(webhookDeps(env, () => T0), shop.id, { url: 'https://hooks.example.test/retention' });
  if (!created.ok) throw new Error(created.msg);
  endpointId = created.endpoint.id;
});

afterEach(() => vi.restoreAllMocks());

/** A batch.completed event made at `when` and its one delivery to the endpoint; answers the delivery id. */
async function eventAt(when: Date, name: string): Promise<{ eventId: string; deliveryId: string }> {
  const eventId = `evt_${name}${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const batchId = `bat_${name}${crypto.randomUUID().slice(0, 8)}`;
  const payload = JSON.stringify({ id: eventId, type: 'batch.completed', created_at: isoTimestamp(when), data: { id: batchId } });
  const made = await insertEventWithDeliveries(
    env.DB,
    { id: eventId, merchant_id: shop.id, type: 'batch.completed', batch_id: batchId, payload, created_at: isoTimestamp(when) },
    isoTimestamp(when),
  );
  const [deliveryId] = made ?? [];
  if (!deliveryId) throw new Error('no delivery made');
  return { eventId, deliveryId };
}

async function delivered(deliveryId: string, when: Date): Promise<void> {
  const at = isoTimestamp(when);
  expect(await recordAttempt(env.DB, deliveryId, 0, { status: 'delivered', lastStatusCode: 204, lastError: null, nextAttemptAt: null, deliveredAt: at })).toBe(true);
}

/** Runs the cron at `when`; answers the `removed` of its webhook_retention log line. */
async function runCron(when: Date): Promise<number> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  await runDailyCron(when);
  const line = log.mock.calls.map(([text]) => String(text)).find((text) => text.includes('"event":"webhook_retention"'));
  log.mockRestore();
  if (!line) throw new Error('no webhook_retention log line');
  return (JSON.parse(line) as { removed: number }).removed;
}

async function listedDeliveries(): Promise<{ ids: string[]; total: number }> {
  const response = await call('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  const body = await response.json<{ data: { id: string }[]; total_count: number }>();
  return { ids: body.data.map((delivery) => delivery.id), total: body.total_count };
}

describe('webhook history retention', () => {
  it(`removes events older than ${WEBHOOK_EVENT_RETENTION_DAYS} days with their deliveries, keeps one still being retried, and can run twice`, async () => {
    expect(WEBHOOK_EVENT_RETENTION_DAYS).toBe(30);
    const old = await eventAt(at(HOUR), 'old');
    await delivered(old.deliveryId, at(HOUR));
    const gaveUp = await eventAt(at(HOUR), 'gaveup');
    expect(await markDeliveryFailed(env.DB, gaveUp.deliveryId, 0, 'HTTP 500')).toBe(true);
    const redelivery = `whd_redelivery${crypto.randomUUID().replace(/-/g, '').slice(0, 10)}`;
    const redeliveredAt = isoTimestamp(at(2 * DAY));
    expect(
      await insertDelivery(env.DB, {
        id: redelivery,
        merchant_id: shop.id,
        endpoint_id: endpointId,
        event_id: gaveUp.eventId,
        redelivery_of: gaveUp.deliveryId,
        status: 'delivered',
        attempts: 1,
        last_status_code: 200,
        last_error: null,
        next_attempt_at: null,
        delivered_at: redeliveredAt,
        enqueued_at: redeliveredAt,
        created_at: redeliveredAt,
      }),
    ).toBe(true);
    const retrying = await eventAt(at(HOUR), 'retrying'); // still pending: a redelivery made late, say
    // Its next attempt is due an hour before the cron (one due long before has no message left behind
    // it: the stuck-deliveries job ends those; test/integration/retention-volume.test.ts).
    await env.DB.prepare('UPDATE webhook_deliveries SET next_attempt_at = ?2 WHERE id = ?1')
      .bind(retrying.deliveryId, isoTimestamp(at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + HOUR)))
      .run();
    const recent = await eventAt(at(20 * DAY), 'recent');
    await delivered(recent.deliveryId, at(20 * DAY));
    expect((await listedDeliveries()).total).toBe(5);

    // 30 days and 2 hours after T0: the events of T0 + 1 h are past the window, the one of day 20 is not.
    const cron = at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + 2 * HOUR);
    expect(await runCron(cron)).toBe(2);
    const left = await listedDeliveries();
    expect(left.ids.sort()).toEqual([retrying.deliveryId, recent.deliveryId].sort());
    expect(left.total).toBe(2);
    for (const gone of [old.eventId, gaveUp.eventId]) {
      expect(await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_events WHERE id = ?1').bind(gone).first('n')).toBe(0);
    }

    // A removed delivery reads like an unknown one, and its event cannot be sent again.
    const redeliver = await call('POST', `/api/webhooks/${endpointId}/deliveries/${old.deliveryId}/redeliver`, { key: shop.secretKey });
    expect(redeliver.status).toBe(404);
    expect((await redeliver.json<{ msg: string }>()).msg).toBe('delivery not found');

    expect(await runCron(cron)).toBe(0);

    // Once its last attempt is made, the retried event goes at the next run.
    await delivered(retrying.deliveryId, at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + 3 * HOUR));
    expect(await runCron(at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + DAY))).toBe(1);
    expect((await listedDeliveries()).ids).toEqual([recent.deliveryId]);
  });

  it('a redelivery whose event was removed meanwhile is not written', async () => {
    const { eventId, deliveryId } = await eventAt(at(HOUR), 'raced');
    await delivered(deliveryId, at(HOUR));
    expect(await runCron(at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + 2 * HOUR))).toBe(1);
    const when = isoTimestamp(at(WEBHOOK_EVENT_RETENTION_DAYS * DAY + 3 * HOUR));
    const written = await insertDelivery(env.DB, {
      id: 'whd_afterretention00000000',
      merchant_id: shop.id,
      endpoint_id: endpointId,
      event_id: eventId,
      redelivery_of: deliveryId,
      status: 'pending',
      attempts: 0,
      last_status_code: null,
      last_error: null,
      next_attempt_at: when,
      delivered_at: null,
      enqueued_at: null,
      created_at: when,
    });
    expect(written).toBe(false);
    expect(await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_id = ?1').bind(eventId).first('n')).toBe(0);
  });
});
