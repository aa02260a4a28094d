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
  })
  // What the refinement above enforces, in terms a generator or validator reads: exactly one source.
  .meta({
    oneOf: [
      { title: 'By BIN', required: ['bin'] },
      { title: 'By temp token', required: ['temp_token'] },
      { title: 'By vault customer', required: ['customer_id'] },
    ],
    dependentRequired: { payment_method_id: ['customer_id'] },
  });

export type BinLookupRequest = z.infer<typeof binLookupRequestSchema>;

const ruleSchema = z.strictObject({
  country: z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter country code').transform((v) => v.toUpperCase()),
  region: z
    .string()
    .regex(/^(\*|[A-Za-z0-9]{1,3})$/, 'must be a code of 1 to 3 letters or digits, or * for the whole country')
    .transform((v) => v.toUpperCase()),
  effective_from: z.iso.date({ error: 'must be a date, YYYY-MM-DD' }),
  surcharge: z.enum(['allowed', 'prohibited', 'commercial_only'], { error: 'must be allowed, prohibited or commercial_only' }),
  max_rate_bps: z.number().int().min(0).max(10_000).nullable().default(null),
  note: z.string().max(500).nullable().default(null),
});

export const surchargeRulesSchema = z
  .strictObject({ rules: z.array(ruleSchema).min(1, 'must hold at least one rule').max(1000) })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.rules.forEach((rule, index) => {
      const key = `${rule.country}/${rule.region}/${rule.effective_from}`;
      if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['rules', index], message: `duplicate rule ${key}` });
      seen.add(key);
    });
  });
