/**
 * Browser pages: the hosted tokenizer (the merchant-facing script, the card frame and the frame's
 * own files), the batch console and the docs page's files. The files live in public/ (Workers
 * Static Assets) and every request reaches
 * the Worker first (`run_worker_first`), so each answer gets headers chosen here: per-merchant
 * frame-ancestors on the frame, long caching on the versioned script. This is a Hono app of its
 * own, beside the API's, because pages need other headers than the API's `no-store` JSON.
 */
import { Hono, type Context } from 'hono';
import { requestId } from 'hono/request-id';
import type { AppEnv } from '../env';
import { handleError } from '../errors';
import { framePolicy, type FramePolicy } from '../services/tokenizer/origins';

/** Paths this app serves (index.ts sends them here): the tokenizer, the docs page's files and the console. */
const PAGE_PREFIXES = ['/tokenizer/', '/docs/'];
const V1 = '/tokenizer/v1';

export function isPagePath(pathname: string): boolean {
  // The batch console: its page and files; its JSON routes (/console/session, /console/batches) are the API app's.
  if (pathname === '/console' || pathname === '/console/transactions' || pathname.startsWith('/console/assets/')) return true;
  return PAGE_PREFIXES.some((prefix) => pathname.startsWith(prefix));
}

/**
 * The script merchants include never changes at a version path (a change ships as /tokenizer/v2/):
 * it only mounts the frame and relays messages, so a year in caches costs nothing. Card handling
 * lives in the frame, whose files are revalidated (ETag) on every load so a fix reaches every
 * checkout at once.
 */
export const SCRIPT_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const FRAME_FILES_CACHE_CONTROL = 'no-cache';

/** Strict for every page: no inline script or style, nothing from another origin. */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  // The frame writes text only (textContent): any DOM sink that parses HTML is refused outright.
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

export function frameCsp(origins: readonly string[]): string {
  return `${PAGE_CSP}; frame-ancestors ${origins.length > 0 ? origins.join(' ') : "'none'"}`;
}

export const pages = new Hono<AppEnv>();

pages.use(requestId());
pages.use(async (c, next) => {
  await next();
  c.header('X-Content-Type-Options', 'nosniff');
  // The frame's URL carries the public key: harmless, but no page here tells others where it was.
  c.header('Referrer-Policy', 'no-referrer');
});

pages.get(`${V1}/tokenizer.js`, (c) =>
  asset(c, `${V1}/tokenizer.js`, { cacheControl: SCRIPT_CACHE_CONTROL, resourcePolicy: 'cross-origin' }),
);
for (const file of ['frame.js', 'card-checks.js', 'frame.css']) {
  pages.get(`${V1}/${file}`, (c) => asset(c, `${V1}/${file}`, { cacheControl: FRAME_FILES_CACHE_CONTROL, resourcePolicy: 'same-origin' }));
}

// The files of the docs page (GET /docs is the API app's): Swagger UI's bundle and styles, copied
// from the swagger-ui-dist package by scripts/docs-assets.mjs, and the page's own script.
for (const path of ['/docs/vendor/swagger-ui-bundle.js', '/docs/vendor/swagger-ui.css', '/docs/docs.js']) {
  pages.get(path, (c) => asset(c, path, { cacheControl: 'public, max-age=3600', resourcePolicy: 'same-origin' }));
}

// The batch console (GET /console): a page of its own origin only, never framed (clickjacking an upload).
export const CONSOLE_CSP = `${PAGE_CSP}; img-src 'self'; frame-ancestors 'none'`;
pages.get('/console', async (c) => {
  const file = await fetchAsset(c, '/console/index.html', new Headers());
  return c.body(bodyOf(file), 200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': CONSOLE_CSP,
    'Cache-Control': 'no-store',
  });
});
// The console's Transactions page (docs/console.md, "Transactions"): the same headers as the console's.
pages.get('/console/transactions', async (c) => {
  const file = await fetchAsset(c, '/console/transactions.html', new Headers());
  return c.body(bodyOf(file), 200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': CONSOLE_CSP,
    'Cache-Control': 'no-store',
  });
});
// session.js: both pages' requests and sign-out (a classic script of this origin, as the CSP's script-src 'self' allows).
for (const file of ['session.js', 'console.js', 'console.css', 'transactions.js']) {
  pages.get(`/console/assets/${file}`, (c) => asset(c, `/console/assets/${file}`, { cacheControl: FRAME_FILES_CACHE_CONTROL, resourcePolicy: 'same-origin' }));
}

pages.get(`${V1}/frame`, async (c) => {
  const key = c.req.query('key') ?? '';
  const policy: FramePolicy =
    key === '' || key.length > 256 ? { ok: false, reason: 'not_a_public_key' } : await framePolicy(c.env, key);
  if (!policy.ok) return refuseFrame(c, policy.reason);

  const file = await fetchAsset(c, `${V1}/frame.html`, new Headers());
  // The frame checks every message's origin against this list (the CSP above already keeps other pages out).
  const page = new HTMLRewriter()
    .on('meta[name="tokenizer-parent-origins"]', {
      element(meta) {
        meta.setAttribute('content', policy.origins.join(' '));
      },
    })
    .transform(file);
  return c.body(bodyOf(page), 200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': frameCsp(policy.origins),
    // The allowed origins can change at any time: the frame is never reused from a cache.
    'Cache-Control': 'no-store',
  });
});

pages.notFound((c) => c.text(`no page at ${c.req.path}`, 404, refusalHeaders()));
pages.onError(handleError);

const FRAME_REFUSALS: Record<Exclude<FramePolicy, { ok: true }>['reason'], [400 | 401 | 403, string]> = {
  not_a_public_key: [400, "the tokenizer frame takes the merchant's public key (pub_…) in ?key=; never a secret key"],
  unknown_key: [401, 'unknown or revoked public key'],
  no_origins: [403, "no page may frame the tokenizer for this merchant: its tokenizer_origins list is empty"],
};

function refuseFrame(c: Context<AppEnv>, reason: keyof typeof FRAME_REFUSALS): Response {
  const [status, message] = FRAME_REFUSALS[reason];
  return c.text(message, status, refusalHeaders());
}

function refusalHeaders(): Record<string, string> {
  return { 'Content-Security-Policy': frameCsp([]), 'Cache-Control': 'no-store' };
}

async function fetchAsset(c: Context<AppEnv>, path: string, headers: Headers): Promise<Response> {
  const response = await c.env.ASSETS.fetch(new Request(new URL(path, c.req.url), { headers }));
  if (response.status !== 200 && response.status !== 304) {
    throw new Error(`static asset ${path} answered ${response.status}: is public/ deployed?`);
  }
  return response;
}

/** A file of public/ with our caching; a conditional request is answered 304 by the assets service. */
async function asset(
  c: Context<AppEnv>,
  path: string,
  options: { cacheControl: string; resourcePolicy: 'same-origin' | 'cross-origin' },
): Promise<Response> {
  const conditional = new Headers();
  const etag = c.req.header('If-None-Match');
  if (etag) conditional.set('If-None-Match', etag);
  const response = await fetchAsset(c, path, conditional);
  const headers: Record<string, string> = {
    'Cache-Control': options.cacheControl,
    'Cross-Origin-Resource-Policy': options.resourcePolicy,
  };
  for (const name of ['Content-Type', 'ETag']) {
    const value = response.headers.get(name);
    if (value) headers[name] = value;
  }
  if (response.status === 304) return c.body(null, 304, headers);
  return c.body(bodyOf(response), 200, headers);
}

function bodyOf(response: Response): ReadableStream {
  // A 200 answer to a GET always has a body; HEAD is Hono's GET with the body dropped afterwards.
  if (response.body === null) throw new Error('static asset answered 200 without a body');
  return response.body;
}
