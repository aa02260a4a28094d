/**
 * The origins allowed to frame a merchant's hosted tokenizer: set with PATCH /admin/merchants/{id}
 * `tokenizer_origins`, shown by GET, validated entry by entry (each bad one named, with its index).
 */
import { env } from 'cloudflare:workers';
import { beforeEach, describe, expect, it } from 'vitest';
import { admin, createMerchant, type TestMerchant } from '../helpers/api';

interface Envelope<T = unknown> {
  status: string;
  msg: string;
  data: T;
  errors?: { field: string; msg: string }[];
}
interface MerchantData {
  id: string;
  name: string;
  tokenizer_origins: string[];
}

let merchant: TestMerchant;
beforeEach(async () => {
  merchant = await createMerchant({ name: 'Origin Shop' });
});

async function setOrigins(origins: unknown, id = merchant.id): Promise<Response> {
  return admin('PATCH', `/admin/merchants/${id}`, { tokenizer_origins: origins });
}

async function originsOf(id = merchant.id): Promise<string[]> {
  const response = await admin('GET', `/admin/merchants/${id}`);
  expect(response.status).toBe(200);
  return (await response.json<Envelope<MerchantData>>()).data.tokenizer_origins;
}

async function refusal(origins: unknown): Promise<Envelope> {
  const response = await setOrigins(origins);
  expect(response.status).toBe(400);
  return response.json<Envelope>();
}

describe('tokenizer_origins', () => {
  it('is empty for a new merchant: nothing may frame the tokenizer by default', async () => {
    const created = await admin('POST', '/admin/merchants', { name: 'Fresh Shop' });
    const { data } = await created.json<Envelope<MerchantData>>();
    expect(data.tokenizer_origins).toEqual([]);
    expect(await originsOf(data.id)).toEqual([]);
  });

  it('is set by PATCH, answered back and shown by GET in the order given; PATCH replaces the whole list', async () => {
    const list = ['https://shop.example', 'http://localhost:8788', 'http://127.0.0.1:3000', 'https://checkout.shop.example:8443'];
    const response = await setOrigins(list);
    expect(response.status).toBe(200);
    expect((await response.json<Envelope<MerchantData>>()).data.tokenizer_origins).toEqual(list);
    expect(await originsOf()).toEqual(list);

    await setOrigins(['https://new.example']);
    expect(await originsOf()).toEqual(['https://new.example']);
    await setOrigins([]);
    expect(await originsOf()).toEqual([]);
  });

  it('is left alone by a PATCH of other fields, and changes with them in one request', async () => {
    await setOrigins(['https://shop.example']);
    await admin('PATCH', `/admin/merchants/${merchant.id}`, { surcharge_rate_bps: 150 });
    expect(await originsOf()).toEqual(['https://shop.example']);

    const both = await admin('PATCH', `/admin/merchants/${merchant.id}`, { name: 'Renamed', tokenizer_origins: ['https://b.example'] });
    expect((await both.json<Envelope<MerchantData>>()).data).toMatchObject({ name: 'Renamed', tokenizer_origins: ['https://b.example'] });
  });

  it('accepts internationalised domains as browsers send them (punycode)', async () => {
    expect((await setOrigins(['https://xn--bcher-kva.example'])).status).toBe(200);
  });

  const malformed: [string, string][] = [
    ['shop.example', '"shop.example" is not an origin: write it as scheme://host[:port], like "https://shop.example"'],
    ['http://shop.example', '"http://shop.example" must use https (plain http is allowed only for localhost and 127.0.0.1)'],
    ['ftp://shop.example', '"ftp://shop.example" must use https'],
    ['https://shop.example/', 'write it as "https://shop.example"'],
    ['https://shop.example/checkout?step=2', 'write it as "https://shop.example"'],
    ['https://Shop.Example', 'write it as "https://shop.example"'],
    ['https://shop.example:443', 'write it as "https://shop.example"'],
    ['https://bücher.example', 'write it as "https://xn--bcher-kva.example"'],
    ['https://*.shop.example', '"https://*.shop.example" has a wildcard: list each origin on its own'],
    ['https://user:secret@shop.example', 'must not hold a user name or password'],
    ['https://shop.example;script-src', 'has a host that is not a domain name or an IPv4 address'],
    ['https://shop.example, https://evil.example', 'is not an origin'],
    ['null', '"null" is not an origin'],
    ['', '"" is not an origin'],
  ];

  it.each(malformed)('refuses %j with a 400 naming it and its index', async (origin, message) => {
    const body = await refusal(['https://fine.example', origin]);
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]?.field).toBe('tokenizer_origins.1');
    expect(body.errors?.[0]?.msg).toContain(message);
    expect(body.msg).toContain(`tokenizer_origins.1: ${JSON.stringify(origin)}`);
  });

  it('names every bad entry of a list at once, and a duplicate', async () => {
    const body = await refusal(['http://shop.example', 'https://ok.example', 'https://ok.example', 'https://shop.example/']);
    expect(body.errors?.map((e) => e.field)).toEqual(['tokenizer_origins.0', 'tokenizer_origins.2', 'tokenizer_origins.3']);
    expect(body.errors?.[1]?.msg).toBe('"https://ok.example" is listed twice');
  });

  it('refuses a list that is not one, entries that are not strings, and more than 20 origins', async () => {
    expect((await refusal('https://shop.example')).msg).toBe('tokenizer_origins: must be a list of origins like ["https://shop.example"]');
    expect((await refusal([42])).msg).toBe('tokenizer_origins.0: must be a string like "https://shop.example"');
    const many = Array.from({ length: 21 }, (_, i) => `https://shop${i}.example`);
    expect((await refusal(many)).msg).toBe('tokenizer_origins: must list at most 20 origins');
    expect((await setOrigins(many.slice(0, 20))).status).toBe(200);
  });

  it('never quotes a card number back, nor an overlong value in full', async () => {
    const body = await refusal(['https://4111111111111111.example/x', `https://${'a'.repeat(300)}.example`]);
    expect(JSON.stringify(body)).not.toContain('4111111111111111');
    expect(body.errors?.[0]?.msg).toContain('(a card number)');
    expect(body.errors?.[1]?.msg).toContain('is longer than 255 characters');
    expect(body.errors?.[1]?.msg.length).toBeLessThan(200);
  });

  it('a refused PATCH changes nothing, neither the list nor the other fields', async () => {
    await setOrigins(['https://kept.example']);
    const response = await admin('PATCH', `/admin/merchants/${merchant.id}`, { name: 'Not Applied', tokenizer_origins: ['bad'] });
    expect(response.status).toBe(400);
    const fetched = await admin('GET', `/admin/merchants/${merchant.id}`);
    expect((await fetched.json<Envelope<MerchantData>>()).data).toMatchObject({ name: 'Origin Shop', tokenizer_origins: ['https://kept.example'] });
  });

  it('a PATCH for an unknown merchant is a 404 and stores no origin', async () => {
    const response = await setOrigins(['https://ghost.example'], 'nosuchmerchant');
    expect(response.status).toBe(404);
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM tokenizer_origins WHERE merchant_id = 'nosuchmerchant'").first<{ n: number }>();
    expect(row?.n).toBe(0);
  });
});
