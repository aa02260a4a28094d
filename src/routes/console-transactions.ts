/**
 * The console's Transactions page, server side (docs/console.md, "Transactions"): search, a
 * transaction's detail with its lifecycle, and exports, with the session cookie and CSRF token of
 * the batch console (routes/console.ts). The same services as /api/transaction/search and
 * /api/transaction/export.
 */
import { Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { requireConsoleCsrf, requireConsoleSession, type ConsoleEnv } from '../middleware/console-session';
import { exportRateLimit, searchRateLimit } from '../middleware/merchant-rate-limit';
import { validate } from '../middleware/validate';
import { transactionIdParamSchema } from '../schemas/transaction-http';
import { exportIdParamSchema, transactionExportSchema, transactionSearchSchema } from '../schemas/transaction-search';
import { findExport, openExportDownload, startExport } from '../services/search/exports';
import { searchTransactions } from '../services/search/search';
import { transactionDetail } from '../services/transactions/detail';
import { exportDownloadAnswer } from './transaction-search';

function refused(field: string, message: string): never {
  throw new AppError('bad_request', `${field}: ${message}`, [{ field, msg: message }]);
}

/** The session, unless the console's own middleware (mounted on /console/*) already found it. */
const consoleSession = createMiddleware<ConsoleEnv>(async (c, next) => (c.var.consoleSession ? next() : requireConsoleSession(c, next)));

export const consoleTransactions = new Hono<ConsoleEnv>()
  .use('/transactions/*', consoleSession)
  .use('/transactions/*', requireConsoleCsrf)
  .post('/transactions/search', searchRateLimit, validate('json', transactionSearchSchema), async (c) => {
    const outcome = await searchTransactions(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!outcome.ok) refused(outcome.field, outcome.message);
    return c.json(outcome.answer);
  })
  .post('/transactions/export', exportRateLimit, validate('json', transactionExportSchema), async (c) => {
    const outcome = await startExport(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!outcome.ok && 'busy' in outcome) throw new AppError('rate_limited', outcome.message, undefined, { 'Retry-After': '60' });
    if (!outcome.ok) refused(outcome.field, outcome.message);
    return c.json(success(outcome.export), 202);
  })
  .get('/transactions/export/:id', validate('param', exportIdParamSchema), async (c) => {
    const found = await findExport(c.env, c.get('caller').merchantId, c.req.valid('param').id);
    if (!found) throw new AppError('not_found', 'export not found');
    return c.json(success(found));
  })
  .get('/transactions/export/:id/download', validate('param', exportIdParamSchema), async (c) =>
    exportDownloadAnswer(c, await openExportDownload(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock)),
  )
  .get('/transactions/:id', validate('param', transactionIdParamSchema), async (c) => {
    const detail = await transactionDetail(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
    if (!detail) throw new AppError('not_found', 'transaction not found');
    return c.json(success(detail));
  });
