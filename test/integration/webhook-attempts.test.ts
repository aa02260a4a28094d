/**
 * One delivery attempt at a time, on a clock the test moves: the schedule kept in D1 (delays with
 * jitter, early messages put back, waits longer than a queue delay split), timeouts, the rotation
 * overlap ending, URLs refused at attempt time, duplicate and stale messages, and the dead-letter
 * queue. Real D1 and the real webhook queue; the receiver is the injected fetch. Every delay here
 * is an hour or more, so nothing sent to the real queue comes back during the test.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isoTimestamp } from '../../src/lib/time';
import type { WebhookDeliveryMessage } from '../../src/schemas/webhooks';
import { attemptDelivery } from '../../src/services/webhooks/delivery';
import { webhookConfig } from '../../src/services/webhooks/config';
import { webhookDeps, type WebhookDeps } from '../../src/services/webhooks/deps';
import { createEndpoint, rotateSecret } from '../../src/services/webhooks/endpoints';
import { insertEventWithDeliveries } from '../../src/storage/webhooks';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { deliver } from '../helpers/batch';
import { signatureVerifies } from '../helpers/webhooks';

const T0 = new Date('2026-12-01T10:00:00.000Z');
const HOUR = 3_600_000;

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Attempt Shop' });
});

interface Sent {
  body: WebhookDeliveryMessage;
  delaySeconds: number | undefined;
}

/** Messages sent to the real webhook queue (they go through; their delays keep them away). */
function recordSends(): Sent[] {
  const sent: Sent[] = [];
  const original = env.WEBHOOK_QUEUE.send.bind(env.WEBHOOK_QUEUE);
  vi.spyOn(env.WEBHOOK_QUEUE, 'send').mockImplementation(async (body, options) => {
    sent.push({ body: body as WebhookDeliveryMessage, delaySeconds: options?.delaySeconds });
    return original(body, options);
  });
  return sent;
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** An answer that never comes: the request waits until its signal aborts, as a real fetch does. */
const NO_ANSWER = Symbol('no answer');

/** An attempt's time limit as the harness hands it out: the test fires it instead of waiting. */
interface Timer {
  ms: number;
  signal: AbortSignal;
  fire: () => void;
}

interface Harness {
  deps: WebhookDeps;
  now: { value: Date };
  requests: Request[];
  /** The signal each request was sent with. */
  signals: (AbortSignal | null)[];
  answers: (Response | Error | typeof NO_ANSWER)[];
  timers: Timer[];
  /** Resolves once a request is waiting for an answer that never comes. */
  waiting: Promise<void>;
}

function harness(delays: number[], allowLocal = false): Harness {
  const now = { value: T0 };
  const requests: Request[] = [];
  const signals: (AbortSignal | null)[] = [];
  const answers: Harness['answers'] = [];
  const timers: Timer[] = [];
  let nowWaiting = () => {};
  const waiting = new Promise<void>((resolve) => {
    nowWaiting = resolve;
  });
  const deps: WebhookDeps = {
    ...webhookDeps(env, () => now.value),
    // The app's own attempt timeout.
    config: { retryDelaysSeconds: delays, allowLocal, timeoutMs: webhookConfig(env).timeoutMs },
    random: () => 0.5, // jitter factor exactly 1
    timeoutSignal: (ms) => {
      const controller = new AbortController();
      const fire = () => controller.abort(new DOMException('The operation timed out.', 'TimeoutError'));
      timers.push({ ms, signal: controller.signal, fire });
      return controller.signal;
    },
    fetch: async (url, init) => {
      requests.push(new Request(url, init));
      signals.push(init.signal ?? null);
      const answer = answers.shift() ?? new Response(null, { status: 204 });
      if (answer === NO_ANSWER) {
        const { signal } = init;
        nowWaiting();
        if (!signal) throw new Error('sent without a time limit: it would wait forever');
        return new Promise<Response>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      }
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { deps, now, requests, signals, answers, timers, waiting };
}

/** An endpoint and one pending delivery of a fresh event to it; no queue message is sent. */
async function pendingDelivery(h: Harness, url = 'https://hooks.example.test/attempts'): Promise<{ deliveryId: string; secret: string; endpointId: string }> {
  const created = await createEndpoint(h.deps, shop.id, { url });
  if (!created.ok) throw new Error(created.msg);
  const eventId = `evt_test${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const payload = JSON.stringify({ id: eventId, type: 'batch.completed', created_at: isoTimestamp(h.now.value), data: { id: 'bat_x' } });
  await insertEventWithDeliveries(env.DB, {
    id: eventId,
    merchant_id: shop.id,
    type: 'batch.completed',
    batch_id: `bat_${crypto.randomUUID()}`,
    payload,
    created_at: isoTimestamp(h.now.value),
  }, isoTimestamp(h.now.value));
  const row = await env.DB.prepare('SELECT id FROM webhook_deliveries WHERE event_id = ?1 AND endpoint_id = ?2')
    .bind(eventId, created.endpoint.id)
    .first<{ id: string }>();
  if (!row) throw new Error('no delivery made');
  return { deliveryId: row.id, secret: created.endpoint.secret, endpointId: created.endpoint.id };
}

async function deliveryRow(id: string) {
  return env.DB.prepare('SELECT * FROM webhook_deliveries WHERE id = ?1').bind(id).first<Record<string, unknown>>();
}

describe('the schedule', () => {
  it('records each attempt in D1, waits the configured delay between them, and fails after the last', async () => {
    const sent = recordSends();
    const h = harness([3_600, 7_200]); // 3 attempts
    const { deliveryId } = await pendingDelivery(h);

    h.answers.push(new Response('nope', { status: 500 }));
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 1 })).toMatchObject({ result: 'retry_scheduled', attempt: 1, statusCode: 500 });
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_status_code: 500,
      last_error: 'HTTP 500',
      next_attempt_at: '2026-12-01T11:00:00.000Z',
    });
    expect(sent).toEqual([{ body: { deliveryId, attempt: 2 }, delaySeconds: 3_600 }]);

    // The queue hands attempt 1 over again: no second request; the next attempt stays scheduled.
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 1 })).toEqual({ result: 'skipped', reason: 'already_attempted' });
    expect(h.requests).toHaveLength(1);

    // Attempt 2's message arrives early: it is put back for the rest of the wait, nothing is sent.
    h.now.value = new Date(T0.getTime() + 10_000);
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 2 })).toEqual({ result: 'deferred', delaySeconds: 3_590 });
    expect(h.requests).toHaveLength(1);

    // Attempt 2 on time: the receiver never answers. The request carries a 10 s time limit; the
    // attempt waits for it, and when it runs out (fired here, not waited for) counts as timed out.
    h.now.value = new Date(T0.getTime() + HOUR);
    h.answers.push(NO_ANSWER);
    let settled = false;
    const timingOut = attemptDelivery(h.deps, { deliveryId, attempt: 2 }).finally(() => {
      settled = true;
    });
    await h.waiting;
    const timer = h.timers.find((t) => t.signal === h.signals[1]);
    expect(timer?.ms).toBe(10_000);
    expect(settled).toBe(false);
    timer?.fire();
    expect(await timingOut).toMatchObject({ result: 'retry_scheduled', statusCode: null });
    expect(await deliveryRow(deliveryId)).toMatchObject({
      attempts: 2,
      last_status_code: null,
      last_error: 'timed out after 10 s',
      next_attempt_at: '2026-12-01T13:00:00.000Z',
    });

    // Attempt 3, the last: a redirect is not followed and counts as a failure.
    h.now.value = new Date(T0.getTime() + 3 * HOUR);
    h.answers.push(new Response(null, { status: 302, headers: { Location: 'http://10.0.0.1/' } }));
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 3 })).toMatchObject({ result: 'failed', attempt: 3, statusCode: 302 });
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: 'failed',
      attempts: 3,
      last_status_code: 302,
      last_error: 'HTTP 302 (redirects are not followed)',
      next_attempt_at: null,
      delivered_at: null,
    });
    expect(h.requests[2]?.redirect).toBe('manual');
    expect(sent.filter((s) => s.body.attempt === 4)).toEqual([]);

    // A late message for a finished delivery does nothing.
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 3 })).toEqual({ result: 'skipped', reason: 'finished' });
    expect(h.requests).toHaveLength(3);
  });

  it('spreads retries with jitter of up to ±20 %', async () => {
    const sent = recordSends();
    const h = harness([3_600]);
    const low = await pendingDelivery(h);
    const high = await pendingDelivery(h);
    h.answers.push(new Response(null, { status: 500 }), new Response(null, { status: 500 }));
    await attemptDelivery({ ...h.deps, random: () => 0 }, { deliveryId: low.deliveryId, attempt: 1 });
    await attemptDelivery({ ...h.deps, random: () => 0.999999 }, { deliveryId: high.deliveryId, attempt: 1 });
    expect((await deliveryRow(low.deliveryId))?.next_attempt_at).toBe('2026-12-01T10:48:00.000Z'); // 0.8 h
    expect((await deliveryRow(high.deliveryId))?.next_attempt_at).toBe('2026-12-01T11:12:00.000Z'); // 1.2 h
    expect(sent.map((s) => s.delaySeconds)).toEqual([2_880, 4_320]);
  });

  it('splits a wait longer than the 12-hour queue delay limit', async () => {
    const sent = recordSends();
    const h = harness([86_400]);
    const { deliveryId } = await pendingDelivery(h);
    h.answers.push(new Response(null, { status: 500 }));
    await attemptDelivery(h.deps, { deliveryId, attempt: 1 });
    expect(sent.at(-1)).toEqual({ body: { deliveryId, attempt: 2 }, delaySeconds: 43_200 });
    h.now.value = new Date(T0.getTime() + 12 * HOUR);
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 2 })).toEqual({ result: 'deferred', delaySeconds: 43_200 });
    h.now.value = new Date(T0.getTime() + 24 * HOUR);
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 2 })).toMatchObject({ result: 'delivered', attempt: 2, statusCode: 204 });
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: 'delivered', attempts: 2, delivered_at: '2026-12-02T10:00:00.000Z' });
  });
});

describe('signing', () => {
  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    recordSends();
    const h = harness([86_400]);
    const { deliveryId, secret: oldSecret, endpointId } = await pendingDelivery(h);
    const rotated = await rotateSecret(h.deps, shop.id, endpointId);
    if (!rotated.ok) throw new Error(rotated.msg);

    h.now.value = new Date(T0.getTime() + HOUR);
    h.answers.push(new Response(null, { status: 500 }));
    await attemptDelivery(h.deps, { deliveryId, attempt: 1 });
    const during = h.requests[0];
    const body = (await during?.clone().text()) ?? '';
    const header = during?.headers.get('Binbatch-Signature') ?? null;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(header?.startsWith(`t=${Math.floor((T0.getTime() + HOUR) / 1000)},`)).toBe(true);
    expect(await signatureVerifies(header, body, rotated.endpoint.secret)).toBe(true);
    expect(await signatureVerifies(header, body, oldSecret)).toBe(true);

    h.now.value = new Date(T0.getTime() + 25 * HOUR);
    await attemptDelivery(h.deps, { deliveryId, attempt: 2 });
    const after = h.requests[1];
    const afterHeader = after?.headers.get('Binbatch-Signature') ?? null;
    expect(afterHeader).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(await signatureVerifies(afterHeader, (await after?.clone().text()) ?? '', rotated.endpoint.secret)).toBe(true);
    expect(await signatureVerifies(afterHeader, (await after?.clone().text()) ?? '', oldSecret)).toBe(false);
  });

  it('sends the event id, the delivery id and the stored body byte for byte', async () => {
    recordSends();
    const h = harness([3_600]);
    const { deliveryId } = await pendingDelivery(h);
    await attemptDelivery(h.deps, { deliveryId, attempt: 1 });
    const request = h.requests[0];
    const stored = await env.DB.prepare(
      'SELECT e.id, e.payload FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE d.id = ?1',
    )
      .bind(deliveryId)
      .first<{ id: string; payload: string }>();
    expect(await request?.text()).toBe(stored?.payload);
    expect(request?.headers.get('Binbatch-Event-Id')).toBe(stored?.id);
    expect(request?.headers.get('Binbatch-Delivery-Id')).toBe(deliveryId);
    expect(request?.method).toBe('POST');
  });
});

describe('refusals and leftovers', () => {
  it('a URL the rules refuse at attempt time fails the delivery without any request', async () => {
    recordSends();
    const local = harness([3_600], true);
    const { deliveryId } = await pendingDelivery(local, 'http://localhost:9999/hook');
    const production = harness([3_600], false);
    const outcome = await attemptDelivery(production.deps, { deliveryId, attempt: 1 });
    expect(outcome).toMatchObject({ result: 'failed', statusCode: null });
    expect(production.requests).toHaveLength(0);
    expect((await deliveryRow(deliveryId))?.last_error).toMatch(/^url refused: must use https:\/\//);
  });

  it('a delivery whose endpoint was deleted is skipped; a malformed message is dropped', async () => {
    recordSends();
    const h = harness([3_600]);
    const { deliveryId, endpointId } = await pendingDelivery(h);
    await env.DB.batch([
      env.DB.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?1').bind(endpointId),
      env.DB.prepare('DELETE FROM webhook_endpoints WHERE id = ?1').bind(endpointId),
    ]);
    expect(await attemptDelivery(h.deps, { deliveryId, attempt: 1 })).toEqual({ result: 'skipped', reason: 'unknown_delivery' });
    expect(h.requests).toHaveLength(0);

    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const result = await deliver('binbatch-webhooks', [{ deliveryId: 42 }]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
  });

  it('a message that exhausted the queue retries on internal errors ends its delivery as failed', async () => {
    recordSends();
    const h = harness([3_600]);
    const { deliveryId } = await pendingDelivery(h);
    const result = await deliver('binbatch-webhooks-dlq', [{ deliveryId, attempt: 1 }]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: 'failed',
      attempts: 0,
      last_error: 'could not be attempted after repeated internal errors; redeliver it',
      next_attempt_at: null,
    });
  });

  it('an internal error is retried by the queue with backoff, not counted as an attempt', async () => {
    recordSends();
    const h = harness([3_600]);
    const { deliveryId } = await pendingDelivery(h);
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const prepare = vi.spyOn(env.DB, 'prepare').mockImplementation(() => {
      throw new Error('D1_ERROR: storage unavailable');
    });
    const result = await deliver('binbatch-webhooks', [{ deliveryId, attempt: 1 }], 2);
    prepare.mockRestore();
    // (getQueueResult does not report the delay: internalRetryDelaySeconds has a unit test.)
    expect(result.retryMessages).toMatchObject([{ msgId: expect.any(String) }]);
    expect(result.explicitAcks).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: 'pending', attempts: 0 });
  });
});
