/**
 * What an integrating engineer meets first (issue 24): every JSON request body refuses an unknown
 * field with a 400 naming it (and the field it probably meant), a body of another media type is a
 * 415, and an oversized key is invalid rather than missing. The walks take their operations from
 * the OpenAPI document, so a new JSON route is covered without being named here.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi/document';
import { ADMIN_TOKEN, call, createMerchant, type TestMerchant } from '../helpers/api';
import { expectFailedEnvelope } from '../helpers/fuzz';

/**
 * The console's routes take requests from their own origin only (the tokenizer's, from no browser
 * but its frame); those behind the console's session get the shop's session cookie and CSRF token.
 */
let session: Record<string, string> = {};
const sameOrigin = (path: string): Record<string, string> => (path.startsWith('/console/') ? { Origin: 'http://binbatch.test', ...(path === '/console/session' ? {} : session) } : {});
let shop: TestMerchant;

beforeAll(async () => {
  shop = await createMerchant({ name: 'First Hour Shop' });
  const signIn = await call('POST', '/console/session', { body: { api_key: shop.secretKey }, headers: { Origin: 'http://binbatch.test' } });
  const { data } = await signIn.json<{ data: { csrf_token: string } }>();
  session = { Cookie: (signIn.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '', 'X-CSRF-Token': data.csrf_token };
});

/** Every documented operation that takes a JSON body, with a concrete path and the credential it takes. */
function jsonOperations(): { method: string; path: string; key: () => string | null }[] {
  const found: { method: string; path: string; key: () => string | null }[] = [];
  for (const [template, item] of Object.entries(openApiDocument().paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, { requestBody?: { content?: Record<string, unknown> }; security?: Record<string, unknown>[] }>)) {
      if (!operation.requestBody?.content?.['application/json']) continue;
      const schemes = (operation.security ?? [{ secretKey: [] }]).flatMap((requirement) => Object.keys(requirement));
      const key = schemes.includes('adminToken') ? () => ADMIN_TOKEN : schemes.includes('secretKey') ? () => shop.secretKey : () => null;
      // Path parameters get a well-formed id: the body is checked before the resource is looked up.
      found.push({ method: method.toUpperCase(), path: template.replace(/\{[^}]+\}/g, 'x1'), key });
    }
  }
  return found;
}

describe('every JSON request body', () => {
  it('is found in the document (the walk below is not empty)', () => {
    expect(jsonOperations().length).toBeGreaterThan(12);
  });

  it('refuses an unknown field with a 400 naming it', async () => {
    for (const { method, path, key } of jsonOperations()) {
      const response = await call(method, path, { key: key(), body: { zz_not_a_field: 1 }, headers: sameOrigin(path) });
      expect(response.status, `${method} ${path}`).toBe(400);
      const body = await expectFailedEnvelope(response);
      expect(body.msg, `${method} ${path}`).toContain('zz_not_a_field: unknown field');
      expect(body.errors, `${method} ${path}`).toContainEqual({ field: 'zz_not_a_field', msg: 'unknown field' });
    }
  });

  it('refuses a text/plain body with a 415', async () => {
    for (const { method, path, key } of jsonOperations()) {
      const response = await call(method, path, { key: key(), body: '{"name": "x"}', headers: { 'Content-Type': 'text/plain', ...sameOrigin(path) } });
      expect(response.status, `${method} ${path}`).toBe(415);
      expect((await expectFailedEnvelope(response)).msg).toBe('Content-Type must be application/json');
    }
  });
});

describe('an unknown field', () => {
  const lookup = (body: unknown) => call('POST', '/api/lookup/bin/protected', { key: shop.secretKey, body });

  it('in a lookup (`State`) is a 400 naming it and the field it probably meant', async () => {
    const response = await lookup({ bin: '411111', country: 'US', State: 'TX' });
    expect(response.status).toBe(400);
    const body = await expectFailedEnvelope(response);
    expect(body.msg).toBe('State: unknown field; did you mean state?');
    expect(body.errors).toEqual([{ field: 'State', msg: 'unknown field; did you mean state?' }]);
  });

  it('is named by its path when nested, with the field of that object it probably meant', async () => {
    const response = await call('POST', '/api/vault/customer', {
      key: shop.secretKey,
      body: { payment_method: { card: { numbr: '4111111111111111', expiration: '12/39' } } },
    });
    expect(response.status).toBe(400);
    expect((await expectFailedEnvelope(response)).errors).toContainEqual({ field: 'payment_method.card.numbr', msg: 'unknown field; did you mean number?' });
  });

  it('gets no suggestion when nothing is close, and every unknown field is listed', async () => {
    const response = await lookup({ bin: '411111', zip: '10001', Country: 'US' });
    expect((await expectFailedEnvelope(response)).errors).toEqual([
      { field: 'zip', msg: 'unknown field' },
      { field: 'Country', msg: 'unknown field; did you mean country?' },
    ]);
  });

  it('that is a card number is never quoted back, nor suggested for', async () => {
    const response = await lookup({ bin: '411111', '4111111111111111': 'x' });
    expect(response.status).toBe(400);
    const text = JSON.stringify(await expectFailedEnvelope(response));
    expect(text).not.toContain('4111111111111111');
    expect(text).toContain('(a card number): unknown field');
  });
});

describe('an oversized key', () => {
  it('(300 characters) was sent, so it is invalid, not missing: 401', async () => {
    const response = await call('POST', '/api/lookup/bin/protected', { key: `api_${'k'.repeat(296)}`, body: { bin: '424242' } });
    expect(response.status).toBe(401);
    expect((await expectFailedEnvelope(response)).msg).toBe('invalid or revoked API key');
  });

  it('on the admin API and the progress stream is refused the same way', async () => {
    const adminAnswer = await call('GET', '/admin/surcharge-rules', { key: 'a'.repeat(300) });
    expect(adminAnswer.status).toBe(401);
    expect((await expectFailedEnvelope(adminAnswer)).msg).toBe('missing or invalid admin token');
    const stream = await call('GET', '/api/filebatch/bat_x1/events', { key: `api_${'k'.repeat(296)}` });
    expect(stream.status).toBe(401);
    expect((await expectFailedEnvelope(stream)).msg).toMatch(/^invalid, revoked or expired credential/);
  });
});
