import { z } from 'zod';
import { parseExpiry } from '../lib/expiry';
import { isValidCardNumber } from '../lib/card-number';
import { originProblem } from '../lib/origin';
import { quoteInput } from '../lib/quote';
import { urlContainsCardNumber } from '../lib/redact';

/** "tok_" + 32 base64url characters (24 random bytes, 192 bits). */
export const TEMP_TOKEN_PATTERN = /^tok_[A-Za-z0-9_-]{32}$/;

/**
 * A card number as typed: spaces and dashes are dropped, then 12-19 digits passing Luhn.
 * Messages never quote the value (it is card data).
 */
export const cardNumberField = z
  .string('must be a string of digits')
  .transform((value) => value.replace(/[\s-]/g, ''))
  .refine((value) => /^[0-9]{12,19}$/.test(value), 'must be 12 to 19 digits')
  .refine((value) => isValidCardNumber(value), 'fails the Luhn check');

/** MM/YY, MMYY, MM/YYYY or MMYYYY (that it is not expired is checked against the clock later). */
export const expirationField = z
  .string('must be a string like "12/29"')
  .refine((value) => parseExpiry(value) !== null, 'must be MM/YY, MMYY, MM/YYYY or MMYYYY');

export const tokenCreateSchema = z.strictObject({
  cc_number: cardNumberField,
  cc_expiration: expirationField,
  cc_cvc: z
    .string('must be a string of 3 or 4 digits')
    .regex(/^[0-9]{3,4}$/, 'must be 3 or 4 digits')
    .optional(),
});

/** Most origins one merchant may list: each is written into the frame's CSP header. */
export const MAX_TOKENIZER_ORIGINS = 20;

/**
 * The web origins allowed to frame the hosted tokenizer. The whole list is replaced on every
 * change; each bad entry is reported on its own, quoted, with its index in the field name.
 */
export const tokenizerOriginsField = z
  .array(z.string('must be a string like "https://shop.example"'), 'must be a list of origins like ["https://shop.example"]')
  .max(MAX_TOKENIZER_ORIGINS, `must list at most ${MAX_TOKENIZER_ORIGINS} origins`)
  .superRefine((origins, ctx) => {
    const seen = new Set<string>();
    origins.forEach((origin, index) => {
      // An origin goes into the frame's CSP header and is answered back: never a card number.
      const problem = urlContainsCardNumber(origin)
        ? 'must not contain a card number'
        : (originProblem(origin) ?? (seen.has(origin) ? 'is listed twice' : null));
      if (problem) ctx.addIssue({ code: 'custom', path: [index], message: `${quoteInput(origin)} ${problem}` });
      seen.add(origin);
    });
  });
