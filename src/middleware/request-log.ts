/**
 * The request log: one JSON line per request, the only place a request's URL is logged. Workers'
 * own invocation logs are turned off in wrangler.toml because they record the URL as sent, and a
 * card number typed into a path or a query (`GET /api/vault/customer/4111…`, refused with a 400)
 * would be stored whole; here the path and query go through the card-number detector first.
 *
 * `REQUEST_LOG` (wrangler.toml): "all" logs every request; "errors" only answers of 400 and above,
 * for an operator who wants fewer Workers Logs events, and for the bench (docs/performance.md).
 */
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { redactUrlPart } from '../lib/redact';

export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const started = Date.now();
  try {
    await next();
  } finally {
    if (c.env.REQUEST_LOG !== 'errors' || c.res.status >= 400) writeLine(c, started);
  }
});

function writeLine(c: Context<AppEnv>, started: number): void {
  const url = new URL(c.req.url);
  console.log(
    JSON.stringify({
      level: 'info',
      event: 'request',
      request_id: c.get('requestId'),
      method: c.req.method,
      path: redactUrlPart(url.pathname),
      ...(url.search ? { query: redactUrlPart(url.search.slice(1), true) } : {}),
      status: c.res.status,
      duration_ms: Date.now() - started,
    }),
  );
}
