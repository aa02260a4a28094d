/** zod schemas of the BIN lookup request and the surcharge rules. */
import { z } from 'zod';
import { TEMP_TOKEN_PATTERN } from './tokenizer';
import { CUSTOMER_ID_PATTERN, PAYMENT_METHOD_ID_PATTERN } from './vault';

// Patterns spell out [0-9] and [A-Za-z]: \d or letter classes could admit other scripts' digits.
const text = () => z.string({ error: 'must be a string' });

export const binLookupRequestSchema = z
  .strictObject({
    bin: text().regex(/^[0-9]{6,19}$/, 'must be 6 to 19 digits (0-9 only)').optional(),
    temp_token: text().regex(TEMP_TOKEN_PATTERN, 'is not a valid token (tok_ and 32 characters)').optional(),
    customer_id: text().regex(CUSTOMER_ID_PATTERN, 'must be 1 to 40 letters, digits, ".", "-", "_" or "^"').optional(),
    payment_method_id: text()
      .regex(PAYMENT_METHOD_ID_PATTERN, 'must be 1 to 64 letters, digits, ".", "-", "_" or "^"')
      .optional(),
    country: text()
      .regex(/^[A-Za-z]{2}$/, 'must be a two-letter country code')
      .transform((value) => value.toUpperCase())
      .optional(),
    state: text()
      .regex(/^[A-Za-z0-9]{1,3}$/, 'must be a region code of 1 to 3 letters or digits, such as CA')
      .transform((value) => value.toUpperCase())
      .optional(),
    amount: z
      .int('must be a whole number of minor units (cents)')
      .min(1, 'must be 1 or more (minor units)')
      .max(99_999_999_999, 'must be at most 99999999999')
      .optional()
      .meta({ description: 'Minor units: with `country` and `state`, the answer adds the surcharge the merchant may add to it.' }),
  })
  .superRefine((body, ctx) => {
    const sources = (['bin', 'temp_token', 'customer_id'] as const).filter((field) => body[field] !== undefined);
    if (sources.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['bin'], message: 'one of bin, temp_token or customer_id is required' });
    } else if (sources.length > 1) {
      ctx.addIssue({ code: 'custom', path: [sources[1] ?? 'bin'], message: `send only one of bin, temp_token, customer_id (got ${sources.join(', ')})` });
    }
    if (body.payment_method_id !== undefined && body.customer_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['payment_method_id'], message: 'is only used with customer_id' });
    }
    if (body.amount !== undefined && (body.country === undefined || body.state === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['amount'], message: 'needs country and state (the place of sale, whose rules decide the surcharge)' });
    }
  })
  // What the refinement above enforces, in terms a generator or validator reads: exactly one source.
  .meta({
    oneOf: [
      { title: 'By BIN', required: ['bin'] },
      { title: 'By temp token', required: ['temp_token'] },
      { title: 'By vault customer', required: ['customer_id'] },
    ],
    dependentRequired: { payment_method_id: ['customer_id'], amount: ['country', 'state'] },
  });

export type BinLookupRequest = z.infer<typeof binLookupRequestSchema>;

const brandList = z
  .array(
    text()
      .regex(/^[A-Za-z0-9][A-Za-z0-9 _-]{0,29}$/, 'must be a brand id such as visa (letters, digits, spaces, - or _)')
      .transform((v) => v.toLowerCase().trim()),
  )
  .max(30, 'at most 30 brands')
  .default([]);

const ruleSchema = z
  .strictObject({
    // GET answers the origin; a PUT holds only the operator's own rules.
    origin: z
      .literal('operator', { error: 'rules of origin shipped come with the release: PUT only your own rules (GET ?origin=operator)' })
      .optional(),
    layer: z.enum(['law', 'network'], { error: 'must be law or network' }).default('law'),
    country: z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter country code').transform((v) => v.toUpperCase()),
    region: z
      .string()
      .regex(/^(\*|[A-Za-z0-9]{1,3})$/, 'must be a code of 1 to 3 letters or digits, or * for the whole country')
      .transform((v) => v.toUpperCase()),
    effective_from: z.iso.date({ error: 'must be a date, YYYY-MM-DD' }),
    brands: brandList,
    except_brands: brandList,
    funding: z
      .array(z.enum(['credit', 'debit', 'prepaid', 'charge'], { error: 'must be credit, debit, prepaid or charge' }))
      .max(4)
      .default([]),
    card_class: z.enum(['consumer', 'commercial'], { error: 'must be consumer, commercial or null' }).nullable().default(null),
    issuer_region: z
      .array(z.enum(['domestic', 'area', 'foreign'], { error: 'must be domestic, area or foreign' }))
      .max(3)
      .default([]),
    surcharge: z.enum(['allowed', 'prohibited', 'commercial_only'], { error: 'must be allowed, prohibited or commercial_only' }),
    max_rate_bps: z.number().int().min(0).max(10_000).nullable().default(null),
    at_cost: z.boolean({ error: 'must be true or false' }).default(false),
    note: z.string().max(500).nullable().default(null),
  })
  .refine((rule) => rule.brands.length === 0 || rule.except_brands.length === 0, {
    path: ['except_brands'],
    message: 'give brands or except_brands, not both',
  });

/** The key of a rule: two rules with the same key could not both be stored. */
const ruleKey = (rule: z.infer<typeof ruleSchema>) =>
  [rule.layer, rule.country, rule.region, rule.effective_from, rule.brands, rule.except_brands, rule.funding, rule.card_class ?? '', rule.issuer_region]
    .map((part) => (Array.isArray(part) ? [...new Set(part)].sort().join(',') : part))
    .join('/');

/** PUT /admin/surcharge-rules: the operator's whole rule set (may be empty: the shipped rules stay). */
export const surchargeRulesSchema = z
  .strictObject({ rules: z.array(ruleSchema).max(1000, 'at most 1000 rules') })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.rules.forEach((rule, index) => {
      const key = ruleKey(rule);
      if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['rules', index], message: `duplicate rule ${rule.country}/${rule.region}/${rule.effective_from} (same layer and conditions)` });
      seen.add(key);
    });
  });

/** GET /admin/surcharge-rules: every rule, or those in force on a date, of a place or an origin. */
export const surchargeRulesQuerySchema = z.strictObject({
  in_force_on: z.iso.date({ error: 'must be a date, YYYY-MM-DD' }).optional(),
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, 'must be a two-letter country code')
    .transform((v) => v.toUpperCase())
    .optional(),
  region: z
    .string()
    .regex(/^[A-Za-z0-9]{1,3}$/, 'must be a region code of 1 to 3 letters or digits')
    .transform((v) => v.toUpperCase())
    .optional()
    .meta({ description: "With `country`: the rules that apply in this region (its own and the whole country's)." }),
  origin: z.enum(['shipped', 'operator'], { error: 'must be shipped or operator' }).optional(),
}).refine((query) => query.region === undefined || query.country !== undefined, { path: ['region'], message: 'is only used with country' });
