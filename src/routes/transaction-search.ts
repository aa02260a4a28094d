/**
 * Finding transactions (docs/transactions.md, "Search"): POST /api/transaction/search in FluidPay's
 * request and answer. Mounted beside routes/transaction.ts under /api/transaction; each route
 * requires the secret key itself, so the two sub-apps do not authenticate a request twice.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { transactionSearchSchema } from '../schemas/transaction-search';
import { searchTransactions } from '../services/search/search';

export const transactionSearch = new Hono<AppEnv>().post('/search', requireSecretKey, validate('json', transactionSearchSchema), async (c) => {
  const outcome = await searchTransactions(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
  if (!outcome.ok) throw new AppError('bad_request', `${outcome.field}: ${outcome.message}`, [{ field: outcome.field, msg: outcome.message }]);
  return c.json(outcome.answer);
});
