/**
 * The batch console's server side: the API key exchanged for a session cookie, the CSRF and Origin
 * checks on state-changing requests, sign-out ending the session server-side, and the batch
 * routes the page calls (upload, list, summary, download, and the progress stream by cookie).
 */
import { exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { app } from '../../src/app';
import { admin, call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, parseResult, saleRows, waitForStatus } from '../helpers/batch';
import { assertDocumentedAnswer } from '../helpers/contract';
import { expectFailedEnvelope as failedEnvelope } from '../helpers/fuzz';

async function expectFailedEnvelope(response: Response, status: number, msg: string): Promise<void> {
  expect(response.status).toBe(status);
  expect((await failedEnvelope(response)).msg).toBe(msg);
}

const ORIGIN = 'http://binbatch.test';

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Console Shop' });
});

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}

async function signIn(key: string, origin: string | null = ORIGIN): Promise<Session> {
  const response = await call('POST', '/console/session', { body: { api_key: key }, headers: origin ? { Origin: origin } : {} });
  expect(response.status).toBe(201);
  const setCookie = response.headers.get('Set-Cookie') ?? '';
  const { data } = await response.json<{ data: { csrf_token: string; merchant_name: string } }>();
  return { cookie: setCookie.split(';')[0] ?? '', csrf: data.csrf_token, setCookie };
}

function upload(session: Session, text: string, headers: Record<string, string> = { 'X-CSRF-Token': session.csrf, Origin: ORIGIN }): Promise<Response> {
  const form = new FormData();
  form.append('file', new File([text], 'console.csv', { type: 'text/csv' }));
  return call('POST', '/console/batches', { body: form, headers: { Cookie: session.cookie, ...headers } });
}

describe('signing in', () => {
  it('exchanges a secret key for an HttpOnly, SameSite=Strict, Secure session cookie that does not carry the key', async () => {
    const session = await signIn(shop.secretKey);
    expect(session.setCookie).toMatch(/^binbatch_console=[A-Za-z0-9_-]{43};/);
    expect(session.setCookie).toMatch(/; HttpOnly/);
    expect(session.setCookie).toMatch(/; SameSite=Strict/);
    expect(session.setCookie).toMatch(/; Secure/);
    expect(session.setCookie).toMatch(/; Path=\//);
    expect(session.setCookie).not.toContain(shop.secretKey);
    expect(session.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const current = await call('GET', '/console/session', { headers: { Cookie: session.cookie } });
    expect(current.status).toBe(200);
    expect((await current.json<{ data: unknown }>()).data).toMatchObject({ merchant_name: 'Console Shop', csrf_token: session.csrf });
  });

  it('leaves Secure off for plain http on localhost only (wrangler dev)', async () => {
    const request = new Request('http://127.0.0.1:8787/console/session', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: 'http://127.0.0.1:8787' },
      body: JSON.stringify({ api_key: shop.secretKey }),
    });
    const response = await exports.default.fetch(request);
    await assertDocumentedAnswer('POST', '/console/session', response);
    expect(response.status).toBe(201);
    expect(response.headers.get('Set-Cookie')).toMatch(/HttpOnly/);
    expect(response.headers.get('Set-Cookie')).not.toMatch(/Secure/);
  });

  it('refuses a wrong key, a public key, an empty key and a sign-in posted by another site', async () => {
    const wrong = await call('POST', '/console/session', { body: { api_key: 'api_notAKey' }, headers: { Origin: ORIGIN } });
    await expectFailedEnvelope(wrong, 401, 'invalid or revoked API key');
    expect(wrong.headers.get('Set-Cookie')).toBeNull();
    const pub = await call('POST', '/console/session', { body: { api_key: shop.publicKey }, headers: { Origin: ORIGIN } });
    await expectFailedEnvelope(pub, 401, 'the console needs the secret API key (api_…), not the public one');
    await expectFailedEnvelope(await call('POST', '/console/session', { body: { api_key: '' } }), 400, 'api_key: enter your secret API key (api_…)');
    const foreign = await call('POST', '/console/session', { body: { api_key: shop.secretKey }, headers: { Origin: 'https://evil.example' } });
    await expectFailedEnvelope(foreign, 403, 'the console accepts requests from its own origin only, not from https://evil.example');
    expect(foreign.headers.get('Set-Cookie')).toBeNull();
  });

  it('answers 401 without a session, or with a cookie it never issued', async () => {
    await expectFailedEnvelope(await call('GET', '/console/session'), 401, 'not signed in to the console, or the session ended: sign in with your secret API key');
    expect((await call('GET', '/console/batches', { headers: { Cookie: 'binbatch_console=forged' } })).status).toBe(401);
    // The API key itself is not a console credential.
    expect((await call('GET', '/console/batches', { key: shop.secretKey })).status).toBe(401);
  });
});

// Every console route but sign-in needs the session (test/security/access.test.ts covers the key-authenticated routes).
const SESSION_ROUTES = app.routes
  .filter((route) => route.method !== 'ALL' && route.path.startsWith('/console/') && !(route.method === 'POST' && route.path === '/console/session'))
  .map((route) => ({ method: route.method, path: route.path.replace(':id', 'bat_' + '0'.repeat(20)) }));

describe.each(SESSION_ROUTES)('$method $path', ({ method, path }) => {
  it('answers 401 with no session, a forged cookie, or the API key itself', async () => {
    for (const options of [{}, { headers: { Cookie: 'binbatch_console=forged' } }, { key: shop.secretKey }]) {
      const response = await call(method, path, { ...options, headers: { Origin: ORIGIN, ...('headers' in options ? options.headers : {}) } });
      expect(response.status).toBe(401);
      await failedEnvelope(response);
    }
  });
});

describe('CSRF', () => {
  it('refuses an upload without the CSRF token, with a wrong one, another session\'s, or from another origin', async () => {
    const session = await signIn(shop.secretKey);
    const other = await signIn(shop.secretKey);
    const file = csv(CARD_HEADER, saleRows(2));
    const message = 'missing or wrong X-CSRF-Token header: send the csrf_token the console session answered';
    await expectFailedEnvelope(await upload(session, file, { Origin: ORIGIN }), 403, message);
    await expectFailedEnvelope(await upload(session, file, { 'X-CSRF-Token': 'guess', Origin: ORIGIN }), 403, message);
    await expectFailedEnvelope(await upload(session, file, { 'X-CSRF-Token': other.csrf, Origin: ORIGIN }), 403, message);
    await expectFailedEnvelope(
      await upload(session, file, { 'X-CSRF-Token': session.csrf, Origin: 'https://evil.example' }),
      403,
      'the console accepts requests from its own origin only, not from https://evil.example',
    );
    const listed = await call('GET', '/console/batches', { headers: { Cookie: session.cookie } });
    expect((await listed.json<{ total_count: number }>()).total_count).toBe(0);
    expect((await upload(session, file)).status).toBe(200);
  });

  it('refuses a sign-out without the token, and the session goes on working', async () => {
    const session = await signIn(shop.secretKey);
    await expectFailedEnvelope(
      await call('DELETE', '/console/session', { headers: { Cookie: session.cookie } }),
      403,
      'missing or wrong X-CSRF-Token header: send the csrf_token the console session answered',
    );
    expect((await call('GET', '/console/session', { headers: { Cookie: session.cookie } })).status).toBe(200);
  });
});

describe('signing out and revocation', () => {
  it('deletes the session server-side: the old cookie opens neither the console routes nor the progress stream', async () => {
    const session = await signIn(shop.secretKey);
    const uploaded = await upload(session, csv(CARD_HEADER, saleRows(1)));
    const { data } = await uploaded.json<{ data: { id: string } }>();
    const out = await call('DELETE', '/console/session', { headers: { Cookie: session.cookie, 'X-CSRF-Token': session.csrf, Origin: ORIGIN } });
    expect(out.status).toBe(200);
    expect(out.headers.get('Set-Cookie')).toMatch(/^binbatch_console=; Max-Age=0/);
    expect((await call('GET', '/console/session', { headers: { Cookie: session.cookie } })).status).toBe(401);
    expect((await call('GET', '/console/batches', { headers: { Cookie: session.cookie } })).status).toBe(401);
    expect((await call('GET', `/api/filebatch/${data.id}/events`, { headers: { Cookie: session.cookie } })).status).toBe(401);
  });

  it('ends every session of a key when the key is revoked', async () => {
    const merchant = await createMerchant({ name: 'Revoking Shop' });
    const created = await admin('POST', `/admin/merchants/${merchant.id}/keys`, { type: 'secret' });
    const { data: key } = await created.json<{ data: { id: string; key: string } }>();
    const session = await signIn(key.key);
    expect((await call('GET', '/console/batches', { headers: { Cookie: session.cookie } })).status).toBe(200);
    expect((await admin('DELETE', `/admin/keys/${key.id}`)).status).toBe(200);
    expect((await call('GET', '/console/batches', { headers: { Cookie: session.cookie } })).status).toBe(401);
  });
});

describe('batches through the console', () => {
  it('shows the line of a structurally bad file', async () => {
    const session = await signIn(shop.secretKey);
    const bad = `${csv(CARD_HEADER, saleRows(1))}"sale","1000"\n`;
    const response = await upload(session, bad);
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toMatch(/^line 3: /);
  });

  it(
    'runs a batch: the stream by cookie, the summary counted server-side with lines and reasons, the download',
    async () => {
      const merchant = await createMerchant({ name: 'Summary Shop' });
      const session = await signIn(merchant.secretKey);
      const rows = [
        ...saleRows(3),
        ['sale', '300', '4111111111111111', '12/30', 'declined1'],
        ['sale', '1000', '4111111111111112', '12/30', 'badluhn'],
        ['authorize', '500', '4111111111111111', '12/30', 'auth1'],
      ];
      const uploaded = await upload(session, csv(CARD_HEADER, rows));
      expect(uploaded.status).toBe(200);
      const { data } = await uploaded.json<{ data: { id: string } }>();

      const early = await call('GET', `/console/batches/${data.id}/summary`, { headers: { Cookie: session.cookie } });
      expect([200, 409]).toContain(early.status);

      // The page's EventSource: same-origin, the cookie only; the stream ends after `completed`.
      const stream = await call('GET', `/api/filebatch/${data.id}/events`, { headers: { Cookie: session.cookie } });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('Access-Control-Allow-Origin')).toBeNull();
      const events = await stream.text();
      expect(events).toContain('"status":"completed"');
      await waitForStatus(merchant.secretKey, data.id, 'completed');

      const summary = await call('GET', `/console/batches/${data.id}/summary`, { headers: { Cookie: session.cookie } });
      expect(summary.status).toBe(200);
      const { data: counts } = await summary.json<{ data: Record<string, unknown> }>();
      expect(counts).toMatchObject({ rows: 6, approved: 4, authorized: 1, declined: 1, error: 1 });
      expect(counts.first_refused).toEqual([
        { line: 5, response: 'declined', response_code: 300, reason: 'DECLINED BY GATEWAY RULES' },
        { line: 6, response: 'error', response_code: 400, reason: expect.stringMatching(/cc_number/) },
      ]);

      const download = await call('GET', `/console/batches/${data.id}/download`, { headers: { Cookie: session.cookie } });
      expect(download.status).toBe(200);
      expect(download.headers.get('Content-Disposition')).toContain('console-results.csv');
      const result = parseResult(await download.text());
      expect(result.header[0]).toBe('id');
      expect(result.rows).toHaveLength(6);

      const list = await call('GET', '/console/batches?limit=1&offset=0', { headers: { Cookie: session.cookie } });
      expect(await list.json()).toMatchObject({ total_count: 1, limit: 1, data: [{ id: data.id, status: 'completed', num_lines: 6, processed_lines: 6 }] });

      // Another merchant's session sees none of it.
      const stranger = await signIn(shop.secretKey);
      expect((await call('GET', `/console/batches/${data.id}/summary`, { headers: { Cookie: stranger.cookie } })).status).toBe(404);
      expect((await call('GET', `/console/batches/${data.id}/download`, { headers: { Cookie: stranger.cookie } })).status).toBe(404);
      expect((await call('GET', `/api/filebatch/${data.id}/events`, { headers: { Cookie: stranger.cookie } })).status).toBe(404);
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('the console page', () => {
  it('is served with a strict CSP that allows nothing from another origin and no framing', async () => {
    // Pages are served from static assets, which the vitest pool runs without; the headers come from the route.
    const { CONSOLE_CSP } = await import('../../src/routes/pages');
    expect(CONSOLE_CSP).toContain("default-src 'none'");
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("connect-src 'self'");
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|https?:/);
  });
});
