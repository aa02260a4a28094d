/**
 * Batch events end to end, through the real batch pipeline, D1, the webhook queue and its
 * consumer: one event per transition and subscribed endpoint, signed; retries until a 2xx; the
 * delivery failed after the configured attempts (4 in the test config: WEBHOOK_RETRY_DELAYS
 * "0,0,0"); redelivery. Receivers are in-process (test/helpers/webhooks.ts): no network.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import {
  CARD_HEADER,
  QUEUE_TEST_TIMEOUT,
  createUnqueuedBatch,
  csv,
  deliver,
  saleRows,
  status,
  uploadOk,
  waitForStatus,
} from '../helpers/batch';
import { describeFindings, findSecrets } from '../helpers/leak-scan';
import { createEndpoint, deliveries, receiver, signatureVerifies, statuses, type Delivery } from '../helpers/webhooks';

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Webhook Shop' });
});

const WAIT = { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 20 };

/** Waits until the endpoint's deliveries satisfy `done` (all of them ended, by default). */
function settled(endpointId: string, done = (list: Delivery[]) => list.length > 0 && list.every((d) => d.status !== 'pending')) {
  return vi.waitFor(async () => {
    const list = await deliveries(shop.secretKey, endpointId);
    if (!done(list)) throw new Error(`deliveries not settled: ${JSON.stringify(list)}`);
    return list;
  }, WAIT);
}

interface EventBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

describe('a batch that completes', () => {
  it(
    'sends one signed batch.completed event to each endpoint subscribed to it, carrying the batch record as GET answers it',
    async () => {
      const both = receiver();
      const completedOnly = receiver();
      const failedOnly = receiver();
      const endpointBoth = await createEndpoint(shop.secretKey, { url: both.url });
      const endpointCompleted = await createEndpoint(shop.secretKey, { url: completedOnly.url, events: ['batch.completed'] });
      const endpointFailed = await createEndpoint(shop.secretKey, { url: failedOnly.url, events: ['batch.failed'] });

      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(3)), 'webhook-complete.csv');
      await waitForStatus(shop.secretKey, id, 'completed');
      const [deliveryBoth] = await settled(endpointBoth.id);
      const [deliveryCompleted] = await settled(endpointCompleted.id);

      expect(deliveryBoth).toMatchObject({ type: 'batch.completed', status: 'delivered', attempts: 1, last_status_code: 204, next_attempt_at: null });
      expect(deliveryCompleted).toMatchObject({ type: 'batch.completed', status: 'delivered', attempts: 1 });
      expect(deliveryBoth?.event_id).toBe(deliveryCompleted?.event_id);
      expect(both.received).toHaveLength(1);
      expect(completedOnly.received).toHaveLength(1);
      expect(failedOnly.received).toHaveLength(0);
      expect(await deliveries(shop.secretKey, endpointFailed.id)).toEqual([]);

      const [request] = both.received;
      if (!request) throw new Error('no request');
      const event = JSON.parse(request.body) as EventBody;
      expect(event.id).toMatch(/^evt_[a-z0-9]+$/);
      expect(event.id).toBe(deliveryBoth?.event_id);
      expect(event.type).toBe('batch.completed');
      // The batch record as GET answers it, and its email receipts counted (none were asked for).
      expect(event.data).toEqual({ ...(await status(shop.secretKey, id)), receipts: { queued: 0, sent: 0, failed: 0 } });
      expect(event.data).toMatchObject({ id, status: 'completed', num_lines: 3, processed_lines: 3 });
      expect(request.method).toBe('POST');
      expect(request.headers.get('Content-Type')).toBe('application/json');
      expect(request.headers.get('Binbatch-Event-Id')).toBe(event.id);
      expect(await signatureVerifies(request.headers.get('Binbatch-Signature'), request.body, endpointBoth.secret)).toBe(true);
      // Each endpoint's requests are signed with its own secret only.
      expect(await signatureVerifies(request.headers.get('Binbatch-Signature'), request.body, endpointCompleted.secret)).toBe(false);
      const other = completedOnly.received[0];
      expect(other?.body).toBe(request.body);
      expect(await signatureVerifies(other?.headers.get('Binbatch-Signature') ?? null, other?.body ?? '', endpointCompleted.secret)).toBe(true);
      // t= is now, in unix seconds: a receiver's 5-minute replay window accepts it.
      const t = Number(/t=(\d+)/.exec(request.headers.get('Binbatch-Signature') ?? '')?.[1]);
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(60);

      // The transition's effects re-run (a late chunk reaches the ended batch): nothing new is sent,
      // not even to an endpoint made since (an endpoint gets the transitions after its creation).
      const late = await createEndpoint(shop.secretKey, { url: receiver().url });
      const again = await env.BATCH_PROGRESS.getByName(id).recordChunk(0);
      expect(again).toMatchObject({ counted: false });
      expect(await deliveries(shop.secretKey, endpointBoth.id)).toHaveLength(1);
      expect(await deliveries(shop.secretKey, late.id)).toEqual([]);
      const events = await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_events WHERE batch_id = ?1').bind(id).first<{ n: number }>();
      expect(events?.n).toBe(1);
      const queued = await env.DB.prepare(
        `SELECT COUNT(*) AS n FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.batch_id = ?1`,
      )
        .bind(id)
        .first<{ n: number }>();
      expect(queued?.n).toBe(2);

      for (const endpoint of [endpointBoth, endpointCompleted, endpointFailed, late]) {
        expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
      }
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('a batch that fails', () => {
  it(
    'sends one batch.failed event, with the failure reason, to the endpoints subscribed to it',
    async () => {
      const failedOnly = receiver();
      const completedOnly = receiver();
      const endpointFailed = await createEndpoint(shop.secretKey, { url: failedOnly.url, events: ['batch.failed'] });
      const endpointCompleted = await createEndpoint(shop.secretKey, { url: completedOnly.url, events: ['batch.completed'] });

      // A chunk that exhausted its retries reaches the dead-letter consumer, which fails the batch.
      const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(2)), 'webhook-fail.csv');
      const result = await deliver('binbatch-chunks-dlq', [messages[0]]);
      expect(result.explicitAcks).toHaveLength(1);
      // The dead-letter queue fails it twice over (a redelivered dead letter): still one event.
      await deliver('binbatch-chunks-dlq', [messages[0]]);

      const [delivery] = await settled(endpointFailed.id);
      expect(delivery).toMatchObject({ type: 'batch.failed', status: 'delivered', attempts: 1 });
      expect(failedOnly.received).toHaveLength(1);
      const request = failedOnly.received[0];
      const event = JSON.parse(request?.body ?? '{}') as EventBody;
      expect(event.type).toBe('batch.failed');
      expect(event.data).toEqual({ ...(await status(shop.secretKey, id)), receipts: { queued: 0, sent: 0, failed: 0 } });
      expect(event.data).toMatchObject({ id, status: 'failed', failure_reason: expect.stringContaining('chunk 0') });
      expect(await signatureVerifies(request?.headers.get('Binbatch-Signature') ?? null, request?.body ?? '', endpointFailed.secret)).toBe(true);
      expect(completedOnly.received).toHaveLength(0);
      expect(await deliveries(shop.secretKey, endpointCompleted.id)).toEqual([]);

      for (const endpoint of [endpointFailed, endpointCompleted]) {
        expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
      }
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('card data', () => {
  it(
    'never reaches a webhook: a batch of card rows, with a card number in its file name, sends only the masked record',
    async () => {
      const hook = receiver();
      const endpoint = await createEndpoint(shop.secretKey, { url: hook.url });
      const header = [...CARD_HEADER, 'cc_cvc'];
      const rows = [
        ['sale', '1500', '4242424242424242', '12/30', 'ord1', '737'],
        ['sale', '1600', '5555555555554444', '12/30', 'ord2', '737'],
      ];
      const id = await uploadOk(shop.secretKey, csv(header, rows), '4242424242424242.csv');
      await waitForStatus(shop.secretKey, id, 'completed');
      await settled(endpoint.id);
      const request = hook.received[0];
      const everything = `${request?.body ?? ''}\n${[...(request?.headers.entries() ?? [])].map(([k, v]) => `${k}: ${v}`).join('\n')}`;
      const findings = findSecrets(everything, { cardNumbers: ['4242424242424242', '5555555555554444'], cvcs: ['737'] }, 'webhook');
      expect(findings, describeFindings(findings)).toEqual([]);
      expect((JSON.parse(request?.body ?? '{}') as EventBody).data.file_name).toBe('424242******4242.csv');
      const stored = await env.DB.prepare('SELECT payload FROM webhook_events WHERE batch_id = ?1').bind(id).first<{ payload: string }>();
      expect(stored?.payload).toBe(request?.body);
      expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('retries', () => {
  it(
    'an endpoint answering 500 twice, then 200, gets three attempts of the same signed event and one success',
    async () => {
      const flaky = receiver(statuses(500, 500, 200));
      const endpoint = await createEndpoint(shop.secretKey, { url: flaky.url });
      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1)), 'webhook-retry.csv');
      await waitForStatus(shop.secretKey, id, 'completed');

      const [delivery] = await settled(endpoint.id);
      expect(delivery).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 200, last_error: null, next_attempt_at: null });
      expect(delivery?.delivered_at).not.toBeNull();
      expect(flaky.received).toHaveLength(3);
      const eventIds = new Set(flaky.received.map((request) => request.headers.get('Binbatch-Event-Id')));
      expect(eventIds).toEqual(new Set([delivery?.event_id]));
      expect(new Set(flaky.received.map((request) => request.body)).size).toBe(1);
      for (const request of flaky.received) {
        expect(await signatureVerifies(request.headers.get('Binbatch-Signature'), request.body, endpoint.secret)).toBe(true);
      }
      expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it(
    'an endpoint that never answers 2xx ends as failed after the configured attempts; redeliver sends the event again',
    async () => {
      const down = receiver(statuses(503));
      const unreachable = receiver(() => {
        throw new TypeError('connection refused');
      });
      const endpoint = await createEndpoint(shop.secretKey, { url: down.url });
      const endpointUnreachable = await createEndpoint(shop.secretKey, { url: unreachable.url });
      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1)), 'webhook-down.csv');
      await waitForStatus(shop.secretKey, id, 'completed');

      const [failed] = await settled(endpoint.id);
      expect(failed).toMatchObject({ status: 'failed', attempts: 4, last_status_code: 503, last_error: 'HTTP 503', next_attempt_at: null, delivered_at: null });
      expect(down.received).toHaveLength(4);
      const [unreached] = await settled(endpointUnreachable.id);
      expect(unreached).toMatchObject({ status: 'failed', attempts: 4, last_status_code: null });
      expect(unreached?.last_error).toMatch(/^network error: connection refused/);
      if (!failed) throw new Error('no delivery');

      // Still failing when redelivered: a new delivery of the same event, with its own attempts.
      down.answer = () => new Response('ok', { status: 200 });
      const response = await call('POST', `/api/webhooks/${endpoint.id}/deliveries/${failed.id}/redeliver`, { key: shop.secretKey });
      expect(response.status).toBe(202);
      const { data: redelivery } = await response.json<{ data: Delivery }>();
      expect(redelivery).toMatchObject({ event_id: failed.event_id, redelivery_of: failed.id, status: 'pending', attempts: 0, type: 'batch.completed' });
      expect(redelivery.id).not.toBe(failed.id);

      const list = await settled(endpoint.id);
      expect(list.map((d) => d.id)).toEqual([redelivery.id, failed.id]); // newest first
      expect(list[0]).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 });
      expect(list[1]).toMatchObject({ status: 'failed', attempts: 4 });
      expect(down.received).toHaveLength(5);
      expect(down.received[4]?.headers.get('Binbatch-Event-Id')).toBe(failed.event_id);
      expect(down.received[4]?.body).toBe(down.received[0]?.body);
      expect(await signatureVerifies(down.received[4]?.headers.get('Binbatch-Signature') ?? null, down.received[4]?.body ?? '', endpoint.secret)).toBe(true);

      for (const e of [endpoint, endpointUnreachable]) {
        expect((await call('DELETE', `/api/webhooks/${e.id}`, { key: shop.secretKey })).status).toBe(200);
      }
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('secret rotation', () => {
  it(
    'signs with the new and the previous secret during the overlap',
    async () => {
      const hook = receiver();
      const endpoint = await createEndpoint(shop.secretKey, { url: hook.url });
      const response = await call('POST', `/api/webhooks/${endpoint.id}/rotate-secret`, { key: shop.secretKey });
      expect(response.status).toBe(200);
      const { data: rotated } = await response.json<{ data: { secret: string; previous_secret_expires_at: string } }>();
      expect(rotated.secret).not.toBe(endpoint.secret);
      const overlap = Date.parse(rotated.previous_secret_expires_at) - Date.now();
      expect(overlap).toBeGreaterThan(23.9 * 3_600_000);
      expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);

      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1)), 'webhook-rotation.csv');
      await waitForStatus(shop.secretKey, id, 'completed');
      await settled(endpoint.id);
      const request = hook.received[0];
      const header = request?.headers.get('Binbatch-Signature') ?? null;
      expect(header?.match(/v1=/g)).toHaveLength(2);
      expect(await signatureVerifies(header, request?.body ?? '', rotated.secret)).toBe(true);
      expect(await signatureVerifies(header, request?.body ?? '', endpoint.secret)).toBe(true);
      expect(await signatureVerifies(header, request?.body ?? '', 'whsec_someoneelse')).toBe(false);
      expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
    },
    QUEUE_TEST_TIMEOUT,
  );
});
