/**
 * The tokenizer's pages as the Worker serves them from Workers Static Assets: the frame with the
 * merchant's own frame-ancestors, the versioned script with long caching, the frame's files
 * revalidated, and refusals that no page may frame.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, apiKeyId, call, createMerchant, type TestMerchant } from '../helpers/api';

let shopA: TestMerchant;
let shopB: TestMerchant;
let bare: TestMerchant;
beforeAll(async () => {
  [shopA, shopB, bare] = await Promise.all([
    createMerchant({ name: 'Shop A' }),
    createMerchant({ name: 'Shop B' }),
    createMerchant({ name: 'Shop Without Origins' }),
  ]);
  await allow(shopA, ['https://shop-a.example', 'http://localhost:8788']);
  await allow(shopB, ['https://shop-b.example']);
});

async function allow(merchant: TestMerchant, origins: string[]): Promise<void> {
  const response = await admin('PATCH', `/admin/merchants/${merchant.id}`, { tokenizer_origins: origins });
  expect(response.status).toBe(200);
  await response.body?.cancel();
}

function frame(key: string | null): Promise<Response> {
  return call('GET', key === null ? '/tokenizer/v1/frame' : `/tokenizer/v1/frame?key=${encodeURIComponent(key)}`);
}

function directives(csp: string | null): Map<string, string> {
  const map = new Map<string, string>();
  for (const part of (csp ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) map.set(name, values.join(' '));
  }
  return map;
}

describe('GET /tokenizer/v1/frame', () => {
  it("may be framed only by the merchant's own origins, and checks messages against the same list", async () => {
    const response = await frame(shopA.publicKey);
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toBe('text/html; charset=utf-8');
    const csp = directives(response.headers.get('Content-Security-Policy'));
    expect(csp.get('frame-ancestors')).toBe('https://shop-a.example http://localhost:8788');
    expect(response.headers.get('X-Frame-Options')).toBeNull();
    const html = await response.text();
    expect(html).toContain('<meta name="tokenizer-parent-origins" content="https://shop-a.example http://localhost:8788">');

    const other = await frame(shopB.publicKey);
    expect(directives(other.headers.get('Content-Security-Policy')).get('frame-ancestors')).toBe('https://shop-b.example');
    expect(await other.text()).toContain('content="https://shop-b.example"');
  });

  it('follows a change of the list at once: never cached, no ETag', async () => {
    const merchant = await createMerchant({ name: 'Changing Shop' });
    await allow(merchant, ['https://before.example']);
    const before = await frame(merchant.publicKey);
    expect(before.headers.get('Cache-Control')).toBe('no-store');
    expect(before.headers.get('ETag')).toBeNull();
    expect(directives(before.headers.get('Content-Security-Policy')).get('frame-ancestors')).toBe('https://before.example');
    await before.body?.cancel();

    await allow(merchant, ['https://after.example']);
    const after = await frame(merchant.publicKey);
    expect(directives(after.headers.get('Content-Security-Policy')).get('frame-ancestors')).toBe('https://after.example');
    await after.body?.cancel();
  });

  it('runs no inline script or style, loads nothing from elsewhere, and has labelled card fields', async () => {
    const response = await frame(shopA.publicKey);
    const csp = directives(response.headers.get('Content-Security-Policy'));
    expect(csp.get('default-src')).toBe("'none'");
    expect(csp.get('script-src')).toBe("'self'");
    expect(csp.get('style-src')).toBe("'self'");
    expect(csp.get('connect-src')).toBe("'self'");
    expect(csp.get('base-uri')).toBe("'none'");
    expect(csp.get('form-action')).toBe("'none'");
    expect(response.headers.get('Content-Security-Policy')).not.toContain('unsafe');
    expect(response.headers.get('Referrer-Policy')).toBe('no-referrer');
    expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff');

    const html = await response.text();
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\ssrc="\/tokenizer\/v1\/[a-z-]+\.js"/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    for (const [id, label, autocomplete] of [
      ['number', 'Card number', 'cc-number'],
      ['expiration', 'Expiration', 'cc-exp'],
      ['cvc', 'CVC', 'cc-csc'],
    ]) {
      expect(html).toContain(`<label for="${id}">${label}</label>`);
      expect(html).toMatch(new RegExp(`<input id="${id}"[^>]*autocomplete="${autocomplete}"`));
    }
  });

  const refusals: [string, () => string | null, number, string][] = [
    ['no key', () => null, 400, "takes the merchant's public key"],
    ['the secret key', () => shopA.secretKey, 400, 'never a secret key'],
    ['a key that was never issued', () => 'pub_' + 'Q'.repeat(32), 401, 'unknown or revoked public key'],
    ['a merchant without tokenizer_origins', () => bare.publicKey, 403, 'tokenizer_origins list is empty'],
  ];

  it.each(refusals)('refuses %s (%i), and no page may frame the refusal', async (_, key, status, message) => {
    const response = await frame(key());
    expect(response.status).toBe(status);
    expect(directives(response.headers.get('Content-Security-Policy')).get('frame-ancestors')).toBe("'none'");
    expect(response.headers.get('Cache-Control')).toBe('no-store');
    const text = await response.text();
    expect(text).toContain(message);
    expect(text).not.toContain(shopA.secretKey);
    expect(text).not.toContain('<input');
  });

  it('refuses a revoked public key at once', async () => {
    const merchant = await createMerchant({ name: 'Revoking Shop' });
    await allow(merchant, ['https://revoking.example']);
    const ok = await frame(merchant.publicKey);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    expect((await admin('DELETE', `/admin/keys/${await apiKeyId(merchant.id, 'public')}`)).status).toBe(200);
    const refused = await frame(merchant.publicKey);
    expect(refused.status).toBe(401);
    await refused.body?.cancel();
  });
});

describe('the static files', () => {
  it('serves the versioned script for a year, with an ETag, to any page', async () => {
    const response = await call('GET', '/tokenizer/v1/tokenizer.js');
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toMatch(/^text\/javascript/);
    expect(response.headers.get('Cache-Control')).toBe('public, max-age=31536000, immutable');
    expect(response.headers.get('Cross-Origin-Resource-Policy')).toBe('cross-origin');
    expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff');
    const etag = response.headers.get('ETag');
    expect(etag).toBeTruthy();
    const script = await response.text();
    expect(script).toContain('window.BinbatchTokenizer = BinbatchTokenizer');
    // "A few KB": the script merchants include stays small.
    expect(new TextEncoder().encode(script).length).toBeLessThan(12 * 1024);

    const again = await call('GET', '/tokenizer/v1/tokenizer.js', { headers: { 'If-None-Match': etag ?? '' } });
    expect(again.status).toBe(304);
    expect(again.headers.get('Cache-Control')).toBe('public, max-age=31536000, immutable');
  });

  it.each([
    ['frame.js', /^text\/javascript/],
    ['card-checks.js', /^text\/javascript/],
    ['frame.css', /^text\/css/],
  ])("revalidates the frame's %s on every load (a fix reaches every checkout at once)", async (file, type) => {
    const response = await call('GET', `/tokenizer/v1/${file}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toMatch(type);
    expect(response.headers.get('Cache-Control')).toBe('no-cache');
    expect(response.headers.get('ETag')).toBeTruthy();
    expect(response.headers.get('Cross-Origin-Resource-Policy')).toBe('same-origin');
    await response.body?.cancel();
  });

  it('serves nothing else from public/: not the raw frame, not the type declarations', async () => {
    for (const path of ['/tokenizer/v1/frame.html', '/tokenizer/v1/card-checks.d.ts', '/tokenizer/v1/', '/tokenizer/v2/tokenizer.js']) {
      const response = await call('GET', path);
      expect(response.status, path).toBe(404);
      expect(directives(response.headers.get('Content-Security-Policy')).get('frame-ancestors'), path).toBe("'none'");
      await response.body?.cancel();
    }
  });

  it('does not even upload the type declarations (public/.assetsignore)', async () => {
    const declarations = await env.ASSETS.fetch('http://assets.test/tokenizer/v1/card-checks.d.ts');
    expect(declarations.status).toBe(404);
    await declarations.body?.cancel();
    const module = await env.ASSETS.fetch('http://assets.test/tokenizer/v1/card-checks.js');
    expect(module.status).toBe(200);
    await module.body?.cancel();
  });

  it('leaves the API its own headers', async () => {
    const response = await call('GET', '/healthz');
    expect(response.headers.get('Cache-Control')).toBe('no-store');
    expect(response.headers.get('Content-Security-Policy')).toBeNull();
    await response.body?.cancel();
  });
});
