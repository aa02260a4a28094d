/**
 * Settlement batches (FluidPay's `POST /api/settlement/batch/search` and its fields) and the bodies
 * of capture, void and refund (docs/transactions.md, "Lifecycle" and "Settlement").
 */
import { z } from 'zod';
import { successEnvelopeSchema, timestampSchema } from './envelope';

const money = z.int().min(0);
const day = z.iso.date('must be a date, YYYY-MM-DD');

export const settlementBatchSchema = z
  .strictObject({
    id: z.string().meta({ description: 'stl_{YYYYMMDD}_{processor id}: one batch per merchant, processor and day.' }),
    batch_date: z.string().meta({ description: 'The merchant day it settles (YYYY-MM-DD): the day that ends at its cutoff.' }),
    processor_id: z.string(),
    num_transactions: z.int().min(0),
    amount_captured: money.meta({ description: 'Sales and captures settled, minor units.' }),
    amount_credit: money.meta({ description: 'Refunds and credits settled, minor units.' }),
    net_deposit: z.int().meta({ description: 'amount_captured − amount_credit.' }),
    created_at: timestampSchema,
    updated_at: timestampSchema.meta({ description: 'When a run last added to it.' }),
  })
  .meta({ id: 'SettlementBatch' });

export const settlementTransactionSchema = z
  .strictObject({
    id: z.string().meta({ description: 'The transaction (GET /api/transaction/{id} answers it whole).' }),
    type: z.enum(['sale', 'authorize', 'credit', 'refund']),
    amount: money.meta({ description: 'Amount settled.' }),
  })
  .meta({ id: 'SettlementTransaction' });

/** FluidPay's search: a batch_date range, one batch id, limit 1–100 and offset. */
export const settlementSearchSchema = z
  .strictObject({
    batch_date: z
      .strictObject({ start_date: day.optional(), end_date: day.optional() })
      .optional()
      .meta({ description: 'Inclusive range of batch_date.' }),
    settlement_batch_id: z.string().max(200, 'must be at most 200 characters').optional(),
    limit: z.int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(20),
    offset: z.int('must be an integer').min(0, 'must be 0 or more').default(0),
  })
  .meta({ id: 'SettlementBatchSearch' });

export const settlementSearchResponseSchema = z
  .strictObject({
    status: z.literal('success'),
    msg: z.literal('success'),
    data: z.array(settlementBatchSchema),
    total_count: z.int().min(0),
  })
  .meta({ id: 'SettlementBatchList' });

export const settlementBatchIdParamSchema = z.object({
  id: z.string().regex(/^stl_[0-9]{8}_[A-Za-z0-9_]{1,80}$/, 'malformed settlement batch id'),
});

export const pageQuerySchema = z.object({
  limit: z.coerce.number('must be an integer').int('must be an integer').min(1, 'must be 1 or more').max(1000, 'must be at most 1000').default(100),
  offset: z.coerce.number('must be an integer').int('must be an integer').min(0, 'must be 0 or more').default(0),
});

export const settlementBatchDetailSchema = settlementBatchSchema
  .extend({
    transactions: z.array(settlementTransactionSchema).meta({ description: 'A page of its transactions (limit, offset).' }),
    limit: z.int(),
    offset: z.int(),
  })
  .meta({ id: 'SettlementBatchDetail' });

export const settlementBatchDetailResponseSchema = successEnvelopeSchema(settlementBatchDetailSchema);
export const settleResponseSchema = successEnvelopeSchema(z.array(settlementBatchSchema)).meta({ id: 'SettlementRun' });

/** Capture and refund: `amount` optional (default: all authorized; all left to refund). */
export const captureBodySchema = z
  .strictObject({
    amount: z.int('must be an integer (minor units)').min(1, 'must be 1 or more').max(99_999_999_999, 'must be at most 99999999999').optional(),
  })
  .meta({ id: 'CaptureRequest' });
export const refundBodySchema = captureBodySchema.meta({ id: 'RefundRequest' });
export const voidBodySchema = z.strictObject({}).meta({ id: 'VoidRequest' });

/** A merchant's settlement cutoff: a UTC time of day. */
export const settlementCutoffField = z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, 'must be a UTC time of day, HH:MM');
