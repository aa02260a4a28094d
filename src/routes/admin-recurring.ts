/**
 * POST /admin/merchants/{id}/bill: bills the merchant's subscriptions due on or before a day (today,
 * UTC, by default) now, as the hourly run does, and answers what it charged, declined and skipped
 * (docs/recurring.md, "Billing now").
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { optionalJson, validate } from '../middleware/validate';
import { idParamSchema } from '../schemas/admin';
import { billBodySchema } from '../schemas/recurring';
import { billDue, continueBilling } from '../services/recurring/billing';
import { parseDate, utcDay } from '../services/recurring/calendar';

export const adminRecurring = new Hono<AppEnv>().post('/merchants/:id/bill', optionalJson(billBodySchema), validate('param', idParamSchema), async (c) => {
  const { date } = c.req.valid('json');
  if (date !== undefined && !parseDate(date)) throw new AppError('bad_request', 'date: must be a calendar date, YYYY-MM-DD', [{ field: 'date', msg: 'must be a calendar date, YYYY-MM-DD' }]);
  const merchantId = c.req.valid('param').id;
  const result = await billDue(c.env, merchantId, date ?? utcDay(systemClock()), systemClock);
  if (!result) throw new AppError('not_found', 'merchant not found');
  // What this step left is billed by the merchant's billing object, in alarm ticks, without waiting for the hour.
  if (!result.finished) await continueBilling(c.env, merchantId, result.date);
  // 202: the step's budget ran out; the merchant's billing object bills the rest.
  return c.json(success(result), result.finished ? 200 : 202);
});
