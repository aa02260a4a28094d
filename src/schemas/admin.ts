import { z } from 'zod';
import { receiptLimitsInputSchema, receiptSettingsInputSchema } from './receipts';
import { nameField } from './text-fields';
import { tokenizerOriginsField } from './tokenizer';
import { RATE_TIERS } from './rate-tier';

export const merchantCreateSchema = z.strictObject({
  // Stored, answered, the user_name of every transaction record, the From name and the subject of
  // its email receipts: a name's one rule (no card number, nothing that ends a header line or misleads).
  name: nameField(100),
  enhanced_bin_lookup: z.boolean().optional(),
  surcharge_rate_bps: z.int('must be an integer').min(0, 'must be 0 or more').max(10_000, 'must be at most 10000').optional(),
  /** Minor units; 0 refuses unreferenced credits. Default DEFAULT_MAX_CREDIT_AMOUNT. */
  max_credit_amount: z.int('must be an integer').min(0, 'must be 0 or more').max(99_999_999_999, 'must be at most 99999999999').optional(),
  /** The UTC time of day the merchant's day ends and its captured transactions settle; default 00:00. */
  settlement_cutoff: z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, 'must be a UTC time of day, HH:MM').optional(),
  /** Its rate tier: which per-merchant limit counts its API transactions (docs/limits.md, "Rate tiers"). */
  rate_tier: z.enum(RATE_TIERS, `must be one of: ${RATE_TIERS.join(', ')}`).optional(),
  /** What its email receipts show besides its name (docs/receipts.md). */
  receipt_settings: receiptSettingsInputSchema.optional(),
  /** How many receipts it may send: a day, a minute, to one address a day (docs/receipts.md, "Budgets"). */
  receipt_limits: receiptLimitsInputSchema.optional(),
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
  name: nameField(100),
  type: z.enum(PROCESSOR_TYPES, `must be one of: ${PROCESSOR_TYPES.join(', ')}`).default('sandbox'),
  is_default: z.boolean('must be true or false').default(false),
});

export const idParamSchema = z.object({
  id: z.string().regex(/^[a-z0-9_]{1,64}$/, 'malformed id'),
});
