/** Per-API-key rate limiting with a Workers rate-limit binding (runs after requireKey). */
import { createMiddleware } from 'hono/factory';
import type { AppEnv, Env } from '../env';
import { AppError } from '../errors';

/**
 * 429 with Retry-After once the caller's key is over the binding's limit. `periodSeconds` is the
 * binding's window (wrangler.toml `period`), the longest a client has to wait.
 */
export function rateLimitPerKey(binding: (env: Env) => RateLimit, periodSeconds: number) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { success } = await binding(c.env).limit({ key: c.get('caller').keyId });
    if (!success) {
      throw new AppError('rate_limited', `rate limit exceeded for this API key; retry in ${periodSeconds} seconds`, undefined, {
        'Retry-After': String(periodSeconds),
      });
    }
    await next();
  });
}

/** The upload limit (wrangler.toml UPLOAD_RATE_LIMITER), shared by the API's and the console's uploads. */
export const UPLOAD_RATE_PERIOD_SECONDS = 60;
export const uploadRateLimit = rateLimitPerKey((env) => env.UPLOAD_RATE_LIMITER, UPLOAD_RATE_PERIOD_SECONDS);
