/**
 * The batch console's server side (the page itself is served by routes/pages.ts at GET /console).
 * The page calls these routes with its session cookie, never with the API key: sign-in exchanges
 * the key once. Batch work goes through the same services as /api/filebatch; the live progress
 * stream is the API's own (GET /api/filebatch/{id}/events), which accepts the cookie too.
 */
import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import {
  assertSameOrigin,
  clearSessionCookie,
  CONSOLE_COOKIE,
  type ConsoleEnv,
  requireConsoleCsrf,
  requireConsoleSession,
  sessionFromCookie,
  setSessionCookie,
} from '../middleware/console-session';
import { uploadRateLimit } from '../middleware/key-rate-limit';
import { check, validate } from '../middleware/validate';
import { clientIpHeaderSchema } from '../schemas/client-ip';
import { consoleSignInSchema } from '../schemas/console';
import { batchIdParamSchema, consoleUploadQuerySchema, listQuerySchema, uploadHeaderSchema } from '../schemas/filebatch';
import { listBatches } from '../services/batches/records';
import { openDownload } from '../services/batches/results';
import { summarizeBatch } from '../services/batches/summary';
import { closeConsoleSession, openConsoleSession } from '../services/console-sessions';
import { controlled, downloadAnswer, receiveUpload, receiveValidateOnly, uploadAnswer } from './filebatch';

export const consoleRoutes = new Hono<AppEnv>();

consoleRoutes.post('/session', validate('json', consoleSignInSchema), async (c) => {
  // A sign-in posted by another site would log the browser into the attacker's account.
  assertSameOrigin(c);
  const outcome = await openConsoleSession(c.env, c.req.valid('json').api_key, systemClock);
  if (!outcome.ok) {
    throw new AppError(
      'unauthorized',
      outcome.reason === 'not_secret' ? 'the console needs the secret API key (api_…), not the public one' : 'invalid or revoked API key',
    );
  }
  const { session } = outcome;
  setSessionCookie(c, session.sessionId);
  return c.json(success({ merchant_name: session.caller.merchantName, csrf_token: session.csrfToken, expires_at: session.expiresAt }), 201);
});

consoleRoutes.delete('/session', async (c) => {
  const sessionId = getCookie(c, CONSOLE_COOKIE);
  const session = await sessionFromCookie(c);
  if (!session || sessionId === undefined) throw new AppError('unauthorized', 'not signed in to the console');
  assertSameOrigin(c);
  if (!(await session.csrfMatches(c.req.header('X-CSRF-Token')))) {
    throw new AppError('forbidden', 'missing or wrong X-CSRF-Token header: send the csrf_token the console session answered');
  }
  await closeConsoleSession(c.env, sessionId);
  clearSessionCookie(c);
  return c.json(success({ signed_out: true as const }));
});

const signedIn = new Hono<ConsoleEnv>()
  .use(requireConsoleSession)
  .use(requireConsoleCsrf)
  // The page reloads without its CSRF token (it lives in memory only): this answers it again.
  // Another site cannot read it: the answer carries no CORS header, and the cookie is SameSite=Strict.
  .get('/session', async (c) => {
    const session = c.get('consoleSession');
    return c.json(success({ merchant_name: session.caller.merchantName, csrf_token: session.csrfToken, expires_at: session.expiresAt }));
  })
  // The same checks and limits as POST /api/filebatch, and the same address check.
  .post('/batches', uploadRateLimit, validate('query', consoleUploadQuerySchema), check('header', clientIpHeaderSchema), validate('header', uploadHeaderSchema), async (c) =>
    uploadAnswer(c, await receiveUpload(c, undefined, { idempotencyKey: c.req.valid('header')['idempotency-key'], allowDuplicate: c.req.valid('query').allow_duplicate })),
  )
  // A file checked before it is uploaded: as POST /api/filebatch?validate_only=true (nothing stored or charged).
  .post('/batches/check', uploadRateLimit, async (c) => c.json(success(await receiveValidateOnly(c, undefined)), 200))
  .get('/batches', validate('query', listQuerySchema), async (c) => {
    const { limit, offset } = c.req.valid('query');
    const { batches, total } = await listBatches(c.env, c.get('caller').merchantId, { limit, offset });
    return c.json({ ...success(batches), total_count: total, limit, offset });
  })
  .get('/batches/:id/summary', validate('param', batchIdParamSchema), async (c) => {
    const outcome = await summarizeBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
    // A summary is refused for the reasons a download is.
    if (!outcome.ok) return downloadAnswer(c, outcome);
    return c.json(success(outcome.summary));
  })
  .get('/batches/:id/download', validate('param', batchIdParamSchema), async (c) =>
    downloadAnswer(c, await openDownload(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock)),
  )
  // The same answers as POST /api/filebatch/{id}/pause, /resume and /cancel.
  .post('/batches/:id/pause', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'pause')), 200),
  )
  .post('/batches/:id/resume', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'resume')), 200),
  )
  .post('/batches/:id/cancel', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'cancel')), 200),
  );

consoleRoutes.route('/', signedIn);
