/** What the vault answers: customers and payment methods, masked numbers only (never a full number). */
import { z } from 'zod';
import { timestampSchema } from './envelope';

const cardMethodViewSchema = z
  .strictObject({
    id: z.string(),
    type: z.literal('card'),
    masked_number: z.string().meta({ example: '411111******1111' }),
    expiration: z.string().meta({ description: 'MM/YY', example: '12/29' }),
    is_default: z.boolean(),
    created_at: timestampSchema,
  })
  .meta({ id: 'VaultCard' });

const achMethodViewSchema = z
  .strictObject({
    id: z.string(),
    type: z.literal('ach'),
    masked_account_number: z.string().meta({ example: '********6789' }),
    routing_number: z.string().meta({ example: '021000021' }),
    account_type: z.string().meta({ description: 'checking or savings' }),
    sec_code: z.string().meta({ description: 'WEB, CCD or PPD' }),
    is_default: z.boolean(),
    created_at: timestampSchema,
  })
  .meta({ id: 'VaultAchAccount' });

export const paymentMethodViewSchema = z
  .discriminatedUnion('type', [cardMethodViewSchema, achMethodViewSchema])
  .meta({ id: 'VaultPaymentMethod' });

export type PaymentMethodView = z.infer<typeof paymentMethodViewSchema>;

export const customerViewSchema = z
  .strictObject({
    id: z.string(),
    description: z.string().nullable(),
    email: z.string().nullable(),
    flags: z.array(z.literal('surcharge_exempt')),
    default_payment_method_id: z.string().nullable(),
    payment_methods: z.array(paymentMethodViewSchema),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({
    id: 'VaultCustomer',
    example: {
      id: 'cust001',
      description: null,
      email: 'ana@example.com',
      flags: [],
      default_payment_method_id: 'k3j5h7g9f1d3s5a7q9w1',
      payment_methods: [
        {
          id: 'k3j5h7g9f1d3s5a7q9w1',
          type: 'card',
          masked_number: '411111******1111',
          expiration: '12/29',
          is_default: true,
          created_at: '2026-11-21T05:30:00.000Z',
        },
      ],
      created_at: '2026-11-21T05:30:00.000Z',
      updated_at: '2026-11-21T05:30:00.000Z',
    },
  });

export type CustomerView = z.infer<typeof customerViewSchema>;
