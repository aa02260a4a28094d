/**
 * The BIN lookup's answer: a bare object whose fields are
 * absent when the data does not know them. `is_prepaid`, `is_commercial` and `issuer_currency` are
 * additive: the BIN data already stores them, and gateways peers return them.
 */
import { z } from 'zod';

export const binLookupResponseSchema = z
  .strictObject({
    bin: z
      .string()
      .regex(/^[0-9]{6,8}$/)
      .optional()
      .meta({ description: 'The BIN looked up: as sent up to 8 digits; from a full card number, its first 6 (8 when an 8-digit record matched).' }),
    card_brand: z.string().optional().meta({ description: 'Lower-case brand id: visa, mastercard, amex, discover, jcb, …' }),
    issuing_bank: z.string().optional(),
    card_type: z.string().optional().meta({ description: 'credit, debit, …' }),
    card_level_generic: z.string().optional().meta({ description: 'Product level: classic, gold, platinum, business, …' }),
    country: z.string().optional().meta({ description: 'Issuing country, ISO 3166-1 alpha-2.' }),
    is_surchargeable: z
      .boolean()
      .optional()
      .meta({ description: 'Only when both `country` and `state` were sent: may a surcharge be added to a sale with this card there (the place of sale).' }),
    payment_method_type: z.enum(['card', 'ach']).optional(),
    is_prepaid: z.boolean().optional().meta({ description: 'Additive: a prepaid card, when the BIN data knows.' }),
    is_commercial: z.boolean().optional().meta({ description: 'Additive: a commercial (business, corporate) card, when the BIN data knows.' }),
    issuer_currency: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .optional()
      .meta({ description: "Additive: the issuer's currency, ISO 4217, when the BIN data knows." }),
    surcharge_amount: z
      .int()
      .min(0)
      .optional()
      .meta({ description: "Additive, only when `amount` was sent: the surcharge the merchant may add to it, in minor units (its rate, limited by the cap in force; 0 when not surchargeable)." }),
    surcharge_rate_bps: z
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .meta({ description: "Additive, only with `amount`: the rate applied, the merchant's surcharge_rate_bps or the lower cap (0 when not surchargeable)." }),
    surcharge_cap_bps: z
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .meta({ description: 'Additive, only with `amount`: the lowest numeric cap in force, when there is one (Visa US: 300).' }),
    surcharge_at_cost: z
      .boolean()
      .optional()
      .meta({ description: "Additive, only with `amount`: a rule in force limits the surcharge to the merchant's cost of acceptance, which its configured rate must not exceed." }),
  })
  .meta({
    id: 'BinLookupResponse',
    description: 'An unknown BIN answers 200 with `bin`, plus `card_brand` when the IIN ranges tell it.',
    example: {
      bin: '411111',
      card_brand: 'visa',
      issuing_bank: 'Sample Test Bank',
      card_type: 'credit',
      card_level_generic: 'classic',
      country: 'US',
      is_surchargeable: true,
      payment_method_type: 'card',
      is_prepaid: false,
      is_commercial: false,
      issuer_currency: 'USD',
    },
  });

export type BinLookupResponse = z.infer<typeof binLookupResponseSchema>;
