/** POST /api/lookup/bin/protected: card metadata for a BIN, temp token or vault card. */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { rateLimitPerKey } from '../middleware/key-rate-limit';
import { validate } from '../middleware/validate';
import { binLookupRequestSchema } from '../schemas/lookup';
import { answerBinLookup } from '../services/bin-lookup/answer';

/** The period of LOOKUP_RATE_LIMITER in wrangler.toml: a client over the limit waits this long. */
export const LOOKUP_RATE_PERIOD_SECONDS = 60;

export const lookup = new Hono<AppEnv>()
  .post(
  '/bin/protected',
  requireSecretKey,
  // BIN lookups are a card-testing reconnaissance step: limited per key, before validation, so
  // malformed probes spend the budget too.
  rateLimitPerKey((env) => env.LOOKUP_RATE_LIMITER, LOOKUP_RATE_PERIOD_SECONDS),
  validate('json', binLookupRequestSchema),
  async (c) => {
    const body = await answerBinLookup(c.env, c.get('caller'), c.req.valid('json'), systemClock());
    return c.json(body);
  },
  );
