/** POST /api/lookup/bin/protected (SPEC.md): card metadata for a BIN, temp token or vault card. */
import { Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { binLookupRequestSchema } from '../schemas/lookup';
import { answerBinLookup } from '../services/bin-lookup-answer';

/** The period of LOOKUP_RATE_LIMITER in wrangler.toml: a client over the limit waits this long. */
export const LOOKUP_RATE_PERIOD_SECONDS = 60;

/**
 * BIN lookups are a card-testing reconnaissance step: each API key gets the budget set on the
 * LOOKUP_RATE_LIMITER binding (wrangler.toml [[ratelimits]]). Counted before validation, so
 * malformed probes spend it too.
 */
const rateLimitLookups = createMiddleware<AppEnv>(async (c, next) => {
  const { success } = await c.env.LOOKUP_RATE_LIMITER.limit({ key: c.get('caller').keyId });
  if (!success) {
    throw new AppError('rate_limited', `too many lookups for this API key; retry in ${LOOKUP_RATE_PERIOD_SECONDS} seconds`, undefined, {
      'Retry-After': String(LOOKUP_RATE_PERIOD_SECONDS),
    });
  }
  await next();
});

export const lookup = new Hono<AppEnv>();

lookup.post('/bin/protected', requireSecretKey, rateLimitLookups, validate('json', binLookupRequestSchema), async (c) => {
  const body = await answerBinLookup(c.env, c.get('caller'), c.req.valid('json'), systemClock());
  return c.json(body);
});
