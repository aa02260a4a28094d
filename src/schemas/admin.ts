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

/** Processor implementations this build has (services/transactions/processors/registry.ts). */
export const PROCESSOR_TYPES = ['sandbox'] as const;
export type ProcessorType = (typeof PROCESSOR_TYPES)[number];

export const processorCreateSchema = z.strictObject({
  name: z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters'),
  type: z.enum(PROCESSOR_TYPES, `must be one of: ${PROCESSOR_TYPES.join(', ')}`).default('sandbox'),
  is_default: z.boolean('must be true or false').default(false),
});

export const idParamSchema = z.object({
  id: z.string().regex(/^[a-z0-9_]{1,64}$/, 'malformed id'),
});
