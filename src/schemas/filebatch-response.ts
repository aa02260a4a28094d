/** What the batch endpoints answer. */
import { z } from 'zod';
import { successEnvelopeSchema, timestampSchema } from './envelope';
import { receiptCountsSchema } from './receipts';

export const BATCH_STATUSES = ['pending', 'queued', 'processing', 'completed', 'failed'] as const;

const batchId = z.string().meta({ example: 'bat_5y2kq7c3x0m4n8p1r6t9' });

/** The status operation's answer, bare, plus the reason of a failure. */
export const batchRecordSchema = z
  .strictObject({
    id: batchId,
    user_id: z.string().meta({ description: 'The owning merchant.' }),
    file_name: z.string(),
    status: z.enum(BATCH_STATUSES).meta({
      description: '`pending` (accepted) → `queued` (its first chunks sent) → `processing` → `completed` or `failed`. `unknown` is never stored. Pausing does not change it (see `paused`).',
    }),
    num_lines: z.int().min(0).meta({ description: 'Data rows in the file (header excluded).' }),
    processed_lines: z.int().min(0),
    created_at: timestampSchema,
    updated_at: timestampSchema,
    paused: z.boolean().meta({
      description:
        'Paused by the merchant (POST /api/filebatch/{id}/pause): no new chunk starts until it is resumed; `status` stays as it was. Always false once the batch has ended.',
    }),
    failure_reason: z.string().optional().meta({
      description: 'Only on a `failed` batch: why (`cancelled by the merchant` after POST /api/filebatch/{id}/cancel).',
    }),
    receipts: receiptCountsSchema.optional().meta({
      description: 'Only on GET /api/filebatch/{id}, once a row asked for an email receipt: how many are queued, sent and failed now (docs/receipts.md).',
    }),
  })
  .meta({
    id: 'BatchRecord',
    example: {
      id: 'bat_5y2kq7c3x0m4n8p1r6t9',
      user_id: 'demo0000000000000000',
      file_name: 'batch-sample.csv',
      status: 'completed',
      num_lines: 5,
      processed_lines: 5,
      created_at: '2026-11-21T05:30:00.000Z',
      updated_at: '2026-11-21T05:30:01.250Z',
      paused: false,
    },
  });

export type BatchRecord = z.infer<typeof batchRecordSchema>;

/** The upload's answer inside `data` (no user_id, no processed_lines). */
export const uploadedBatchSchema = z
  .strictObject({
    id: batchId,
    file_name: z.string(),
    status: z.literal('pending'),
    num_lines: z.int().min(0),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'UploadedBatch' });

export type UploadedBatch = z.infer<typeof uploadedBatchSchema>;

export const uploadResponseSchema = successEnvelopeSchema(uploadedBatchSchema).meta({
  id: 'UploadResponse',
  example: {
    status: 'success',
    msg: 'success',
    data: {
      id: 'bat_5y2kq7c3x0m4n8p1r6t9',
      file_name: 'batch-sample.csv',
      status: 'pending',
      num_lines: 5,
      created_at: '2026-11-21T05:30:00.000Z',
      updated_at: '2026-11-21T05:30:00.000Z',
    },
  },
});

/** What pause, resume and cancel answer: the envelope with the batch record after the action. */
export const batchControlResponseSchema = successEnvelopeSchema(batchRecordSchema).meta({ id: 'BatchControlResponse' });

/** The merchant's batches, newest first: the envelope plus the page it is. */
export const batchListResponseSchema = z
  .strictObject({
    status: z.literal('success'),
    msg: z.literal('success'),
    data: z.array(batchRecordSchema),
    total_count: z.int().min(0).meta({ description: "All of the merchant's batches." }),
    limit: z.int().min(1).max(100),
    offset: z.int().min(0),
  })
  .meta({ id: 'BatchList' });

export type BatchList = z.infer<typeof batchListResponseSchema>;
