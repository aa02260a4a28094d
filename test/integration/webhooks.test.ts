/**
 * The webhook endpoints API: creation (secret shown once, stored sealed), listing, deletion,
 * rotation, the limit of 10, the URL rules with the production setting (WEBHOOK_ALLOW_LOCAL is
 * "false" in the tests, as in wrangler.toml), and isolation between merchants.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, saleRows, uploadOk, waitForStatus } from '../helpers/batch';
import { expectFailedEnvelope } from '../helpers/fuzz';
import { createEndpoint, deliveries, receiver, type CreatedEndpoint, type Delivery } from '../helpers/webhooks';

let owner: TestMerchant;
let intruder: TestMerchant;
beforeAll(async () => {
  owner = await createMerchant({ name: 'Hook Owner' });
  intruder = await createMerchant({ name: 'Hook Intruder' });
});

async function listed(key: string): Promise<Record<string, unknown>[]> {
  const response = await call('GET', '/api/webhooks', { key });
  expect(response.status).toBe(200);
  return (await response.json<{ data: Record<string, unknown>[] }>()).data;
}

async function remove(key: string, id: string): Promise<Response> {
  return call('DELETE', `/api/webhooks/${id}`, { key });
}

describe('POST /api/webhooks', () => {
  it('answers 201 with the endpoint and its secret, once; the list never shows a secret', async () => {
    const response = await call('POST', '/api/webhooks', { key: owner.secretKey, body: { url: 'https://hooks.example.test/a' } });
    expect(response.status).toBe(201);
    const body = await response.json<{ status: string; msg: string; data: CreatedEndpoint }>();
    expect(body.status).toBe('success');
    expect(body.data).toEqual({
      id: expect.stringMatching(/^whe_[a-z0-9]{20}$/),
      url: 'https://hooks.example.test/a',
      events: ['batch.completed', 'batch.failed', 'settlement.completed', 'export.completed'], // every event type when none are named
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      previous_secret_expires_at: null,
      // How its transaction_create events fare (issue 34): null, it does not take them.
      transaction_events: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
    });

    const list = await listed(owner.secretKey);
    const shown = list.find((endpoint) => endpoint.id === body.data.id);
    expect(shown).toEqual({ ...body.data, secret: undefined });
    expect(JSON.stringify(list)).not.toContain('whsec_');
    // Stored sealed: the secret is in no D1 column in the clear.
    const row = await env.DB.prepare('SELECT * FROM webhook_endpoints WHERE id = ?1').bind(body.data.id).first();
    expect(JSON.stringify(row)).not.toContain(body.data.secret);
    expect(JSON.stringify(row)).not.toContain(body.data.secret.slice(6));
    expect(String(row?.sealed_secret)).toMatch(/^v1\./);
    expect((await remove(owner.secretKey, body.data.id)).status).toBe(200);
  });

  it('keeps the named events, once each, in the documented order', async () => {
    const endpoint = await createEndpoint(owner.secretKey, {
      url: 'https://hooks.example.test/b',
      events: ['batch.failed', 'batch.completed', 'batch.failed'],
    });
    expect(endpoint.events).toEqual(['batch.completed', 'batch.failed']);
    const failedOnly = await createEndpoint(owner.secretKey, { url: 'https://hooks.example.test/c', events: ['batch.failed'] });
    expect(failedOnly.events).toEqual(['batch.failed']);
    for (const e of [endpoint, failedOnly]) expect((await remove(owner.secretKey, e.id)).status).toBe(200);
  });

  it.each([
    [{}, 'url: must be a string (an https:// URL)'],
    [{ url: 'https://hooks.example.test/x', events: [] }, 'events: must name at least one event type'],
    [{ url: 'https://hooks.example.test/x', events: ['batch.started'] }, 'events.0: must be one of batch.completed, batch.failed'],
    [{ url: 'https://hooks.example.test/x', secret: 'mine' }, 'secret: unknown field'],
  ])('refuses a malformed body %j with a 400 naming the field', async (body, message) => {
    const response = await call('POST', '/api/webhooks', { key: owner.secretKey, body });
    expect(response.status).toBe(400);
    expect((await expectFailedEnvelope(response)).msg).toContain(message);
  });

  it('allows at most 10 endpoints per merchant: the 11th is a 409 saying so; after a deletion there is room again', async () => {
    const shop = await createMerchant({ name: 'Many Hooks' });
    const made: CreatedEndpoint[] = [];
    for (let i = 0; i < 10; i++) made.push(await createEndpoint(shop.secretKey, { url: `https://hooks.example.test/many/${i}` }));
    const eleventh = await call('POST', '/api/webhooks', { key: shop.secretKey, body: { url: 'https://hooks.example.test/many/10' } });
    expect(eleventh.status).toBe(409);
    expect((await expectFailedEnvelope(eleventh)).msg).toBe(
      'a merchant has at most 10 webhook endpoints; delete one before adding another',
    );
    expect(await listed(shop.secretKey)).toHaveLength(10);
    // The limit is per merchant: another merchant still adds its own.
    const other = await createEndpoint(owner.secretKey, { url: 'https://hooks.example.test/other' });
    expect((await remove(shop.secretKey, made[0]?.id ?? '')).status).toBe(200);
    await createEndpoint(shop.secretKey, { url: 'https://hooks.example.test/many/again' });
    expect(await listed(shop.secretKey)).toHaveLength(10);
    expect((await remove(owner.secretKey, other.id)).status).toBe(200);
  });
});

describe('URL rules (production setting)', () => {
  const refused: [string, string][] = [
    ['http://hooks.example.test/x', 'url: must use https:// (http://localhost is allowed only in local development, WEBHOOK_ALLOW_LOCAL=true)'],
    ['http://localhost:8080/hook', 'url: must use https://'],
    ['https://localhost/hook', 'url: must be a public host name (localhost is local)'],
    ['https://127.0.0.1/hook', 'url: must not point to a private, loopback, link-local or reserved address (127.0.0.1)'],
    ['https://10.1.2.3/hook', 'url: must not point to a private, loopback, link-local or reserved address (10.1.2.3)'],
    ['https://172.20.0.1/hook', 'private, loopback, link-local or reserved address (172.20.0.1)'],
    ['https://192.168.1.10/hook', 'private, loopback, link-local or reserved address (192.168.1.10)'],
    ['https://169.254.169.254/latest/meta-data', 'private, loopback, link-local or reserved address (169.254.169.254)'],
    ['https://100.64.0.1/', 'private, loopback, link-local or reserved address (100.64.0.1)'],
    ['https://0.0.0.0/', 'private, loopback, link-local or reserved address (0.0.0.0)'],
    // Other spellings of 127.0.0.1 are normalised by the URL parser before the check.
    ['https://2130706433/', 'private, loopback, link-local or reserved address (127.0.0.1)'],
    ['https://0x7f.1/', 'private, loopback, link-local or reserved address (127.0.0.1)'],
    ['https://[::1]/', 'private, loopback, link-local or reserved address ([::1])'],
    ['https://[fd00::1]/', 'private, loopback, link-local or reserved address ([fd00::1])'],
    ['https://[fe80::1]/', 'private, loopback, link-local or reserved address ([fe80::1])'],
    ['https://[::ffff:10.0.0.1]/', 'private, loopback, link-local or reserved address ([::ffff:a00:1])'],
    ['https://metadata.google.internal/', 'must be a public host name (metadata.google.internal is local)'],
    ['https://printer.local/', 'must be a public host name (printer.local is local)'],
    ['https://intranet/', 'must be a public host name with a domain (intranet has none)'],
    ['https://hooks.example.test:8443/x', 'url: must use the default https port (443)'],
    ['https://user:pass@hooks.example.test/x', 'url: must not contain a user name or password'],
    ['ftp://hooks.example.test/x', 'url: must use https://'],
    ['hooks.example.test/x', 'url: must be an absolute URL'],
    [`https://hooks.example.test/${'a'.repeat(2100)}`, 'url: must be at most 2048 characters'],
  ];
  const cases = refused.map(([url, message]) => [url.length > 80 ? `${url.slice(0, 60)}… (${url.length} characters)` : url, url, message]);
  it.each(cases)('%s: 400 naming the rule', async (_label, url, message) => {
    const response = await call('POST', '/api/webhooks', { key: owner.secretKey, body: { url } });
    expect(response.status).toBe(400);
    const body = await expectFailedEnvelope(response);
    expect(body.msg).toContain(message);
    expect(body.msg.startsWith('url: ')).toBe(true);
  });

  it('accepts public https URLs, IP literals included, with the default port written out or not', async () => {
    for (const url of ['https://hooks.example.test:443/x', 'https://93.184.216.34/hook', 'https://[2606:4700::1111]/hook']) {
      const response = await call('POST', '/api/webhooks', { key: owner.secretKey, body: { url } });
      expect(response.status, url).toBe(201);
      const { data } = await response.json<{ data: CreatedEndpoint }>();
      expect(data.url).toBe(new URL(url).href);
      expect((await remove(owner.secretKey, data.id)).status).toBe(200);
    }
  });
});

describe('DELETE and rotate-secret', () => {
  it('deletes an endpoint (then 404), and rotation answers a new secret with a 24-hour overlap', async () => {
    const endpoint = await createEndpoint(owner.secretKey, { url: 'https://hooks.example.test/rotate' });
    const rotated = await call('POST', `/api/webhooks/${endpoint.id}/rotate-secret`, { key: owner.secretKey });
    expect(rotated.status).toBe(200);
    const { data } = await rotated.json<{ data: CreatedEndpoint }>();
    expect(data.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(data.secret).not.toBe(endpoint.secret);
    expect(data.previous_secret_expires_at).not.toBeNull();
    const shown = (await listed(owner.secretKey)).find((e) => e.id === endpoint.id);
    expect(shown?.previous_secret_expires_at).toBe(data.previous_secret_expires_at);

    const deleted = await remove(owner.secretKey, endpoint.id);
    expect(deleted.status).toBe(200);
    expect((await deleted.json<{ data: unknown }>()).data).toEqual({ id: endpoint.id, deleted: true });
    expect((await remove(owner.secretKey, endpoint.id)).status).toBe(404);
    expect((await call('POST', `/api/webhooks/${endpoint.id}/rotate-secret`, { key: owner.secretKey })).status).toBe(404);
    expect((await listed(owner.secretKey)).map((e) => e.id)).not.toContain(endpoint.id);
  });

  it('refuses malformed ids with a 400 naming them', async () => {
    const response = await call('DELETE', '/api/webhooks/not-an-id', { key: owner.secretKey });
    expect(response.status).toBe(400);
    expect((await expectFailedEnvelope(response)).msg).toBe('id: malformed webhook endpoint id');
    const delivery = await call('POST', '/api/webhooks/whe_abc/deliveries/nope/redeliver', { key: owner.secretKey });
    expect(delivery.status).toBe(400);
    expect((await expectFailedEnvelope(delivery)).msg).toBe('delivery_id: malformed delivery id');
  });
});

describe('another merchant', () => {
  it(
    "cannot list, rotate, delete or redeliver the owner's endpoint and deliveries: 404, as if they did not exist",
    async () => {
      const hook = receiver();
      const endpoint = await createEndpoint(owner.secretKey, { url: hook.url });
      const id = await uploadOk(owner.secretKey, csv(CARD_HEADER, saleRows(1)), 'isolation.csv');
      await waitForStatus(owner.secretKey, id, 'completed');
      const [delivery] = await vi.waitFor(async () => {
        const list = await deliveries(owner.secretKey, endpoint.id);
        if (list[0]?.status !== 'delivered') throw new Error('not delivered yet');
        return list;
      }, { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 20 });
      if (!delivery) throw new Error('no delivery');

      expect((await listed(intruder.secretKey)).map((e) => e.id)).not.toContain(endpoint.id);
      const attempts: [string, string][] = [
        ['GET', `/api/webhooks/${endpoint.id}/deliveries`],
        ['POST', `/api/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`],
        ['POST', `/api/webhooks/${endpoint.id}/rotate-secret`],
        ['DELETE', `/api/webhooks/${endpoint.id}`],
      ];
      for (const [method, path] of attempts) {
        const response = await call(method, path, { key: intruder.secretKey });
        expect(response.status, `${method} ${path}`).toBe(404);
        const body = await expectFailedEnvelope(response);
        expect(body.msg).toMatch(/^(webhook endpoint|delivery) not found$/);
      }
      // The intruder's own endpoint does not open the owner's delivery either.
      const own = await createEndpoint(intruder.secretKey, { url: 'https://hooks.example.test/intruder' });
      const crossed = await call('POST', `/api/webhooks/${own.id}/deliveries/${delivery.id}/redeliver`, { key: intruder.secretKey });
      expect(crossed.status).toBe(404);
      await crossed.body?.cancel();

      // Nothing changed for the owner: same secret signs, one delivery, endpoint still there.
      expect(hook.received).toHaveLength(1);
      const mine: Delivery[] = await deliveries(owner.secretKey, endpoint.id);
      expect(mine).toHaveLength(1);
      expect((await listed(owner.secretKey)).map((e) => e.id)).toContain(endpoint.id);
      const row = await env.DB.prepare('SELECT previous_secret_expires_at FROM webhook_endpoints WHERE id = ?1').bind(endpoint.id).first();
      expect(row?.previous_secret_expires_at).toBeNull();

      // A delivery still being retried is not redelivered (it has a schedule already): 409.
      await env.DB.prepare(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = '2099-01-01T00:00:00.000Z' WHERE id = ?1`)
        .bind(delivery.id)
        .run();
      const pending = await call('POST', `/api/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`, { key: owner.secretKey });
      expect(pending.status).toBe(409);
      expect((await expectFailedEnvelope(pending)).msg).toBe(
        'the delivery is still being retried; its next attempt is at 2099-01-01T00:00:00.000Z',
      );
      expect((await remove(owner.secretKey, endpoint.id)).status).toBe(200);
      expect((await remove(intruder.secretKey, own.id)).status).toBe(200);
    },
    QUEUE_TEST_TIMEOUT,
  );
});
