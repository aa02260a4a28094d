import { z } from 'zod';
import { parseExpiry } from '../lib/expiry';
import { isValidCardNumber } from '../lib/card-number';

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
