import { z } from 'zod';
import { idempotencyKeyField } from './transaction-http';

export const batchIdParamSchema = z.object({
  id: z.string().regex(/^[a-z0-9_]{1,64}$/, 'malformed batch id'),
});

/** `?allow_duplicate=true`: the same bytes as an upload of the last 24 hours are meant (docs/batch.md). */
const allowDuplicate = z
  .enum(['true', 'false'], 'must be true or false')
  .optional()
  .transform((value) => value === 'true');

/** Raw CSV uploads (Content-Type: text/csv) name the file in the query string. */
export const uploadQuerySchema = z.object({
  file_name: z.string().trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
  allow_duplicate: allowDuplicate,
  /** `?validate_only=true`: the file is read and its rows checked; nothing is stored or charged. */
  validate_only: z
    .enum(['true', 'false'], 'must be true or false')
    .optional()
    .transform((value) => value === 'true'),
});

/** `POST /api/filebatch/validate`: the file's name only (nothing is stored, so no duplicate to allow). */
export const validateQuerySchema = z.object({ file_name: uploadQuerySchema.shape.file_name });

/** The console's upload takes no file name (its form names the file). */
export const consoleUploadQuerySchema = z.object({ allow_duplicate: allowDuplicate });

/** An upload's Idempotency-Key: the same key and file within 24 hours answer the first batch again. */
export const uploadHeaderSchema = z.object({ 'idempotency-key': idempotencyKeyField });

export const listQuerySchema = z.object({
  limit: z.coerce.number('must be an integer').int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(20),
  offset: z.coerce.number('must be an integer').int('must be an integer').min(0, 'must be 0 or more').default(0),
});

/** `?partial=true`: a failed batch's results as far as they go (docs/batch.md, "Partial download"). */
export const downloadQuerySchema = z.object({
  partial: z
    .enum(['true', 'false'], 'must be true or false')
    .optional()
    .transform((value) => value === 'true'),
});
