/**
 * Operators' API for the lookup data: BIN and account range imports (CSV, streamed) and the
 * surcharge rules. Mounted at /admin behind the admin token (app.ts); the two imports are exempt
 * from the JSON body limit and enforce their own (IMPORT_LIMITS).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { validate } from '../middleware/validate';
import { surchargeRulesQuerySchema, surchargeRulesSchema } from '../schemas/lookup';
import { importAccountRanges, importBins, IMPORT_LIMITS } from '../services/bin-lookup/import';
import { listSurchargeRules, replaceOperatorRules } from '../services/bin-lookup/surcharge';

export const adminBins = new Hono<AppEnv>();

/** The CSV body as a stream, after checking its type and declared size. */
function csvBody(request: Request): ReadableStream<Uint8Array> {
  const type = request.headers.get('Content-Type') ?? '';
  if (!/^text\/(csv|plain)\b/i.test(type)) throw new AppError('unsupported_media_type', 'Content-Type must be text/csv');
  const declared = Number(request.headers.get('Content-Length') ?? '0');
  if (declared > IMPORT_LIMITS.maxBytes) {
    throw new AppError('payload_too_large', `body exceeds ${IMPORT_LIMITS.maxBytes} bytes; split the file (npm run bins:import does)`);
  }
  if (!request.body) throw new AppError('bad_request', 'the CSV is empty: a header row is required');
  return request.body;
}

adminBins.post('/bins/import', async (c) => {
  const result = await importBins(c.env, csvBody(c.req.raw), systemClock);
  return c.json(success(result));
});

adminBins.post('/bins/ranges/import', async (c) => {
  const result = await importAccountRanges(c.env, csvBody(c.req.raw), systemClock);
  return c.json(success(result));
});

/** Every rule (both origins, history included), or those in force on a date; of a place or an origin. */
adminBins.get('/surcharge-rules', validate('query', surchargeRulesQuerySchema), async (c) => {
  const query = c.req.valid('query');
  const rules = await listSurchargeRules(c.env, {
    inForceOn: query.in_force_on,
    country: query.country,
    region: query.country !== undefined ? query.region : undefined,
    origin: query.origin,
  });
  return c.json(success({ rules }));
});

/** Replaces the operator's rules (history included: keep older rows to keep their dates); the shipped ones stay. */
adminBins.put('/surcharge-rules', validate('json', surchargeRulesSchema), async (c) => {
  const { rules } = c.req.valid('json');
  return c.json(success({ rules: await replaceOperatorRules(c.env, rules, systemClock()) }));
});
