/**
 * Webhook deliveries within the invocation's connection limit (issue 29, item 7). Production lets
 * an invocation hold 6 connections; a request beyond them waits unsent while its time limit runs.
 * The delivery consumer gets up to 10 messages at once: ten slow receivers (each answering in 6 s,
 * inside the 10 s limit) must all be delivered, none timed out by waiting for a connection. The
 * network here keeps production's rule on a clock the test moves (test/helpers/connections.ts);
 * D1 and the webhook queue are the real ones.
 */
import { env } from 'cloudflare:workers';
import { createMessageBatch } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { isoTimestamp } from '../../src/lib/time';
import { ATTEMPTS_AT_ONCE, consumeWebhookDeliveries } from '../../src/queues/webhook-consumer';
import { webhookDeps } from '../../src/services/webhooks/deps';
import { createEndpoint } from '../../src/services/webhooks/endpoints';
import { insertEventWithDeliveries } from '../../src/storage/webhooks';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { settledIo, SimulatedConnections } from '../helpers/connections';
import { meterInvocation } from '../helpers/invocation-meter';

const T0 = new Date('2026-12-02T09:00:00.000Z');

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Slow Receivers Shop' });
});

describe('ten slow receivers in one delivery batch', () => {
  it('every one is delivered: none waits for a connection with its time limit running', async () => {
    const network = new SimulatedConnections(() => ({ afterMs: 6_000, status: 204 }));
    const meter = meterInvocation(env);
    const deps = {
      ...webhookDeps(meter.env, () => new Date(T0.getTime() + network.now)),
      fetch: network.fetch,
      timeoutSignal: network.timeoutSignal,
    };
    for (let i = 0; i < 10; i++) {
      const made = await createEndpoint(deps, shop.id, { url: `https://hooks.example.test/slow-${i}` });
      if (!made.ok) throw new Error(made.msg);
    }
    const eventId = `evt_slow${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const at = isoTimestamp(T0);
    const payload = JSON.stringify({ id: eventId, type: 'batch.completed', created_at: at, data: { id: 'bat_slow' } });
    const deliveryIds = await insertEventWithDeliveries(env.DB, { id: eventId, merchant_id: shop.id, type: 'batch.completed', batch_id: `bat_${crypto.randomUUID()}`, payload, created_at: at }, at);
    expect(deliveryIds).toHaveLength(10);

    const batch = createMessageBatch(
      'binbatch-webhooks',
      (deliveryIds ?? []).map((deliveryId, i) => ({ id: `slow-${i}`, timestamp: T0, attempts: 1, body: { deliveryId, attempt: 1 } })),
    );
    await network.run(consumeWebhookDeliveries(batch, meter.env, () => T0, deps), () => settledIo(() => meter.inFlight));

    const { results } = await env.DB.prepare(`SELECT status, last_error FROM webhook_deliveries WHERE event_id = ?1`).bind(eventId).all<{ status: string; last_error: string | null }>();
    expect(results.map((row) => `${row.status} ${row.last_error ?? ''}`.trim())).toEqual(Array.from({ length: 10 }, () => 'delivered'));
    expect(network.requests.map((request) => request.outcome)).toEqual(Array.from({ length: 10 }, () => 'answered'));
    // No request ever waited for a connection; the consumer kept to its share of them.
    expect(network.queued()).toEqual([]);
    expect(network.peakOpen).toBeLessThanOrEqual(ATTEMPTS_AT_ONCE);
  });
});
