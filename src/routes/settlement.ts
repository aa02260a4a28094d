/**
 * Settlement batches of the caller's merchant (docs/transactions.md, "Settlement"):
 * POST /api/settlement/batch/search (FluidPay's filters) and GET /api/settlement/batch/{id}.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { pageQuerySchema, settlementBatchIdParamSchema, settlementSearchSchema } from '../schemas/settlement';
import { getSettlementBatch, searchSettlementBatches } from '../services/settlement/runs';

export const settlement = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post('/batch/search', validate('json', settlementSearchSchema), async (c) => {
    const body = c.req.valid('json');
    const found = await searchSettlementBatches(c.env, c.get('caller').merchantId, {
      batchDateFrom: body.batch_date?.start_date ?? null,
      batchDateTo: body.batch_date?.end_date ?? null,
      settlementBatchId: body.settlement_batch_id ?? null,
      limit: body.limit,
      offset: body.offset,
    });
    return c.json({ status: 'success' as const, msg: 'success' as const, data: found.batches, total_count: found.total });
  })
  .get('/batch/:id', validate('param', settlementBatchIdParamSchema), validate('query', pageQuerySchema), async (c) => {
    const page = c.req.valid('query');
    const found = await getSettlementBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id, page);
    if (!found) throw new AppError('not_found', 'settlement batch not found');
    return c.json(success({ ...found.batch, transactions: found.transactions, limit: page.limit, offset: page.offset }));
  });
