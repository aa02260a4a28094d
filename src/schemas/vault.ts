import { z } from 'zod';
import { isValidRoutingNumber } from '../lib/aba';
import { containsCardNumber } from '../lib/card-number';
import { TEMP_TOKEN_PATTERN } from './tokenizer';
import { cardNumberField, expirationField } from './tokenizer';
import { emailAddressField, freeTextField } from './text-fields';

/** binbatch's ids and FluidPay's wider alphabet (letters, digits, ".", "-", "_", "^"; UUIDs). */
export const CUSTOMER_ID_PATTERN = /^[A-Za-z0-9._^-]{1,40}$/;
export const PAYMENT_METHOD_ID_PATTERN = /^[A-Za-z0-9._^-]{1,64}$/;
const CUSTOMER_ID_RULE = 'must be 1 to 40 letters, digits, ".", "-", "_" or "^"';
const PAYMENT_METHOD_ID_RULE = 'must be 1 to 64 letters, digits, ".", "-", "_" or "^"';

/** Ids and free text are stored and answered in plain text: a card number pasted there is refused. */
const NO_CARD_NUMBER = 'must not contain a card number';
export const customerIdField = z
  .string()
  .regex(CUSTOMER_ID_PATTERN, CUSTOMER_ID_RULE)
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);
export const paymentMethodIdField = z
  .string()
  .regex(PAYMENT_METHOD_ID_PATTERN, PAYMENT_METHOD_ID_RULE)
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);

export const customerParamSchema = z.object({ id: customerIdField });
export const paymentMethodParamSchema = z.object({ id: customerIdField, method_id: paymentMethodIdField });
export const addressParamSchema = z.object({ id: customerIdField, address_id: paymentMethodIdField });

const tempTokenField = z.string().regex(TEMP_TOKEN_PATTERN, 'malformed temp token (expected tok_ and 32 characters)');

/**
 * A card given by number + expiration, or by a temp token (whose expiration is used unless one is
 * sent). FluidPay's clients send `expiration_date` (the same) and may choose the method's `id`.
 */
export const cardSchema = z
  .strictObject({
    id: paymentMethodIdField.optional().meta({ description: "The method's id (default: generated)." }),
    number: cardNumberField.optional(),
    temp_token: tempTokenField.optional(),
    expiration: expirationField.optional(),
    expiration_date: expirationField.optional().meta({ description: "FluidPay's name for expiration." }),
    flags: z.array(z.string()).max(0, 'card flags are not supported').optional(),
  })
  .superRefine((card, ctx) => {
    if ((card.number === undefined) === (card.temp_token === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['number'], message: 'exactly one of number or temp_token is required' });
    }
    if (card.expiration !== undefined && card.expiration_date !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['expiration_date'], message: 'give expiration or expiration_date, not both' });
    }
    if (card.number !== undefined && card.expiration === undefined && card.expiration_date === undefined) {
      ctx.addIssue({ code: 'custom', path: ['expiration'], message: 'is required with number' });
    }
  })
  .transform(({ expiration_date, flags: _flags, ...card }) => ({ ...card, expiration: card.expiration ?? expiration_date }));

/**
 * FluidPay's UpdateCard (POST …/card/{method_id}): what is given replaces the stored card's number
 * (or the card behind a temp token) and expiration, the rest stays. Their SDK always sends
 * `number`, an empty one when only the expiration changes; `id` may only repeat the method's own.
 */
export const cardUpdateSchema = z
  .strictObject({
    id: paymentMethodIdField.optional().meta({ description: "The method's own id, if sent: it cannot change." }),
    number: z.union([z.literal(''), cardNumberField], 'must be a card number (or empty: keep the stored one)').optional(),
    temp_token: tempTokenField.optional(),
    expiration: expirationField.optional(),
    expiration_date: expirationField.optional().meta({ description: "FluidPay's name for expiration." }),
    flags: z.array(z.string()).max(0, 'card flags are not supported').optional(),
  })
  .superRefine((card, ctx) => {
    const number = card.number === '' ? undefined : card.number;
    if (number !== undefined && card.temp_token !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['number'], message: 'give number or temp_token, not both' });
    }
    if (card.expiration !== undefined && card.expiration_date !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['expiration_date'], message: 'give expiration or expiration_date, not both' });
    }
    if (number === undefined && card.temp_token === undefined && card.expiration === undefined && card.expiration_date === undefined) {
      ctx.addIssue({ code: 'custom', path: ['number'], message: 'give a number, a temp_token or an expiration to change' });
    }
  })
  .transform(({ expiration_date, flags: _flags, number, ...card }) => ({ ...card, number: number === '' ? undefined : number, expiration: card.expiration ?? expiration_date }));
export type CardUpdateInput = z.infer<typeof cardUpdateSchema>;

/** FluidPay's CreateToken: the card behind a temp token. */
export const tokenMethodSchema = z.strictObject({ token: tempTokenField });

export const achSchema = z.strictObject({
  id: paymentMethodIdField.optional().meta({ description: "The method's id (default: generated)." }),
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
  .strictObject({ card: cardSchema.optional(), ach: achSchema.optional(), token: tempTokenField.optional().meta({ description: "FluidPay's default_payment.token: a temp token's card." }) })
  .transform((method, ctx): { card: CardInput } | { ach: AchInput } => {
    const given = [method.card, method.ach, method.token].filter((m) => m !== undefined).length;
    if (given === 1 && method.card !== undefined) return { card: method.card };
    if (given === 1 && method.ach !== undefined) return { ach: method.ach };
    if (given === 1 && method.token !== undefined) return { card: { temp_token: method.token, expiration: undefined } };
    ctx.addIssue({ code: 'custom', message: 'must hold exactly one of card, ach or token' });
    return z.NEVER;
  });

const flagsField = z.array(z.enum(['surcharge_exempt'], 'unknown flag (known: surcharge_exempt)')).max(10);
// The text kinds' one rule each (schemas/text-fields.ts), as transactions, receipts and the admin API use them.
const descriptionField = freeTextField(255);
const emailField = emailAddressField;
const addressText = freeTextField(255);

/** FluidPay's vault address (line_1 / line_2; a transaction's address says address_line_1). */
export const vaultAddressSchema = z
  .strictObject({
    first_name: addressText.optional(),
    last_name: addressText.optional(),
    company: addressText.optional(),
    line_1: addressText.optional(),
    line_2: addressText.optional(),
    city: addressText.optional(),
    state: addressText.optional(),
    postal_code: addressText.optional(),
    country: addressText.optional(),
    email: addressText.optional(),
    phone: addressText.optional(),
    fax: addressText.optional(),
  })
  .refine((address) => Object.values(address).some((value) => value !== undefined && value !== ''), 'at least one field is required')
  .meta({ id: 'VaultAddressInput' });

/** FluidPay's generated-id formats (id_format): their 20-character id, a UUID, or the id with the method's brand and last four. */
export const ID_FORMATS = ['xid', 'uuid', 'xid_type_last4'] as const;

/**
 * A new customer, in binbatch's shape (`payment_method`, `email`) or FluidPay's (`default_payment`,
 * the default addresses, `id_format`, `notes`): the fields of both are accepted.
 */
export const customerCreateSchema = z
  .strictObject({
    id: customerIdField.optional(),
    id_format: z.enum(ID_FORMATS, `must be one of ${ID_FORMATS.join(', ')}`).optional(),
    description: descriptionField.optional(),
    notes: descriptionField.optional(),
    email: emailField.optional(),
    flags: flagsField.optional(),
    payment_method: paymentMethodSchema.optional(),
    default_payment: paymentMethodSchema.optional().meta({ description: "FluidPay's name for payment_method." }),
    default_billing_address: vaultAddressSchema.optional(),
    default_shipping_address: vaultAddressSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.id !== undefined && body.id_format !== undefined) ctx.addIssue({ code: 'custom', path: ['id_format'], message: 'cannot be combined with id' });
    if (body.payment_method !== undefined && body.default_payment !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['default_payment'], message: 'give payment_method or default_payment, not both' });
    }
  });

const defaultsSchema = z
  .strictObject({
    payment_method_id: paymentMethodIdField.optional(),
    payment_method_type: z.enum(['card', 'ach'], 'must be card or ach').optional(),
    billing_address_id: paymentMethodIdField.optional(),
    shipping_address_id: paymentMethodIdField.optional(),
  })
  .refine((d) => d.payment_method_type === undefined || d.payment_method_id !== undefined, { path: ['payment_method_type'], message: 'is only allowed with payment_method_id' });

/** A customer's changes: binbatch's (PATCH) and FluidPay's (POST, `notes`, `defaults`), either method. */
export const customerPatchSchema = z
  .strictObject({
    default_payment_method_id: paymentMethodIdField.optional(),
    flags: flagsField.optional(),
    description: descriptionField.nullable().optional(),
    notes: descriptionField.nullable().optional(),
    email: emailField.nullable().optional(),
    defaults: defaultsSchema.optional(),
  })
  .refine((patch) => Object.values(patch).some((value) => value !== undefined), 'at least one field is required')
  .refine((patch) => patch.default_payment_method_id === undefined || patch.defaults?.payment_method_id === undefined, {
    path: ['defaults', 'payment_method_id'],
    message: 'give default_payment_method_id or defaults.payment_method_id, not both',
  });

const stringQuery = z.strictObject({ operator: z.enum(['=', '!='], 'must be = or !='), value: z.string('must be a string').max(255, 'must be at most 255 characters') });
const dateRange = z.strictObject({
  start_date: z.iso.datetime({ message: 'must be an RFC 3339 timestamp', offset: true }).optional(),
  end_date: z.iso.datetime({ message: 'must be an RFC 3339 timestamp', offset: true }).optional(),
});

/** FluidPay's customer search: {operator, value} filters (= and !=), date ranges, limit 1–100 (10), offset. */
export const customerSearchSchema = z
  .strictObject({
    id: stringQuery.optional(),
    email: stringQuery.optional(),
    address_id: stringQuery.optional(),
    first_name: stringQuery.optional(),
    last_name: stringQuery.optional(),
    company: stringQuery.optional(),
    address_line_1: stringQuery.optional(),
    address_line_2: stringQuery.optional(),
    city: stringQuery.optional(),
    state: stringQuery.optional(),
    postal_code: stringQuery.optional(),
    country: stringQuery.optional(),
    phone: stringQuery.optional(),
    fax: stringQuery.optional(),
    payment_method_type: stringQuery.optional(),
    billing_address_id: stringQuery.optional(),
    shipping_address_id: stringQuery.optional(),
    created_at: dateRange.optional(),
    updated_at: dateRange.optional(),
    limit: z.int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(10),
    offset: z.int('must be an integer').min(0, 'must be 0 or more').default(0),
  })
  .meta({ id: 'VaultCustomerSearch' });
export type CustomerSearchInput = z.infer<typeof customerSearchSchema>;
export type VaultAddressInput = z.infer<typeof vaultAddressSchema>;

export type CardInput = z.infer<typeof cardSchema>;
export type AchInput = z.infer<typeof achSchema>;
export type PaymentMethodInput = z.infer<typeof paymentMethodSchema>;
export type CustomerCreateInput = z.infer<typeof customerCreateSchema>;
export type CustomerPatchInput = z.infer<typeof customerPatchSchema>;

const queryFlag = z.enum(['true', 'false'], 'must be true or false').transform((value) => value === 'true');

/**
 * FluidPay's verification options, sent as the query of a create: `validate=true` runs a
 * zero-amount verification of the card before it is stored (a declined card is not stored: 402).
 */
export const verificationQuerySchema = z.object({
  validate: queryFlag.optional(),
  authorize: z
    .enum(['false'], 'authorize=true (a $1.00 authorization) is not supported: use validate=true, a zero-amount verification')
    .optional(),
  bypass_rule_engine: queryFlag.optional().meta({ description: 'Accepted: binbatch has no rule engine to bypass.' }),
});
