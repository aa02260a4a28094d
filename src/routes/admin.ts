/** Operators' API: merchants and their API keys. Authenticated by ADMIN_TOKEN (see app.ts). */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { validate } from '../middleware/validate';
import { merchantCreateSchema, merchantPatchSchema, keyCreateSchema, idParamSchema } from '../schemas/admin';
import { changeMerchant, createKey, createMerchant, revokeKey } from '../services/merchants';
import { tokenizerOrigins } from '../services/tokenizer/origins';
import { findMerchant } from '../storage/merchants';
import { DEFAULT_CUTOFF } from '../services/settlement/cutoff';
import { setSettlementCutoff, settleMerchantNow, settlementCutoff } from '../services/settlement/runs';
import { receiptSettings, setReceiptSettings } from '../services/receipts/settings';
import { merchantReceiptLimits } from '../services/receipts/budget';
import { DEFAULT_RATE_TIER } from '../services/limits/rate-tiers';
import { readRateTier } from '../storage/rate-tiers';
import { readApiShards } from '../storage/api-shards';
import { apiShardsView } from '../services/transactions/api-shards';

/** The merchant's API sub-shards now and from when (services/transactions/api-shards.ts). */
async function apiShardsNow(db: D1Database, merchantId: string): Promise<ReturnType<typeof apiShardsView>> {
  return apiShardsView(await readApiShards(db, merchantId), systemClock());
}

export const admin = new Hono<AppEnv>();

admin.post('/merchants', validate('json', merchantCreateSchema), async (c) => {
  const { settlement_cutoff: cutoff, receipt_settings: receipts, receipt_limits: limits, ...input } = c.req.valid('json');
  const { merchant, secretKey, publicKey } = await createMerchant(c.env, input, systemClock);
  const settlementCutoff = cutoff === undefined ? DEFAULT_CUTOFF : await setSettlementCutoff(c.env, merchant.id, cutoff, systemClock);
  const receiptSettingsNow = receipts === undefined ? await receiptSettings(c.env.DB, merchant.id) : await setReceiptSettings(c.env.DB, merchant.id, receipts, systemClock);
  return c.json(
    success({ ...merchant, rate_tier: input.rate_tier ?? DEFAULT_RATE_TIER, api_shards: await apiShardsNow(c.env.DB, merchant.id), receipt_settings: receiptSettingsNow, receipt_limits: await merchantReceiptLimits(c.env, merchant.id, limits, systemClock), settlement_cutoff: settlementCutoff, tokenizer_origins: [], secret_key: secretKey, public_key: publicKey }),
    201,
  );
});

admin.get('/merchants/:id', validate('param', idParamSchema), async (c) => {
  const merchant = await findMerchant(c.env.DB, c.req.valid('param').id);
  if (!merchant) throw new AppError('not_found', 'merchant not found');
  return c.json(
    success({
      ...merchant,
      rate_tier: (await readRateTier(c.env.DB, merchant.id)) ?? DEFAULT_RATE_TIER,
      api_shards: await apiShardsNow(c.env.DB, merchant.id),
      receipt_settings: await receiptSettings(c.env.DB, merchant.id),
      receipt_limits: await merchantReceiptLimits(c.env, merchant.id, undefined, systemClock),
      settlement_cutoff: await settlementCutoff(c.env, merchant.id),
      tokenizer_origins: await tokenizerOrigins(c.env.DB, merchant.id),
    }),
  );
});

admin.patch('/merchants/:id', validate('param', idParamSchema), validate('json', merchantPatchSchema), async (c) => {
  const { settlement_cutoff: cutoff, receipt_settings: receipts, receipt_limits: limits, ...changes } = c.req.valid('json');
  const merchant = await changeMerchant(c.env, c.req.valid('param').id, changes, systemClock);
  if (!merchant) throw new AppError('not_found', 'merchant not found');
  const settlementCutoffNow = cutoff === undefined ? await settlementCutoff(c.env, merchant.id) : await setSettlementCutoff(c.env, merchant.id, cutoff, systemClock);
  const receiptSettingsNow = receipts === undefined ? await receiptSettings(c.env.DB, merchant.id) : await setReceiptSettings(c.env.DB, merchant.id, receipts, systemClock);
  return c.json(
    success({ ...merchant, rate_tier: (await readRateTier(c.env.DB, merchant.id)) ?? DEFAULT_RATE_TIER, api_shards: await apiShardsNow(c.env.DB, merchant.id), receipt_settings: receiptSettingsNow, receipt_limits: await merchantReceiptLimits(c.env, merchant.id, limits, systemClock), settlement_cutoff: settlementCutoffNow, tokenizer_origins: await tokenizerOrigins(c.env.DB, merchant.id) }),
  );
});

// Settles the merchant's transactions awaiting settlement now, as if its cutoff had passed: 200 when
// the run finished, 202 when a ledger shard failed and the merchant's alarm finishes the run.
admin.post('/merchants/:id/settle', validate('param', idParamSchema), async (c) => {
  const merchantId = c.req.valid('param').id;
  if (!(await findMerchant(c.env.DB, merchantId))) throw new AppError('not_found', 'merchant not found');
  const outcome = await settleMerchantNow(c.env, merchantId, systemClock);
  return c.json(success(outcome.batches), outcome.finished ? 200 : 202);
});

admin.post('/merchants/:id/keys', validate('param', idParamSchema), validate('json', keyCreateSchema), async (c) => {
  const merchantId = c.req.valid('param').id;
  if (!(await findMerchant(c.env.DB, merchantId))) throw new AppError('not_found', 'merchant not found');
  const { record, key } = await createKey(c.env, merchantId, c.req.valid('json').type, systemClock);
  return c.json(success({ id: record.id, type: record.type, key }), 201);
});

admin.delete('/keys/:id', validate('param', idParamSchema), async (c) => {
  const { id } = c.req.valid('param');
  if (!(await revokeKey(c.env, id, systemClock))) throw new AppError('not_found', 'key not found');
  // Every DELETE answers 200 with { id, deleted: true } in the envelope (docs/api.md, "Conventions of the API").
  return c.json(success({ id, deleted: true }));
});
