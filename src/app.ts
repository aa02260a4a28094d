/** The Hono app: middleware, error handling and one sub-app per resource. */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import type { AppEnv } from './env';
import { AppError, failed, handleError } from './errors';
import { redactUrlPart } from './lib/redact';
import { requireAdmin } from './middleware/auth';
import { requestLog } from './middleware/request-log';
import { admin } from './routes/admin';
import { settlement } from './routes/settlement';
import { docs } from './routes/docs';
import { adminBins } from './routes/admin-bins';
import { adminProcessors } from './routes/admin-processors';
import { adminRecurring } from './routes/admin-recurring';
import { batchEvents } from './routes/batch-events';
import { consoleRoutes } from './routes/console';
import { consoleTransactions } from './routes/console-transactions';
import { consoleSubscriptions } from './routes/console-subscriptions';
import { filebatch } from './routes/filebatch';
import { lookup } from './routes/lookup';
import { tokenizer } from './routes/tokenizer';
import { transaction } from './routes/transaction';
import { transactionSearch } from './routes/transaction-search';
import { recurring } from './routes/recurring';
import { vault } from './routes/vault';
import { webhooks } from './routes/webhooks';

/** JSON bodies are small; the streamed uploads listed here enforce their own, larger limits. */
export const JSON_BODY_LIMIT_BYTES = 64 * 1024;
const STREAMED_UPLOADS = new Set(['POST /api/filebatch', 'POST /admin/bins/import', 'POST /admin/bins/ranges/import', 'POST /console/batches']);

const jsonBodyLimit = bodyLimit({
  maxSize: JSON_BODY_LIMIT_BYTES,
  onError: () => {
    throw new AppError('payload_too_large', `request body exceeds ${JSON_BODY_LIMIT_BYTES} bytes`);
  },
});

export const app = new Hono<AppEnv>();

app.use(requestId());
app.use(requestLog);
app.use(async (c, next) => {
  await next();
  // FluidPay's clients read the request id from X-Correlation-Id (their SDKs quote it in errors).
  c.header('X-Correlation-Id', c.get('requestId'));
  // Nothing this service answers may be sniffed into another type or cached: bodies can hold card metadata.
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Cache-Control', 'no-store');
});
app.use(async (c, next) => {
  if (STREAMED_UPLOADS.has(`${c.req.method} ${c.req.path}`)) return next();
  return jsonBodyLimit(c, next);
});

app.get('/healthz', (c) => c.json({ status: 'ok' }));

// The batch console's session and batch routes (its page is the pages app's GET /console).
app.route('/console', consoleRoutes);
// The console's Transactions page: search, detail, exports (docs/console.md, "Transactions").
app.route('/console', consoleTransactions);
// The console's subscriptions needing attention (docs/recurring.md).
app.route('/console', consoleSubscriptions);

app.use('/admin/*', requireAdmin);
app.route('/admin', admin);
app.route('/admin', adminBins);
app.route('/admin', adminProcessors);
app.route('/admin', adminRecurring);

// Chained so that AppType carries every merchant route's input and output (src/client.ts). The
// progress stream is mounted before filebatch: it also takes a stream token, which filebatch's
// secret-key guard would refuse.
const api = app
  .route('/', docs)
  .route('/api/lookup', lookup)
  .route('/api/tokenizer', tokenizer)
  .route('/api/vault', vault)
  .route('/api/recurring', recurring)
  // Search before the transaction routes: /search is not an id.
  .route('/api/transaction', transactionSearch)
  .route('/api/transaction', transaction)
  .route('/api/settlement', settlement)
  .route('/api/filebatch', batchEvents)
  .route('/api/filebatch', filebatch)
  .route('/api/webhooks', webhooks);

/** The merchant API's routes with their inputs and answers, for `hc` from `hono/client`. */
export type AppType = typeof api;

app.onError(handleError);
app.notFound((c) => {
  const allowed = allowedMethods(c);
  // The path is quoted back: a card number typed into it is masked first.
  const path = redactUrlPart(c.req.path);
  if (allowed.length > 0) {
    c.header('Allow', allowed.join(', '));
    return c.json(failed(`method ${c.req.method} not allowed on ${path}; allowed: ${allowed.join(', ')}`), 405);
  }
  return c.json(failed(`no route for ${c.req.method} ${path}`), 404);
});

/** Methods that have a route for this path: a non-empty answer turns a 404 into a 405. */
function allowedMethods(c: Context<AppEnv>): string[] {
  const methods = new Set<string>();
  for (const route of routePatterns()) {
    if (route.method !== 'ALL' && route.method !== c.req.method && route.pattern.test(c.req.path)) {
      methods.add(route.method);
    }
  }
  return [...methods].sort();
}

let patterns: { method: string; pattern: RegExp }[] | undefined;
function routePatterns() {
  // Middleware is registered as method ALL; only real handlers count. Built once per isolate.
  patterns ??= app.routes.map((route) => ({
    method: route.method,
    pattern: new RegExp(
      '^' +
        route.path
          .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
          .replace(/\/:[^/]+/g, '/[^/]+')
          .replace(/\*/g, '.*') +
        '/?$',
    ),
  }));
  return patterns;
}
