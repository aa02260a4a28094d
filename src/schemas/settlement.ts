/**
 * Settlement batches (FluidPay's `POST /api/settlement/batch/search` and its fields) and the bodies
 * of capture, void and refund (docs/transactions.md, "Lifecycle" and "Settlement").
 */
import { z } from 'zod';
import { successEnvelopeSchema, timestampSchema } from './envelope';
import { captureDetailsShape } from './fluidpay-transaction';

/**
 * A settled total, minor units: a JSON number while exact as one (up to 2^53 − 1), past it the
 * exact decimal digits as a string, never a rounded number (docs/transactions.md, "Exact totals").
 */
const money = z.union([z.int().min(0), z.string().regex(/^[0-9]+$/)]);
const signedMoney = z.union([z.int(), z.string().regex(/^-?[0-9]+$/)]);
const day = z.iso.date('must be a date, YYYY-MM-DD');

export const settlementBatchSchema = z
  .strictObject({
    id: z.string().meta({ description: 'stl_{YYYYMMDD}_{processor id}: one batch per merchant, processor and day.' }),
    batch_date: z.string().meta({ description: 'The merchant day it settles (YYYY-MM-DD): the day that ends at its cutoff.' }),
    processor_id: z.string(),
    num_transactions: z.int().min(0),
    amount_captured: money.meta({ description: 'Sales and captures settled, minor units (a string of digits past 2^53 − 1: exact, never rounded).' }),
    amount_credit: money.meta({ description: 'Refunds and credits settled, minor units (a string of digits past 2^53 − 1).' }),
    net_deposit: signedMoney.meta({ description: 'amount_captured − amount_credit.' }),
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

/** A day bound: binbatch's YYYY-MM-DD, or FluidPay's RFC 3339 timestamp (its UTC date counts). */
const dayBound = z
  .union([day, z.iso.datetime({ offset: true })], 'must be a date (YYYY-MM-DD) or an RFC 3339 timestamp')
  .transform((value) => (value.length === 10 ? value : new Date(value).toISOString().slice(0, 10)));

/** FluidPay's search: a batch_date range, a batch id ({operator, value} or a plain id), limit 1–100 and offset. */
export const settlementSearchSchema = z
  .strictObject({
    batch_date: z
      .strictObject({ start_date: dayBound.optional(), end_date: dayBound.optional() })
      .optional()
      .meta({ description: 'Inclusive range of batch_date; a timestamp bound counts by its UTC date (FluidPay\'s `Day()` sends 00:00:00Z to 23:59:59Z).' }),
    settlement_batch_id: z
      .union(
        [
          z.string().max(200, 'must be at most 200 characters').transform((value) => ({ operator: '=' as const, value })),
          z.strictObject({ operator: z.enum(['=', '!='], 'must be = or !='), value: z.string().max(200, 'must be at most 200 characters') }),
        ],
        'must be a batch id or {"operator": "=" or "!=", "value": id}',
      )
      .optional(),
    limit: z.int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(20),
    offset: z.int('must be an integer').min(0, 'must be 0 or more').default(0),
  })
  .meta({ id: 'SettlementBatchSearch' });

/** One day and processor of the page, as FluidPay sums them (binbatch has one batch per day and processor). */
export const settlementSummarySchema = z
  .strictObject({
    merchant_id: z.string(),
    batch_date: z.string().meta({ description: 'YYYY-MM-DD' }),
    processor_id: z.string(),
    processor_name: z.string(),
    num_transactions: z.int().min(0),
    captured: money,
    credit: money,
  })
  .meta({ id: 'SettlementSummary' });

/** A batch as the search answers it: FluidPay's fields (batch_date a timestamp) and binbatch's. */
export const settlementSearchResultSchema = settlementBatchSchema
  .extend({
    batch_date: timestampSchema.meta({ description: 'The batch\'s day at 00:00:00Z (RFC 3339, as FluidPay answers it).' }),
    merchant_id: z.string(),
    processor_name: z.string(),
    processor_type: z.string(),
    batch_number: z.int().meta({ description: 'The day as a number, YYYYMMDD: one batch per processor and day.' }),
    response_code: z.int().meta({ description: '100: accepted by the processor.' }),
    response_message: z.string(),
  })
  .meta({ id: 'SettlementSearchResult' });

export const settlementSearchResponseSchema = z
  .strictObject({
    status: z.literal('success'),
    msg: z.literal('success'),
    data: z.strictObject({ summary: z.array(settlementSummarySchema), results: z.array(settlementSearchResultSchema) }),
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

const operationAmount = z.int('must be an integer (minor units)').min(1, 'must be 1 or more').max(99_999_999_999, 'must be at most 99999999999');

/**
 * Capture: `amount` optional (default: all authorized), and FluidPay's optional Level 2 details
 * (order and PO number, tax, shipping, the customer's IP, tax exemption), which replace what the
 * authorization recorded.
 */
export const captureBodySchema = z
  .strictObject({ amount: operationAmount.optional(), ...captureDetailsShape })
  .meta({ id: 'CaptureRequest' });
/** Refund: `amount` optional (default: all left to refund), and FluidPay's `surcharge`: the part of it that returns surcharge. */
export const refundBodySchema = z
  .strictObject({
    amount: operationAmount.optional(),
    surcharge: z
      .int('must be an integer (minor units)')
      .min(0, 'must not be negative')
      .max(99_999_999_999, 'must be at most 99999999999')
      .optional()
      .meta({ description: "The part of the refund that returns the original's surcharge (service_fee); at most the refund and the surcharge charged." }),
  })
  .meta({ id: 'RefundRequest' });

/**
 * What a capture or refund changes beyond its amount (FluidPay's optional fields), carried to the
 * ledger shard with the processor's answer and applied to the record it writes.
 */
export interface OperationDetails {
  taxAmount?: number;
  taxExempt?: boolean;
  shippingAmount?: number;
  orderId?: string;
  poNumber?: string;
  ipAddress?: string;
  /** Refund: the refund's service_fee. */
  surcharge?: number;
}
export const voidBodySchema = z.strictObject({}).meta({ id: 'VoidRequest' });

/** A merchant's settlement cutoff: a UTC time of day. */
export const settlementCutoffField = z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, 'must be a UTC time of day, HH:MM');
