/**
 * The live progress stream of a batch, and the stream tokens that open it from a browser.
 * Mounted on /api/filebatch before the batch routes, whose secret-key-only guard would refuse
 * a browser's token.
 *
 * Who may read a stream (the first credential present decides; a later same-origin session
 * cookie for the batch console is one more entry in `streamReaders`):
 *  - the secret key in Authorization (servers, curl, fetch-based readers);
 *  - `?token=bst_…`, minted by POST /api/filebatch/{id}/events/token with the secret key: a
 *    10-minute capability to read this one batch, which the merchant's server hands to its page
 *    (EventSource sends no headers, and a secret key must never be put in a URL); it ends when
 *    the key that minted it is revoked.
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { credentialFrom, isLookupable, requireSecretKey } from '../middleware/auth';
import { sessionFromCookie } from '../middleware/console-session';
import { validate } from '../middleware/validate';
import { batchIdParamSchema } from '../schemas/filebatch';
import { batchEventsQuerySchema } from '../schemas/webhooks';
import { merchantForStreamToken, mintBatchStreamToken, openBatchStream } from '../services/batches/stream';
import { authenticateKey } from '../services/merchants';

export const batchEvents = new Hono<AppEnv>();

/** A reader of the stream: its merchant, and whether the answer may be read by any web origin. */
interface StreamReader {
  merchantId: string;
  /** Token readers carry no ambient credential (no cookie, no key), so any origin may read. */
  crossOrigin: boolean;
}

type ReaderResolver = (c: Context<AppEnv>, batchId: string) => Promise<StreamReader | null | undefined>;

/** undefined: this credential was not presented; null: presented and refused. */
const streamReaders: ReaderResolver[] = [
  async (c) => {
    if (c.req.header('Authorization') === undefined) return undefined;
    const rawKey = credentialFrom(c.req.header('Authorization'));
    const caller = rawKey === null || !isLookupable(rawKey) ? null : await authenticateKey(c.env, rawKey);
    return caller?.keyType === 'secret' ? { merchantId: caller.merchantId, crossOrigin: false } : null;
  },
  async (c, batchId) => {
    const token = c.req.query('token');
    if (token === undefined) return undefined;
    const merchantId = await merchantForStreamToken(c.env, batchId, token, systemClock);
    return merchantId === null ? null : { merchantId, crossOrigin: true };
  },
  // The batch console's session cookie (SameSite=Strict): its page's EventSource sends it.
  async (c) => {
    const session = await sessionFromCookie(c);
    return session === undefined ? undefined : session && { merchantId: session.caller.merchantId, crossOrigin: false };
  },
];

async function streamReader(c: Context<AppEnv>, batchId: string): Promise<StreamReader> {
  for (const resolve of streamReaders) {
    const reader = await resolve(c, batchId);
    if (reader === null) throw new AppError('unauthorized', 'invalid, revoked or expired credential (a secret API key or a stream token)');
    if (reader) return reader;
  }
  throw new AppError('unauthorized', 'missing credential: a secret API key in the Authorization header, or ?token= from POST /api/filebatch/{id}/events/token');
}

batchEvents.get('/:id/events', validate('param', batchIdParamSchema), validate('query', batchEventsQuerySchema), async (c) => {
  const { id } = c.req.valid('param');
  const reader = await streamReader(c, id);
  const outcome = await openBatchStream(c.env, reader.merchantId, id, c.req.header('Last-Event-ID') ?? null);
  if (!outcome.ok) {
    if (outcome.reason === 'not_found') throw new AppError('not_found', 'batch not found');
    // 204 tells an EventSource that reconnected after the final state to stop reconnecting.
    return c.body(null, 204);
  }
  const headers: Record<string, string> = { 'Content-Type': 'text/event-stream; charset=utf-8', 'X-Accel-Buffering': 'no' };
  if (reader.crossOrigin) headers['Access-Control-Allow-Origin'] = '*';
  return c.body(outcome.body, 200, headers);
});

batchEvents.post('/:id/events/token', requireSecretKey, validate('param', batchIdParamSchema), async (c) => {
  const minted = await mintBatchStreamToken(c.env, c.get('caller'), c.req.valid('param').id, systemClock);
  if (!minted) throw new AppError('not_found', 'batch not found');
  return c.json(success(minted), 201);
});
