// Small fetch helpers shared by the scenarios.
import { DEMO } from '../local-state.mjs';

export const SECRET_KEY = DEMO.secretKey;

/** JSON request with the demo merchant's secret key (or `auth`); returns { status, body, ms }. */
export async function callJson(ctx, method, path, payload, { auth = SECRET_KEY } = {}) {
  const started = performance.now();
  const response = await fetch(`${ctx.url}${path}`, {
    method,
    headers: { authorization: auth, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body, ms: performance.now() - started };
}

/** True when the app has no route for this method and path (its not-found answer, not a domain 404). */
export function isRouteMissing(result) {
  return (
    (result.status === 404 || result.status === 405) &&
    typeof result.body?.msg === 'string' &&
    /^(no route for|method \S+ not allowed)/.test(result.body.msg)
  );
}

export class EndpointMissing extends Error {
  constructor(what) {
    super(`skipped: endpoint missing (${what})`);
  }
}

/** Throws EndpointMissing when `result` is the app's not-found answer. */
export function requireRoute(result, what) {
  if (isRouteMissing(result)) throw new EndpointMissing(what);
  return result;
}

/** Runs `fn` over `items` with at most `limit` in flight; returns results in order. */
export async function mapLimit(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  });
  await Promise.all(workers);
  return results;
}
