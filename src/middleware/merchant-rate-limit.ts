/** Per-merchant rate limiting (runs after authentication): the caller's merchant, not its key, is counted. */
import { createMiddleware } from 'hono/factory';
import type { Caller, Env } from '../env';
import { AppError } from '../errors';
import { tierOf, TIER_PERIOD_SECONDS, transactionLimiter } from '../services/limits/rate-tiers';

/** Any app whose requests carry a caller: the API's (AppEnv) and the console's (ConsoleEnv). */
type CallerEnv = { Bindings: Env; Variables: { caller: Caller } };

function limitPerMerchant(what: string, binding: (env: Env, caller: Caller) => RateLimit, periodSeconds: number) {
  return createMiddleware<CallerEnv>(async (c, next) => {
    const caller = c.get('caller');
    const { success } = await binding(c.env, caller).limit({ key: caller.merchantId });
    if (!success) {
      throw new AppError('rate_limited', `${what} rate limit exceeded for this merchant; retry in ${periodSeconds} seconds`, undefined, {
        'Retry-After': String(periodSeconds),
      });
    }
    await next();
  });
}

/** API transactions: the merchant's rate tier's limiter. */
export const transactionRateLimit = limitPerMerchant('transaction', (env, caller) => transactionLimiter(env, tierOf(caller)), TIER_PERIOD_SECONDS);
/** POST /api/transaction/search and the console's search. */
export const searchRateLimit = limitPerMerchant('search', (env) => env.SEARCH_RATE_LIMITER, TIER_PERIOD_SECONDS);
/** Starting an export (the API's and the console's). */
export const exportRateLimit = limitPerMerchant('export', (env) => env.EXPORT_RATE_LIMITER, TIER_PERIOD_SECONDS);
