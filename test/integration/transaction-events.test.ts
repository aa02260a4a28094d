/**
 * FluidPay's `transaction_create` (issue 34): the event travels in its queue message, one per
 * subscribed endpoint, with no D1 row per event and no daily bound; the request that created the
 * transaction publishes it once, a replay never; the queue's retries are its attempts, and the
 * endpoint's `transaction_events` summary (GET /api/webhooks) is what a merchant sees of them.
 *
 * Publishing is watched at the real queue binding (its messages captured, not sent); the consumer
 * runs through the Worker's real queue handler with the attempt numbers the queue would give.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HALF, QUEUES } from '../../src/lib/platform-limits';
import type { TransactionRecordView } from '../../src/schemas/transaction-response';
import type { TransactionEventMessage } from '../../src/schemas/webhooks';
import { webhookConfig } from '../../src/services/webhooks/config';
import { webhookDeps } from '../../src/services/webhooks/deps';
import { attemptTransactionEvent } from '../../src/services/webhooks/transaction-event-delivery';
import { publishTransactionEvent, TRANSACTION_EVENT_MESSAGE_BUDGET } from '../../src/services/webhooks/transaction-events';
import { findTransactionEventEndpoints } from '../../src/storage/transaction-events';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { deliver } from '../helpers/batch';
import { parseWebhookRequest } from '../helpers/fluidpay-sdk';
import { createEndpoint, receiver, signatureVerifies, statuses, type CreatedEndpoint } from '../helpers/webhooks';

const QUEUE = 'binbatch-transaction-events';
const CARD = { cc_number: '4111111111111111', cc_expiration: '12/30' };

afterEach(() => {
  vi.restoreAllMocks();
});

/** Messages the Worker puts on the transaction event queue from here on: kept here, never delivered by the queue. */
function captureEvents(): TransactionEventMessage[] {
  const captured: TransactionEventMessage[] = [];
  vi.spyOn(env.TRANSACTION_EVENT_QUEUE, 'sendBatch').mockImplementation(async (messages) => {
    for (const message of messages) captured.push(message.body as TransactionEventMessage);
    return undefined as never;
  });
  vi.spyOn(env.TRANSACTION_EVENT_QUEUE, 'send').mockImplementation(async (body) => {
    captured.push(body as TransactionEventMessage);
    return undefined as never;
  });
  return captured;
}

async function sale(shop: TestMerchant, body: Record<string, unknown>, key?: string): Promise<{ status: number; record: { id: string } & Record<string, unknown> }> {
  const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', ...CARD, ...body }, headers: key ? { 'Idempotency-Key': key } : {} });
  const json = await response.json<{ data: { id: string } & Record<string, unknown> }>();
  return { status: response.status, record: json.data };
}

async function summaryOf(shop: TestMerchant, endpointId: string) {
  const response = await call('GET', '/api/webhooks', { key: shop.secretKey });
  const endpoints = (await response.json<{ data: { id: string; transaction_events: Record<string, unknown> | null }[] }>()).data;
  return endpoints.find((endpoint) => endpoint.id === endpointId)?.transaction_events;
}

async function eventRows(merchantId: string): Promise<number> {
  const row = await env.DB.prepare(
    `SELECT (SELECT COUNT(*) FROM webhook_events WHERE merchant_id = ?1) + (SELECT COUNT(*) FROM webhook_deliveries WHERE merchant_id = ?1) AS n`,
  )
    .bind(merchantId)
    .first<{ n: number }>();
  return row?.n ?? -1;
}

describe('publishing', () => {
  it('a sale puts its event on the queue once per endpoint that takes it, and writes no D1 row; a replay publishes nothing', async () => {
    const shop = await createMerchant({ name: 'Event Shop' });
    const only = await createEndpoint(shop.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const also = await createEndpoint(shop.secretKey, { url: receiver().url, events: ['batch.completed', 'transaction_create'] });
    await createEndpoint(shop.secretKey, { url: receiver().url }); // the default: every type but transaction_create
    const captured = captureEvents();

    const first = await sale(shop, { amount: 1234 }, 'evt-once');
    expect(first.status).toBe(201);
    expect(captured.map((message) => message.endpointId).sort()).toEqual([only.id, also.id].sort());
    for (const message of captured) {
      expect(message).toMatchObject({ merchantId: shop.id, event: { id: `evt_${first.record.id}`, type: 'transaction_create', transaction_id: first.record.id, account_type_id: shop.id } });
      // The event carries the record exactly as the API answered it.
      expect(message.event.data).toEqual(first.record);
    }

    const replay = await sale(shop, { amount: 1234 }, 'evt-once');
    expect(replay.status).toBe(200);
    expect(captured).toHaveLength(2);
    expect(await eventRows(shop.id)).toBe(0);
  });

  it('a merchant whose endpoints do not take transaction_create sends no message', async () => {
    const shop = await createMerchant({ name: 'Quiet Shop' });
    await createEndpoint(shop.secretKey, { url: receiver().url });
    const captured = captureEvents();
    expect((await sale(shop, { amount: 500 })).status).toBe(201);
    expect(captured).toEqual([]);
  });

  it('concurrent requests, repeats of one key among them, publish exactly one event per transaction created', async () => {
    const shop = await createMerchant({ name: 'Rush Shop' });
    await createEndpoint(shop.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const captured = captureEvents();
    const answers = await Promise.all([
      ...[1, 2, 3, 4].map((n) => sale(shop, { amount: 100 + n }, `rush-${n}`)),
      ...[1, 2, 3].map(() => sale(shop, { amount: 999 }, 'rush-same')),
    ]);
    const created = answers.filter((answer) => answer.status === 201).map((answer) => answer.record.id);
    expect(new Set(answers.filter((a) => a.status < 300).map((a) => a.record.id)).size).toBe(5);
    expect(created).toHaveLength(5);
    expect(captured.map((message) => message.event.transaction_id).sort()).toEqual([...created].sort());
  });

  it('has no daily bound: the 1,001st event of a UTC day goes out as the first did', async () => {
    const shop = await createMerchant({ name: 'Busy Shop' });
    await createEndpoint(shop.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const captured = captureEvents();
    const { record } = await sale(shop, { amount: 700 });
    const queue = { sendBatch: async (messages: Iterable<MessageSendRequest<TransactionEventMessage>>) => void [...messages].forEach((m) => captured.push(m.body)) };
    for (let i = 0; i < 1_001; i++) {
      const outcome = await publishTransactionEvent({ db: env.DB, queue: queue as unknown as Queue<TransactionEventMessage> }, shop.id, { ...(record as unknown as TransactionRecordView), id: `${record.id.slice(0, -4)}${String(i).padStart(4, '0')}` });
      expect(outcome).toEqual({ queued: 1 });
    }
    expect(captured).toHaveLength(1 + 1_001);
    expect(await eventRows(shop.id)).toBe(0);
  });

  it('the largest record a request can make travels in one message inside half of the queue limit', async () => {
    const shop = await createMerchant({ name: 'Long Address Shop' });
    await createEndpoint(shop.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const captured = captureEvents();
    // Every contact column at its limit (255 UTF-16 units) of a three-byte character: the most bytes
    // a unit can cost (a JSON-escaped quote costs 2, a four-byte character 2 per unit, control characters are refused).
    const long = '€'.repeat(255);
    const contact = Object.fromEntries(
      ['first_name', 'last_name', 'company', 'address_line_1', 'address_line_2', 'city', 'state', 'postal_code', 'country', 'phone', 'fax', 'email'].flatMap((part) => [
        [`billing_${part}`, long],
        [`shipping_${part}`, long],
      ]),
    );
    const made = await sale(shop, { amount: 100, description: '€'.repeat(100), order_id: 'A'.repeat(17), po_number: 'B'.repeat(17), ...contact }, 'k'.repeat(255));
    expect(made.status, JSON.stringify(made.record)).toBe(201);
    const bytes = new TextEncoder().encode(JSON.stringify(captured[0])).byteLength;
    expect(bytes).toBeGreaterThan(30_000);
    expect(bytes).toBeLessThanOrEqual(TRANSACTION_EVENT_MESSAGE_BUDGET);
    expect(TRANSACTION_EVENT_MESSAGE_BUDGET).toBe(QUEUES.messageBytes * HALF);
  });
});

describe('delivering', () => {
  let shop: TestMerchant;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Delivery Shop' });
  });

  /** A subscribed endpoint at a fresh receiver, and the message of one real sale's event for it. */
  async function setup(answer?: ReturnType<typeof statuses>) {
    const hook = receiver(answer);
    const endpoint: CreatedEndpoint = await createEndpoint(shop.secretKey, { url: hook.url, events: ['transaction_create'] });
    const captured = captureEvents();
    await sale(shop, { amount: 2500 });
    const message = captured.find((m) => m.endpointId === endpoint.id);
    if (!message) throw new Error('no event published');
    vi.restoreAllMocks();
    return { hook, endpoint, message };
  }

  it('posts the event byte for byte, signed both ways, and the endpoint shows it delivered', async () => {
    const { hook, endpoint, message } = await setup();
    const result = await deliver(QUEUE, [message]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
    expect(hook.received).toHaveLength(1);
    const got = hook.received[0];
    if (!got) throw new Error('nothing received');
    expect(got.body).toBe(JSON.stringify(message.event));
    expect(await signatureVerifies(got.headers.get('Binbatch-Signature'), got.body, endpoint.secret)).toBe(true);
    expect(await parseWebhookRequest(got.headers, got.body, endpoint.secret)).toMatchObject({ type: 'transaction_create', transaction_id: message.event.transaction_id });
    expect(got.headers.get('X-Webhook-Event-Id')).toBe(message.event.id);
    expect(got.headers.get('Binbatch-Delivery-Id')).toMatch(/^whq_/);
    expect(await summaryOf(shop, endpoint.id)).toMatchObject({ last_delivered_at: expect.any(String), failing_since: null, failed_attempts: 0, abandoned_events: 0, last_failure: null });
  });

  it('a failed attempt is the queue retrying with the webhook backoff; after the last one the event is given up and counted', async () => {
    const { hook, endpoint, message } = await setup(statuses(500));
    // The test config's schedule: WEBHOOK_RETRY_DELAYS "0,0,0", 4 attempts.
    for (const attempt of [1, 2, 3]) {
      const result = await deliver(QUEUE, [message], attempt);
      expect(result.retryMessages, `attempt ${attempt}`).toEqual([{ msgId: expect.any(String), delaySeconds: 0 }]);
      expect(result.explicitAcks).toEqual([]);
    }
    const failing = await summaryOf(shop, endpoint.id);
    expect(failing).toMatchObject({
      last_delivered_at: null,
      failing_since: expect.any(String),
      failed_attempts: 3,
      abandoned_events: 0,
      last_failure: { status_code: 500, error: 'HTTP 500', event_id: message.event.id, transaction_id: message.event.transaction_id },
      last_abandoned: null,
    });
    const last = await deliver(QUEUE, [message], 4);
    expect(last.explicitAcks).toHaveLength(1);
    expect(last.retryMessages).toEqual([]);
    expect(hook.received).toHaveLength(4);
    const gaveUp = await summaryOf(shop, endpoint.id);
    expect(gaveUp).toMatchObject({ failed_attempts: 4, abandoned_events: 1, failing_since: failing?.failing_since, last_abandoned: { transaction_id: message.event.transaction_id } });

    // The receiver recovers: the next event goes through and the endpoint is no longer failing.
    hook.answer = () => new Response(null, { status: 200 });
    await deliver(QUEUE, [message]);
    expect(await summaryOf(shop, endpoint.id)).toMatchObject({ failing_since: null, last_delivered_at: expect.any(String), failed_attempts: 4, abandoned_events: 1 });
  });

  it('a healthy endpoint has its summary written at most once a minute', async () => {
    const { endpoint, message } = await setup();
    await deliver(QUEUE, [message]);
    const first = await summaryOf(shop, endpoint.id);
    await deliver(QUEUE, [message, message]);
    expect(await summaryOf(shop, endpoint.id)).toEqual(first);
  });

  it('an event for a deleted endpoint is dropped, sending nothing and leaving no summary', async () => {
    const { hook, endpoint, message } = await setup();
    expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
    const result = await deliver(QUEUE, [message]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(hook.received).toEqual([]);
    expect(await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_transaction_event_health WHERE endpoint_id = ?1').bind(endpoint.id).first<{ n: number }>()).toEqual({ n: 0 });
  });

  it('deleting an endpoint removes its summary with it', async () => {
    const { endpoint, message } = await setup(statuses(500));
    await deliver(QUEUE, [message]);
    expect(await summaryOf(shop, endpoint.id)).toMatchObject({ failed_attempts: 1 });
    expect((await call('DELETE', `/api/webhooks/${endpoint.id}`, { key: shop.secretKey })).status).toBe(200);
    expect(await env.DB.prepare('SELECT COUNT(*) AS n FROM webhook_transaction_event_health WHERE endpoint_id = ?1').bind(endpoint.id).first<{ n: number }>()).toEqual({ n: 0 });
  });

  it('a dead-lettered event (this Worker kept failing on it) is given up and counted; a malformed message is dropped', async () => {
    const { hook, endpoint, message } = await setup();
    const dead = await deliver(`${QUEUE}-dlq`, [message]);
    expect(dead.explicitAcks).toHaveLength(1);
    expect(hook.received).toEqual([]);
    expect(await summaryOf(shop, endpoint.id)).toMatchObject({ abandoned_events: 1, last_failure: { error: 'could not be attempted after repeated internal errors' } });
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const malformed = await deliver(QUEUE, [{ endpointId: endpoint.id }]);
    expect(malformed.explicitAcks).toHaveLength(1);
    expect(errors.mock.calls.some(([line]) => String(line).includes('transaction_event_message_malformed'))).toBe(true);
  });

  it('on the production schedule, retries wait 30 s, 2 min, … (±20 %), at most half a day, and end after the 8th attempt', async () => {
    const { endpoint, message } = await setup();
    const found = (await findTransactionEventEndpoints(env.DB, [endpoint.id])).get(endpoint.id);
    const deps = { ...webhookDeps(env), config: { ...webhookConfig(env), retryDelaysSeconds: [30, 120, 600, 3_600, 10_800, 21_600, 43_200] } };
    deps.fetch = async () => new Response(null, { status: 503 });
    deps.random = () => 0.9999999;
    const delays: (number | string)[] = [];
    for (let attempt = 1; attempt <= 8; attempt++) {
      const outcome = await attemptTransactionEvent(deps, found, message, attempt, 'whq_test', 21);
      delays.push(outcome.result === 'retry' ? outcome.delaySeconds : outcome.result);
    }
    expect(delays).toEqual([36, 144, 720, 4_320, 12_960, 25_920, 43_200, 'abandoned']);
  });
});
