import { z } from 'zod';
import { tokenizerOriginsField } from './tokenizer';

export const merchantCreateSchema = z.strictObject({
  name: z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters'),
  enhanced_bin_lookup: z.boolean().optional(),
  surcharge_rate_bps: z.int('must be an integer').min(0, 'must be 0 or more').max(10_000, 'must be at most 10000').optional(),
});

export const merchantPatchSchema = merchantCreateSchema.partial().extend({
  tokenizer_origins: tokenizerOriginsField.optional(),
});

export const keyCreateSchema = z.strictObject({
  type: z.enum(['secret', 'public'], 'must be "secret" or "public"'),
});

export const idParamSchema = z.object({
  id: z.string().regex(/^[a-z0-9_]{1,64}$/, 'malformed id'),
});
