import { settlementBatchDetailResponseSchema, settlementBatchIdParamSchema, settlementSearchResponseSchema, settlementSearchSchema, pageQuerySchema } from '../../schemas/settlement';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Settlement'];

export function registerSettlement(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/settlement/batch/search',
    operationId: 'searchSettlementBatches',
    tags,
    summary: "The merchant's settlement batches (FluidPay's search)",
    description: 'Filters: `batch_date` (start_date, end_date: inclusive), `settlement_batch_id`; `limit` 1–100 (default 20), `offset`. Newest day first.',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(settlementSearchSchema, { batch_date: { start_date: '2026-11-01', end_date: '2026-11-30' }, limit: 20 }) } },
    responses: { 200: ok('The batches and how many match in all.', settlementSearchResponseSchema), ...errors([400, 401, 413]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/settlement/batch/{id}',
    operationId: 'getSettlementBatch',
    tags,
    summary: 'A settlement batch with a page of its transactions',
    description:
      'The batch\'s exact totals and a page of its transactions, read from the ledger shards that settled them. A page spans at most 100 handoff pieces: before the end it may be shorter than `limit`; go on at `offset` plus the transactions answered.',
    security: SECRET_KEY,
    request: { params: settlementBatchIdParamSchema, query: pageQuerySchema },
    responses: { 200: ok('The batch and its transactions (limit 1–1000, default 100; offset).', settlementBatchDetailResponseSchema), ...errors([400, 401, 404]) },
  });
}
