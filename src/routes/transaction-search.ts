/**
 * Finding transactions (docs/transactions.md, "Search" and "Exports"): POST /api/transaction/search
 * in FluidPay's request and answer; POST /api/transaction/export (the same filters, written to a
 * CSV in the background), GET /api/transaction/export/{id} and its download. Mounted beside
 * routes/transaction.ts under /api/transaction; each route requires the secret key itself, so the
 * two sub-apps do not authenticate a request twice.
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { exportRateLimit, searchRateLimit } from '../middleware/merchant-rate-limit';
import { validate } from '../middleware/validate';
import { exportIdParamSchema, transactionExportSchema, transactionSearchSchema } from '../schemas/transaction-search';
import { findExport, openExportDownload, startExport, type ExportDownload } from '../services/search/exports';
import { searchTransactions } from '../services/search/search';

function refused(field: string, message: string): never {
  throw new AppError('bad_request', `${field}: ${message}`, [{ field, msg: message }]);
}

export const transactionSearch = new Hono<AppEnv>()
  .post('/search', requireSecretKey, searchRateLimit, validate('json', transactionSearchSchema), async (c) => {
    const outcome = await searchTransactions(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!outcome.ok) refused(outcome.field, outcome.message);
    return c.json(outcome.answer);
  })
  .post('/export', requireSecretKey, exportRateLimit, validate('json', transactionExportSchema), async (c) => {
    const outcome = await startExport(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!outcome.ok && 'busy' in outcome) throw new AppError('rate_limited', outcome.message, undefined, { 'Retry-After': '60' });
    if (!outcome.ok) refused(outcome.field, outcome.message);
    return c.json(success(outcome.export), 202);
  })
  .get('/export/:id', requireSecretKey, validate('param', exportIdParamSchema), async (c) => {
    const found = await findExport(c.env, c.get('caller').merchantId, c.req.valid('param').id);
    if (!found) throw new AppError('not_found', 'export not found');
    return c.json(success(found));
  })
  .get('/export/:id/download', requireSecretKey, validate('param', exportIdParamSchema), async (c) =>
    exportDownloadAnswer(c, await openExportDownload(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock)),
  );

/** An export's CSV, streamed from R2; or why not (the console's download answers the same). */
export function exportDownloadAnswer(c: Context, outcome: ExportDownload): Response {
  if (!outcome.ok) {
    switch (outcome.reason) {
      case 'not_found':
        throw new AppError('not_found', 'export not found');
      case 'not_completed':
        throw new AppError('conflict', 'export is not completed: GET /api/transaction/export/{id} shows its progress');
      case 'expired':
        throw new AppError('gone', 'export expired');
    }
  }
  return c.body(outcome.body, 200, {
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Length': String(outcome.size),
    'Content-Disposition': `attachment; filename="${outcome.fileName}"`,
  });
}
