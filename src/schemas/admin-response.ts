/** What the operators' API (/admin/*) answers, inside the success envelope. */
import { z } from 'zod';
import { PROCESSOR_TYPES } from './admin';
import { timestampSchema } from './envelope';
import { receiptLimitsSchema, receiptSettingsSchema } from './receipts';
import { RATE_TIERS } from './rate-tier';

export const merchantSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    enhanced_bin_lookup: z.boolean(),
    surcharge_rate_bps: z.int().min(0).max(10_000).meta({ description: '300 = 3.00%' }),
    max_credit_amount: z.int().min(0).meta({ description: 'The largest unreferenced credit, in minor units; 0 refuses them. Default 100000.' }),
    rate_tier: z.enum(RATE_TIERS).meta({ description: 'Which per-merchant limit counts its API transactions (docs/limits.md, "Rate tiers"). Default standard.' }),
    api_shards: z
      .strictObject({
        today: z.int().min(1).max(8).meta({ description: "Sub-shards today's API day has." }),
        count: z.int().min(1).max(8).meta({ description: 'Sub-shards every API day has from `from` on.' }),
        from: z.string().meta({ description: 'The UTC day (YYYY-MM-DD) `count` takes effect.', example: '2026-11-28' }),
      })
      .meta({
        description:
          'How many ledger sub-shards its API days are spread over, set by rate_tier (standard 1, high 2, max 8); a change takes effect from the first UTC day that starts at least an hour later (docs/capacity.md, "An API day in sub-shards").',
      }),
    receipt_settings: receiptSettingsSchema,
    receipt_limits: receiptLimitsSchema,
    settlement_cutoff: z.string().meta({ description: 'UTC time of day (HH:MM) its day ends: what it captured before then settles. Default 00:00.', example: '00:00' }),
    tokenizer_origins: z.array(z.string()).meta({
      description: 'Origins whose pages may frame the hosted tokenizer (docs/tokenizer.md); none by default.',
      example: ['https://shop.example'],
    }),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'Merchant' });

export type MerchantView = z.infer<typeof merchantSchema>;

export const createdMerchantSchema = merchantSchema
  .extend({
    secret_key: z.string().meta({ description: 'Shown once: only its hash is stored.' }),
    public_key: z.string().meta({ description: 'Shown once: only its hash is stored.' }),
  })
  .meta({ id: 'CreatedMerchant' });

export const createdKeySchema = z
  .strictObject({
    id: z.string().meta({ example: 'key_0a1b2c3d4e5f6g7h8i9j' }),
    type: z.enum(['secret', 'public']),
    key: z.string().meta({ description: 'Shown once: only its hash is stored.' }),
  })
  .meta({ id: 'CreatedKey' });

export const processorSchema = z
  .strictObject({
    id: z.string(),
    merchant_id: z.string(),
    type: z.enum(PROCESSOR_TYPES),
    name: z.string(),
    is_default: z.boolean(),
    created_at: timestampSchema,
  })
  .meta({ id: 'Processor' });

export const importResultSchema = z
  .strictObject({
    imported: z.int().min(0),
    skipped: z.int().min(0).meta({ description: 'Bad rows, every one counted (at most 100 are listed in `errors`).' }),
    errors: z.array(z.strictObject({ line: z.int().min(1), msg: z.string() })),
  })
  .meta({ id: 'ImportResult', example: { imported: 1, skipped: 0, errors: [] } });

export const surchargeRuleSchema = z
  .strictObject({
    origin: z.enum(['shipped', 'operator']).meta({ description: "`shipped`: the release's rules (kept current by each release); `operator`: yours (PUT)." }),
    layer: z.enum(['law', 'network']),
    country: z.string().regex(/^[A-Z]{2}$/),
    region: z.string().meta({ description: 'A region code, or `*` for the whole country.' }),
    effective_from: z.iso.date().meta({ description: 'From local midnight of this day at the place of sale.' }),
    brands: z.array(z.string()).meta({ description: 'Only cards of these brands (empty: any).' }),
    except_brands: z.array(z.string()).meta({ description: 'Not cards of these brands.' }),
    funding: z.array(z.enum(['credit', 'debit', 'prepaid', 'charge'])).meta({ description: 'Only cards of these funding types (empty: any).' }),
    card_class: z.enum(['consumer', 'commercial']).nullable(),
    issuer_region: z
      .array(z.enum(['domestic', 'area', 'foreign']))
      .meta({ description: 'Only cards issued in the country of sale, in its economic area (EEA), or elsewhere (empty: any).' }),
    surcharge: z.enum(['allowed', 'prohibited', 'commercial_only']),
    max_rate_bps: z.int().min(0).max(10_000).nullable(),
    at_cost: z.boolean().meta({ description: "Only up to the merchant's cost of acceptance (its configured rate)." }),
    note: z.string().nullable(),
  })
  .meta({ id: 'SurchargeRule' });

export const surchargeRulesResponseSchema = z.strictObject({ rules: z.array(surchargeRuleSchema) }).meta({ id: 'SurchargeRules' });
