/**
 * The token endpoint's browser check. Browsers send `Origin` on every POST; a server calling the
 * endpoint with its key sends none and is not concerned. A browser request must come from the
 * hosted frame (this service's own origin: CORS is never granted, so no other page can read an
 * answer anyway) and name the page that framed it, which must be one the merchant allowed.
 */
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { quoteInput } from '../lib/quote';
import { isTokenizerOriginAllowed } from '../services/tokenizer/origins';

/**
 * Sent by the hosted frame: the origin of the page around it, as the browser reported it on that
 * page's first message (MessageEvent.origin, which page script cannot forge).
 */
export const PARENT_ORIGIN_HEADER = 'Tokenizer-Parent-Origin';

export const requireAllowedParentOrigin = createMiddleware<AppEnv>(async (c, next) => {
  const origin = c.req.header('Origin');
  if (origin === undefined) return next();
  if (origin !== new URL(c.req.url).origin) {
    throw new AppError('forbidden', `browser requests must come from the hosted tokenizer frame, not from ${quoteInput(origin)}`);
  }
  const parent = c.req.header(PARENT_ORIGIN_HEADER);
  if (parent === undefined || parent === '') {
    throw new AppError('forbidden', `a browser request must name the page around the tokenizer frame in ${PARENT_ORIGIN_HEADER}`);
  }
  if (!(await isTokenizerOriginAllowed(c.env.DB, c.get('caller').merchantId, parent))) {
    throw new AppError('forbidden', `${quoteInput(parent)} is not in this merchant's tokenizer_origins`);
  }
  await next();
});
