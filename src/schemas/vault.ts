import { z } from 'zod';
import { isValidRoutingNumber } from '../lib/aba';
import { containsCardNumber } from '../lib/card-number';
import { TEMP_TOKEN_PATTERN } from './tokenizer';
import { cardNumberField, expirationField } from './tokenizer';

export const CUSTOMER_ID_PATTERN = /^[A-Za-z0-9]{1,40}$/;
export const PAYMENT_METHOD_ID_PATTERN = /^[A-Za-z0-9_]{1,64}$/;

/** Ids and free text are stored and answered in plain text: a card number pasted there is refused. */
const NO_CARD_NUMBER = 'must not contain a card number';
export const customerIdField = z
  .string()
  .regex(CUSTOMER_ID_PATTERN, 'must be 1 to 40 letters or digits')
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);
export const paymentMethodIdField = z
  .string()
  .regex(PAYMENT_METHOD_ID_PATTERN, 'must be 1 to 64 letters, digits or underscores')
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);

export const customerParamSchema = z.object({ id: customerIdField });

/** A card given by number + expiration, or by a temp token (whose expiration is used unless one is sent). */
export const cardSchema = z
  .strictObject({
    number: cardNumberField.optional(),
    temp_token: z.string().regex(TEMP_TOKEN_PATTERN, 'malformed temp token (expected tok_ and 32 characters)').optional(),
    expiration: expirationField.optional(),
  })
  .superRefine((card, ctx) => {
    if ((card.number === undefined) === (card.temp_token === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['number'], message: 'exactly one of number or temp_token is required' });
    }
    if (card.number !== undefined && card.expiration === undefined) {
      ctx.addIssue({ code: 'custom', path: ['expiration'], message: 'is required with number' });
    }
  });

export const achSchema = z.strictObject({
  account_number: z.string('is required').regex(/^[0-9]{4,17}$/, 'must be 4 to 17 digits'),
  routing_number: z
    .string('is required')
    .refine((value) => isValidRoutingNumber(value), 'must be a 9-digit routing number passing the ABA checksum'),
  account_type: z.enum(['checking', 'savings'], 'must be "checking" or "savings"'),
  // Gateways in this family send lower case; both are accepted, upper case is stored.
  sec_code: z
    .string('is required')
    .transform((value) => value.toUpperCase())
    .pipe(z.enum(['WEB', 'CCD', 'PPD'], 'must be WEB, CCD or PPD')),
});

/**
 * Exactly one of card / ach. Not a zod union: a union reports "no branch matched", while this
 * names the failing field inside the one the client meant.
 */
export const paymentMethodSchema = z
  .strictObject({ card: cardSchema.optional(), ach: achSchema.optional() })
  .transform((method, ctx): { card: CardInput } | { ach: AchInput } => {
    if (method.card !== undefined && method.ach === undefined) return { card: method.card };
    if (method.ach !== undefined && method.card === undefined) return { ach: method.ach };
    ctx.addIssue({ code: 'custom', message: 'must hold exactly one of card or ach' });
    return z.NEVER;
  });

const flagsField = z.array(z.enum(['surcharge_exempt'], 'unknown flag (known: surcharge_exempt)')).max(10);
const descriptionField = z
  .string()
  .max(255, 'must be at most 255 characters')
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);
const emailField = z
  .email('must be an email address')
  .max(254, 'must be at most 254 characters')
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);

export const customerCreateSchema = z.strictObject({
  id: customerIdField.optional(),
  description: descriptionField.optional(),
  email: emailField.optional(),
  flags: flagsField.optional(),
  payment_method: paymentMethodSchema.optional(),
});

export const customerPatchSchema = z
  .strictObject({
    default_payment_method_id: paymentMethodIdField.optional(),
    flags: flagsField.optional(),
    description: descriptionField.nullable().optional(),
    email: emailField.nullable().optional(),
  })
  .refine((patch) => Object.values(patch).some((value) => value !== undefined), 'at least one field is required');

export type CardInput = z.infer<typeof cardSchema>;
export type AchInput = z.infer<typeof achSchema>;
export type PaymentMethodInput = z.infer<typeof paymentMethodSchema>;
export type CustomerCreateInput = z.infer<typeof customerCreateSchema>;
export type CustomerPatchInput = z.infer<typeof customerPatchSchema>;
