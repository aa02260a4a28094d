/**
 * Settlement batches of the caller's merchant (docs/transactions.md, "Settlement"):
 * POST /api/settlement/batch/search (FluidPay's filters and answer) and GET /api/settlement/batch/{id}.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { pageQuerySchema, settlementBatchIdParamSchema, settlementSearchSchema } from '../schemas/settlement';
import { getSettlementBatch, searchSettlementBatches } from '../services/settlement/runs';
import { merchantProcessors } from '../services/transactions/processors/registry';
import { systemClock } from '../lib/time';

export const settlement = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post('/batch/search', validate('json', settlementSearchSchema), async (c) => {
    const body = c.req.valid('json');
    const { merchantId } = c.get('caller');
    const [found, processors] = await Promise.all([
      searchSettlementBatches(c.env, merchantId, {
        batchDateFrom: body.batch_date?.start_date ?? null,
        batchDateTo: body.batch_date?.end_date ?? null,
        settlementBatchId: body.settlement_batch_id ?? null,
        limit: body.limit,
        offset: body.offset,
      }),
      merchantProcessors(c.env.DB, merchantId, systemClock),
    ]);
    // FluidPay's answer: a summary per day and processor, and the batches; an empty page is two empty lists.
    const byId = new Map(processors.map((p) => [p.id, p]));
    const results = found.batches.map((batch) => ({
      ...batch,
      batch_date: `${batch.batch_date}T00:00:00.000Z`,
      merchant_id: merchantId,
      processor_name: byId.get(batch.processor_id)?.name ?? batch.processor_id,
      processor_type: byId.get(batch.processor_id)?.type ?? 'sandbox',
      batch_number: Number(batch.batch_date.replaceAll('-', '')),
      response_code: 100,
      response_message: 'accepted',
    }));
    const summary = results.map((r) => ({
      merchant_id: merchantId,
      batch_date: r.batch_date.slice(0, 10),
      processor_id: r.processor_id,
      processor_name: r.processor_name,
      num_transactions: r.num_transactions,
      captured: r.amount_captured,
      credit: r.amount_credit,
    }));
    return c.json({ status: 'success' as const, msg: 'success' as const, data: { summary, results }, total_count: found.total });
  })
  .get('/batch/:id', validate('param', settlementBatchIdParamSchema), validate('query', pageQuerySchema), async (c) => {
    const page = c.req.valid('query');
    const found = await getSettlementBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id, page);
    if (!found) throw new AppError('not_found', 'settlement batch not found');
    return c.json(success({ ...found.batch, transactions: found.transactions, limit: page.limit, offset: page.offset }));
  });
