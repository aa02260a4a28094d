/**
 * POST /api/tokenizer/token from a browser: only the hosted frame (this service's origin) may ask,
 * and only for a parent page the merchant allowed. Servers (no Origin header) are not concerned.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type TestMerchant } from '../helpers/api';

const SELF = 'http://binbatch.test'; // the origin test/helpers/api.ts sends requests to
const CARD = { cc_number: '4111111111111111', cc_expiration: '12/39', cc_cvc: '123' };

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  [shop, other] = await Promise.all([createMerchant({ name: 'Framed Shop' }), createMerchant({ name: 'Other Shop' })]);
  await allow(shop, ['https://shop.example', 'http://localhost:8788']);
  await allow(other, ['https://other.example']);
});

async function allow(merchant: TestMerchant, origins: string[]): Promise<void> {
  const response = await admin('PATCH', `/admin/merchants/${merchant.id}`, { tokenizer_origins: origins });
  expect(response.status).toBe(200);
  await response.body?.cancel();
}

function fromBrowser(key: string, headers: Record<string, string>, body: unknown = CARD): Promise<Response> {
  return call('POST', '/api/tokenizer/token', { key, body, headers });
}

async function tokenCount(): Promise<number> {
  return (await env.TOKENS.list({ prefix: 'tok:' })).keys.length;
}

async function expectRefused(response: Response, message: string): Promise<void> {
  expect(response.status).toBe(403);
  const body = await response.json<{ status: string; msg: string }>();
  expect(body.status).toBe('failed');
  expect(body.msg).toBe(message);
}

describe('the token endpoint and the page around the frame', () => {
  it('tokenizes for the hosted frame of an allowed page', async () => {
    const response = await fromBrowser(shop.publicKey, { Origin: SELF, 'Tokenizer-Parent-Origin': 'http://localhost:8788' });
    expect(response.status).toBe(201);
    expect((await response.json<{ data: { temp_token: string } }>()).data.temp_token).toMatch(/^tok_/);
  });

  it('refuses a frame whose parent page is not allowed, before any token is made', async () => {
    const before = await tokenCount();
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: SELF, 'Tokenizer-Parent-Origin': 'https://evil.example' }),
      `"https://evil.example" is not in this merchant's tokenizer_origins`,
    );
    // Another merchant's allowed page is not this merchant's.
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: SELF, 'Tokenizer-Parent-Origin': 'https://other.example' }),
      `"https://other.example" is not in this merchant's tokenizer_origins`,
    );
    // Refused before the card is even read: a bad card gets the same 403, not a 400 about it.
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: SELF, 'Tokenizer-Parent-Origin': 'https://evil.example' }, { cc_number: '1' }),
      `"https://evil.example" is not in this merchant's tokenizer_origins`,
    );
    expect(await tokenCount()).toBe(before);
  });

  it('refuses a browser request that does not say which page framed it', async () => {
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: SELF }),
      'a browser request must name the page around the tokenizer frame in Tokenizer-Parent-Origin',
    );
  });

  it("refuses a page calling it directly, even an allowed one: only the frame's own origin may", async () => {
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: 'https://shop.example', 'Tokenizer-Parent-Origin': 'https://shop.example' }),
      'browser requests must come from the hosted tokenizer frame, not from "https://shop.example"',
    );
    await expectRefused(
      await fromBrowser(shop.publicKey, { Origin: 'null', 'Tokenizer-Parent-Origin': 'https://shop.example' }),
      'browser requests must come from the hosted tokenizer frame, not from "null"',
    );
  });

  it('stops at once for a page the merchant removes from the list', async () => {
    const merchant = await createMerchant({ name: 'Removing Shop' });
    await allow(merchant, ['https://leaving.example']);
    const headers = { Origin: SELF, 'Tokenizer-Parent-Origin': 'https://leaving.example' };
    const allowed = await fromBrowser(merchant.publicKey, headers);
    expect(allowed.status).toBe(201);
    await allowed.body?.cancel();
    await allow(merchant, []);
    await expectRefused(await fromBrowser(merchant.publicKey, headers), `"https://leaving.example" is not in this merchant's tokenizer_origins`);
  });

  it('leaves server-to-server calls (no Origin) as they were, for either key', async () => {
    for (const key of [shop.publicKey, shop.secretKey]) {
      const response = await call('POST', '/api/tokenizer/token', { key, body: CARD });
      expect(response.status).toBe(201);
      await response.body?.cancel();
    }
  });

  it('checks the key first: a browser request with a bad key is a 401, whatever its origin', async () => {
    const response = await fromBrowser('pub_' + 'Z'.repeat(32), { Origin: 'https://evil.example' });
    expect(response.status).toBe(401);
    await response.body?.cancel();
  });
});
