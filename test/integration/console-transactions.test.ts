/**
 * The console's Transactions routes (issue 33): search, a transaction's lifecycle and exports with
 * the console session cookie; the CSRF token and Origin on POST; nothing without a session; another
 * merchant's transaction and export are 404s.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { transactionExport } from '../../src/services/search/exports';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';

const ORIGIN = 'http://binbatch.test';

interface Session {
  cookie: string;
  csrf: string;
}

async function signIn(merchant: TestMerchant): Promise<Session> {
  const response = await call('POST', '/console/session', { body: { api_key: merchant.secretKey }, headers: { Origin: ORIGIN } });
  expect(response.status).toBe(201);
  const { data } = await response.json<{ data: { csrf_token: string } }>();
  return { cookie: (response.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '', csrf: data.csrf_token };
}

function post(session: Session, path: string, body: unknown, headers: Record<string, string> = { 'X-CSRF-Token': session.csrf, Origin: ORIGIN }): Promise<Response> {
  return call('POST', path, { body, headers: { Cookie: session.cookie, ...headers } });
}

async function create(merchant: TestMerchant, body: { [k: string]: unknown }): Promise<{ id: string }> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { cc_number: '4111111111111111', cc_expiration: '12/30', ...body } });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<{ id: string }>>()).data;
}

describe('the console\'s Transactions routes', () => {
  it('search with the session; a POST needs the CSRF token from this origin; none without a session', async () => {
    const shop = await createMerchant({ name: 'Console Search Shop' });
    const session = await signIn(shop);
    const tx = await create(shop, { transaction_type: 'sale', amount: 1234, order_id: 'CON1' });
    const found = await post(session, '/console/transactions/search', { order_id: { operator: '=', value: 'CON1' } });
    expect(found.status).toBe(200);
    expect((await found.json<{ data: { id: string }[]; total_count: number }>()).data.map((r) => r.id)).toEqual([tx.id]);
    expect((await post(session, '/console/transactions/search', {}, { Origin: ORIGIN })).status).toBe(403);
    expect((await post(session, '/console/transactions/search', {}, { 'X-CSRF-Token': session.csrf, Origin: 'https://evil.example' })).status).toBe(403);
    expect((await call('POST', '/console/transactions/search', { body: {} })).status).toBe(401);
    // The API key is not a console credential.
    expect((await call('POST', '/console/transactions/search', { key: shop.secretKey, body: {} })).status).toBe(401);
  });

  it("a transaction's lifecycle: created, captured, settled, refunded, in order, with its refunds", async () => {
    const shop = await createMerchant({ name: 'Console Lifecycle Shop' });
    const session = await signIn(shop);
    const auth = await create(shop, { transaction_type: 'authorize', amount: 5000 });
    expect((await call('POST', `/api/transaction/${auth.id}/capture`, { key: shop.secretKey, body: { amount: 4000 } })).status).toBe(200);
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    for (const amount of [1000, 303, 500]) expect((await call('POST', `/api/transaction/${auth.id}/refund`, { key: shop.secretKey, body: { amount } })).status).toBe(201);
    const response = await call('GET', `/console/transactions/${auth.id}`, { headers: { Cookie: session.cookie } });
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<{ record: { status: string; amount_refunded: number }; refunds: { id: string; status: string }[]; events: { kind: string; amount: number; reference: string | null; outcome: string | null }[] }>>();
    expect(data.record).toMatchObject({ status: 'partially_refunded', amount_refunded: 1500 });
    // The declined refund (sandbox amount 303) is one of its refunds too.
    expect(data.refunds.map((r) => r.status)).toEqual(['pending_settlement', 'declined', 'pending_settlement']);
    expect(data.events.map((e) => [e.kind, e.amount, e.outcome])).toEqual([
      ['created', 5000, 'approved'],
      ['captured', 4000, null],
      ['settled', 4000, null],
      ['refunded', 1000, 'pending_settlement'],
      ['refunded', 303, 'declined'],
      ['refunded', 500, 'pending_settlement'],
    ]);
    expect(data.events[2]?.reference).toMatch(/^stl_/);
    const other = await signIn(await createMerchant({ name: 'Console Other Shop' }));
    expect((await call('GET', `/console/transactions/${auth.id}`, { headers: { Cookie: other.cookie } })).status).toBe(404);
  });

  it('an export started from the console, its progress and its CSV; another merchant\'s is a 404', async () => {
    const shop = await createMerchant({ name: 'Console Export Shop' });
    const session = await signIn(shop);
    await create(shop, { transaction_type: 'sale', amount: 2000, order_id: 'CEX1' });
    const started = await post(session, '/console/transactions/export', { order_id: { operator: '=', value: 'CEX1' } });
    expect(started.status).toBe(202);
    const id = (await started.json<Envelope<{ id: string }>>()).data.id;
    while ((await transactionExport(env, id).run(new Date().toISOString())).export?.status === 'running');
    const progress = await call('GET', `/console/transactions/export/${id}`, { headers: { Cookie: session.cookie } });
    expect((await progress.json<Envelope<{ status: string; rows: number }>>()).data).toMatchObject({ status: 'completed', rows: 1 });
    const download = await call('GET', `/console/transactions/export/${id}/download`, { headers: { Cookie: session.cookie } });
    expect(download.status).toBe(200);
    expect((await download.text()).split('\n').filter(Boolean)).toHaveLength(2);
    const other = await signIn(await createMerchant({ name: 'Console Export Other' }));
    expect((await call('GET', `/console/transactions/export/${id}`, { headers: { Cookie: other.cookie } })).status).toBe(404);
    expect((await call('GET', `/console/transactions/export/${id}/download`, { headers: { Cookie: other.cookie } })).status).toBe(404);
  });
});
