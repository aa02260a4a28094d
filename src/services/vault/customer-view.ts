/**
 * What the vault shows of a customer: masked numbers only. Every vault answer gives the whole
 * customer as it is stored after the command (`loadCustomer`), in binbatch's flat fields and
 * FluidPay's nested `data.customer`.
 */
import type { Env } from '../../env';
import { detectBrand } from '../../lib/card-brand';
import type { CustomerView, PaymentMethodView } from '../../schemas/vault-response';
import { ADDRESS_FIELDS, findProfile, listAddresses, type AddressRecord, type ProfileRecord } from '../../storage/vault-addresses';
import { findCustomer, listPaymentMethods, type CustomerRecord, type PaymentMethodRecord } from '../../storage/vault';

export type { CustomerView, PaymentMethodView };

export function methodView(record: PaymentMethodRecord, defaultId: string | null): PaymentMethodView {
  const isDefault = record.id === defaultId;
  if (record.type === 'card') {
    return {
      id: record.id,
      type: 'card',
      masked_number: record.masked,
      expiration: record.expiration ?? '',
      is_default: isDefault,
      created_at: record.created_at,
    };
  }
  return {
    id: record.id,
    type: 'ach',
    masked_account_number: record.masked,
    routing_number: record.routing_number ?? '',
    account_type: record.account_type ?? '',
    sec_code: record.sec_code ?? '',
    is_default: isDefault,
    created_at: record.created_at,
  };
}

/** Everything the vault holds on one customer: what its view is made of. */
export interface CustomerState {
  record: CustomerRecord;
  methods: PaymentMethodRecord[];
  addresses: AddressRecord[];
  profile: ProfileRecord | null;
}

function addressView(address: AddressRecord) {
  return {
    id: address.id,
    hash: address.hash,
    ...(Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, address[field]])) as Record<(typeof ADDRESS_FIELDS)[number], string | null>),
  };
}

/**
 * The customer as every vault answer gives it: binbatch's flat fields, and the same customer nested
 * under `data.customer` as FluidPay's clients read it (docs/vault.md, "FluidPay's shape").
 */
export function customerView({ record, methods, addresses, profile }: CustomerState, extra: { created_payment_method_id?: string; created_address_id?: string } = {}): CustomerView {
  const flags: 'surcharge_exempt'[] = record.surcharge_exempt ? ['surcharge_exempt'] : [];
  const defaultMethod = methods.find((m) => m.id === record.default_payment_method_id) ?? null;
  return {
    id: record.id,
    owner_id: record.merchant_id,
    description: record.description,
    notes: profile?.notes ?? null,
    email: record.email,
    flags,
    default_payment_method_id: record.default_payment_method_id,
    payment_methods: methods.map((method) => methodView(method, record.default_payment_method_id)),
    addresses: addresses.map(addressView),
    default_billing_address_id: profile?.default_billing_address_id ?? null,
    default_shipping_address_id: profile?.default_shipping_address_id ?? null,
    data: {
      customer: {
        description: record.description ?? '',
        notes: profile?.notes ?? '',
        flags,
        defaults: {
          payment_method_id: defaultMethod?.id ?? '',
          payment_method_type: defaultMethod?.type ?? '',
          billing_address_id: profile?.default_billing_address_id ?? '',
          shipping_address_id: profile?.default_shipping_address_id ?? '',
        },
        addresses: addresses.map(addressView),
        payments: {
          cards: methods
            .filter((m) => m.type === 'card')
            .map((m) => ({ id: m.id, card_type: detectBrand(m.masked.slice(0, 6)) ?? '', masked_number: m.masked, expiration_date: m.expiration ?? '', flags: [], processor_id: '' })),
          ach: methods
            .filter((m) => m.type === 'ach')
            .map((m) => ({
              id: m.id,
              account_type: m.account_type ?? '',
              sec_code: (m.sec_code ?? '').toLowerCase(),
              masked_account_number: m.masked,
              routing_number: m.routing_number ?? '',
              flags: [],
              processor_id: '',
            })),
        },
      },
    },
    ...extra,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

export async function loadCustomer(env: Env, merchantId: string, id: string): Promise<CustomerState | null> {
  const [record, methods, addresses, profile] = await Promise.all([
    findCustomer(env.DB, merchantId, id),
    listPaymentMethods(env.DB, merchantId, id),
    listAddresses(env.DB, merchantId, id),
    findProfile(env.DB, merchantId, id),
  ]);
  return record ? { record, methods, addresses, profile } : null;
}
