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

const nullableText = z.string().nullable();

/** A stored address, as FluidPay's vault answers it (line_1 / line_2). */
export const vaultAddressViewSchema = z
  .strictObject({
    id: z.string(),
    hash: z.string().meta({ description: 'Identifies the content: an identical address is refused.' }),
    first_name: nullableText,
    last_name: nullableText,
    company: nullableText,
    line_1: nullableText,
    line_2: nullableText,
    city: nullableText,
    state: nullableText,
    postal_code: nullableText,
    country: nullableText,
    email: nullableText,
    phone: nullableText,
    fax: nullableText,
  })
  .meta({ id: 'VaultAddress' });

/** The customer nested as FluidPay's vault answers it (`data.customer`). */
const fluidPayCustomerSchema = z
  .strictObject({
    customer: z.strictObject({
      description: z.string(),
      notes: z.string(),
      flags: z.array(z.literal('surcharge_exempt')),
      defaults: z.strictObject({
        payment_method_id: z.string(),
        payment_method_type: z.string().meta({ description: 'card, ach, or "" without a default.' }),
        billing_address_id: z.string(),
        shipping_address_id: z.string(),
      }),
      addresses: z.array(vaultAddressViewSchema),
      payments: z.strictObject({
        cards: z.array(
          z.strictObject({
            id: z.string(),
            card_type: z.string().meta({ description: 'The brand: visa, mastercard, …' }),
            masked_number: z.string(),
            expiration_date: z.string().meta({ description: 'MM/YY' }),
            flags: z.array(z.string()),
            processor_id: z.string(),
          }),
        ),
        ach: z.array(
          z.strictObject({
            id: z.string(),
            account_type: z.string(),
            sec_code: z.string().meta({ description: 'web, ccd or ppd' }),
            masked_account_number: z.string(),
            routing_number: z.string(),
            flags: z.array(z.string()),
            processor_id: z.string(),
          }),
        ),
      }),
    }),
  })
  .meta({ id: 'FluidPayVaultCustomerData' });

export const customerViewSchema = z
  .strictObject({
    id: z.string(),
    owner_id: z.string().meta({ description: 'The merchant.' }),
    description: z.string().nullable(),
    notes: z.string().nullable(),
    email: z.string().nullable(),
    flags: z.array(z.literal('surcharge_exempt')),
    default_payment_method_id: z.string().nullable(),
    payment_methods: z.array(paymentMethodViewSchema),
    addresses: z.array(vaultAddressViewSchema),
    default_billing_address_id: z.string().nullable(),
    default_shipping_address_id: z.string().nullable(),
    data: fluidPayCustomerSchema.meta({ description: "The same customer nested as FluidPay's clients read it." }),
    created_payment_method_id: z.string().optional().meta({ description: 'Adding a card or bank account: the new method.' }),
    created_address_id: z.string().optional().meta({ description: 'Adding an address: the new address.' }),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({
    id: 'VaultCustomer',
    example: {
      id: 'cust001',
      owner_id: 'mer_demo',
      description: null,
      notes: null,
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
      addresses: [],
      default_billing_address_id: null,
      default_shipping_address_id: null,
      data: {
        customer: {
          description: '',
          notes: '',
          flags: [],
          defaults: { payment_method_id: 'k3j5h7g9f1d3s5a7q9w1', payment_method_type: 'card', billing_address_id: '', shipping_address_id: '' },
          addresses: [],
          payments: {
            cards: [{ id: 'k3j5h7g9f1d3s5a7q9w1', card_type: 'visa', masked_number: '411111******1111', expiration_date: '12/29', flags: [], processor_id: '' }],
            ach: [],
          },
        },
      },
      created_at: '2026-11-21T05:30:00.000Z',
      updated_at: '2026-11-21T05:30:00.000Z',
    },
  });

/** A customer search: the page, and how many match. */
export const customerListResponseSchema = z
  .strictObject({ status: z.literal('success'), msg: z.literal('success'), data: z.array(customerViewSchema), total_count: z.int().min(0) })
  .meta({ id: 'VaultCustomerList' });

export type CustomerView = z.infer<typeof customerViewSchema>;
