/**
 * The request log is the only place a request's URL is logged (wrangler.toml turns the platform's
 * invocation logs off): a card number typed into a path or a query reaches it masked, in every
 * spelling, encoded or not; and a 404 that quotes the path masks it too.
 */
import { env } from 'cloudflare:test';
import { Hono } from 'hono';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../src/env';
import { requestLog } from '../../src/middleware/request-log';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_SPELLINGS } from '../helpers/card-spellings';
import { captureConsole, describeFindings, findSecrets } from '../helpers/leak-scan';

const SECRETS = {
  cardNumbers: ['4111111111111111', '5555555555554444', '378282246310005', '6011000990139424', '4000056655665556'],
  cvcs: [],
};

interface RequestLine {
  event: string;
  request_id: string;
  method: string;
  path: string;
  query?: string;
  status: number;
  duration_ms: number;
}

function requestLines(lines: string[]): RequestLine[] {
  return lines
    .map((line) => line.replace(/^console\.\w+: /, ''))
    .filter((line) => line.includes('"event":"request"'))
    .map((line) => JSON.parse(line) as RequestLine);
}

describe('request log', () => {
  let shop: TestMerchant;
  let consoleCapture: ReturnType<typeof captureConsole>;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Request Log Shop' });
  });
  beforeEach(() => {
    consoleCapture = captureConsole();
  });
  afterEach(() => consoleCapture.restore());

  it('logs each request once: method, path, query, status, request id', async () => {
    const response = await call('GET', '/api/filebatch?limit=2&offset=0', { key: shop.secretKey });
    expect(response.status).toBe(200);
    const [line, ...others] = requestLines(consoleCapture.lines);
    expect(others).toEqual([]);
    expect(line).toMatchObject({ method: 'GET', path: '/api/filebatch', query: 'limit=2&offset=0', status: 200 });
    expect(line?.request_id).toBe(response.headers.get('X-Request-Id'));
  });

  it.each(CARD_SPELLINGS)('masks %j in a path, raw or percent-encoded, and in a query', async (spelling) => {
    const said: string[] = [];
    for (const path of [
      `/api/vault/customer/${encodeURIComponent(spelling)}`,
      `/api/vault/customer/${[...new TextEncoder().encode(spelling)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('')}`,
      `/api/filebatch?limit=${encodeURIComponent(spelling)}`,
      `/api/filebatch?note=${spelling.replace(/ /g, '+')}`,
      `/api/no-such-thing/${encodeURIComponent(spelling)}`,
    ]) {
      said.push(await (await call('GET', path, { key: shop.secretKey })).text());
    }
    const lines = requestLines(consoleCapture.lines);
    expect(lines).toHaveLength(5);
    // Refused ids and limits (400), an unknown parameter ignored by the listing (200), no route (404).
    expect(lines.map((line) => line.status)).toEqual([400, 400, 400, 200, 404]);
    expect(lines[0]?.path).toMatch(/^\/api\/vault\/customer\/.*\*{5}/);
    const findings = [
      ...consoleCapture.lines.flatMap((line, i) => findSecrets(line, SECRETS, `console line ${i}`)),
      ...said.flatMap((text, i) => findSecrets(text, SECRETS, `response ${i}`)),
    ];
    expect(findings, describeFindings(findings)).toEqual([]);
  });

  it('keeps look-alikes readable: a date and an order id in a query are logged as sent', async () => {
    await call('GET', '/api/filebatch?from=2026-11-21&order=ORD-2026-000123-45', { key: shop.secretKey });
    expect(requestLines(consoleCapture.lines)[0]?.query).toBe('from=2026-11-21&order=ORD-2026-000123-45');
  });

  it('with REQUEST_LOG=errors, logs only answers of 400 and above (masked the same way)', async () => {
    const app = new Hono<AppEnv>().use(requestLog);
    app.get('/ok', (c) => c.text('ok'));
    app.get('/refused/:id', (c) => c.text('refused', 400));
    const quiet = { ...env, REQUEST_LOG: 'errors' };
    expect((await app.request('/ok', {}, quiet)).status).toBe(200);
    expect((await app.request('/refused/4111-1111-1111-1111', {}, quiet)).status).toBe(400);
    expect((await app.request('/missing', {}, quiet)).status).toBe(404);
    const lines = requestLines(consoleCapture.lines);
    expect(lines.map((line) => [line.path.includes('4111-1111-1111-1111'), line.status])).toEqual([[false, 400], [false, 404]]);
    // wrangler.toml's value logs every request.
    expect(env.REQUEST_LOG).toBe('all');
    await app.request('/ok', {}, env);
    expect(requestLines(consoleCapture.lines).map((line) => line.status)).toEqual([400, 404, 200]);
  });
});
