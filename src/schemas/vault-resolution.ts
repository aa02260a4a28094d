/**
 * What the vault answers for a reference (a customer, optionally its payment method id and type),
 * as the BIN lookup and the transaction engine read it, and the one wording of each failure. Kept
 * below both, so the engine reads the vault's answers without importing the vault.
 */
import { containsCardNumber } from '../lib/card-number';

export type VaultPaymentMethod =
  | { id: string; type: 'card'; number: string; expiration: string; masked: string }
  | {
      id: string;
      type: 'ach';
      account_number: string;
      routing_number: string;
      account_type: 'checking' | 'savings';
      sec_code: 'WEB' | 'CCD' | 'PPD';
      masked: string;
    };

export interface VaultCustomer {
  id: string;
  surchargeExempt: boolean;
  email: string | null;
  description: string | null;
}

export type ResolveFailure =
  | 'customer_not_found'
  | 'payment_method_not_found'
  | 'no_default_payment_method'
  | 'payment_method_type_mismatch';

export interface VaultReference {
  customerId: string;
  paymentMethodId?: string;
  paymentMethodType?: 'card' | 'ach';
}

export type VaultResolution =
  | { ok: true; customer: VaultCustomer; method: VaultPaymentMethod }
  | { ok: false; reason: ResolveFailure; msg: string };

/**
 * The one wording of each vault failure, for every door: the lookup answers `field: text`, a
 * transaction or batch row lists `{ field, msg: text }`.
 */
export function describeVaultFailure(
  reason: ResolveFailure,
  reference: VaultReference,
  method?: { id: string; type: 'card' | 'ach' },
): { field: string; text: string } {
  // Callers pass ids straight from requests and CSV rows; one holding a card number is not echoed.
  const customer = quotableId(reference.customerId);
  switch (reason) {
    case 'customer_not_found':
      return { field: 'customer_id', text: `no vault customer ${customer}` };
    case 'no_default_payment_method':
      return { field: 'customer_id', text: `customer ${customer} has no default payment method; give payment_method_id` };
    case 'payment_method_not_found':
      return {
        field: 'payment_method_id',
        text: `customer ${customer} has no payment method ${quotableId(reference.paymentMethodId ?? '')}`,
      };
    case 'payment_method_type_mismatch':
      return {
        field: 'payment_method_type',
        text: method
          ? `payment method ${method.id} is ${method.type}, not ${reference.paymentMethodType}`
          : `does not match the type of the selected payment method`,
      };
  }
}

function quotableId(id: string): string {
  return containsCardNumber(id) ? '(a card number)' : id;
}
