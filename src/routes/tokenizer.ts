/** Temp tokens for the hosted card-tokenization component: public or secret key. */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { checkExpiration } from '../lib/expiry';
import { systemClock } from '../lib/time';
import { requireAnyKey } from '../middleware/auth';
import { rateLimitPerKey } from '../middleware/key-rate-limit';
import { requireAllowedParentOrigin } from '../middleware/tokenizer-origin';
import { validate } from '../middleware/validate';
import { tokenCreateSchema } from '../schemas/tokenizer';
import { createTempToken } from '../services/tokens';

/** The TOKENIZER_RATE_LIMITER window in wrangler.toml (`period`). */
const TOKENIZER_RATE_PERIOD_SECONDS = 60;

export const tokenizer = new Hono<AppEnv>()
  .post(
  '/token',
  requireAnyKey,
  // Tokenizing is where card testers try numbers: limited per key before any other work.
  rateLimitPerKey((env) => env.TOKENIZER_RATE_LIMITER, TOKENIZER_RATE_PERIOD_SECONDS),
  requireAllowedParentOrigin,
  validate('json', tokenCreateSchema),
  async (c) => {
    const body = c.req.valid('json');
    const now = systemClock();
    if (!checkExpiration(body.cc_expiration, now).ok) throw new AppError('bad_request', 'cc_expiration: card has expired');
    const card = { number: body.cc_number, expiration: body.cc_expiration, ...(body.cc_cvc ? { cvc: body.cc_cvc } : {}) };
    const token = await createTempToken(c.env, c.get('caller').merchantId, card, now);
    return c.json(success(token), 201);
  },
  );
