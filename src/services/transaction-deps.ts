/**
 * The seam between the transaction engine and the services it consults: card metadata (BIN
 * lookup), surchargeability (the surcharge rule table) and the customer vault. The engine only
 * sees this interface; `transactionDepsFromEnv` builds the real one for a call, and unit tests
 * hand in their own.
 */
import type { Caller, Env } from '../env';

/** What the BIN lookup knows about a card (the shape of src/services/bin-lookup.ts). */
export interface CardMetadata {
  bin: string;
  card_brand?: string;
  issuing_bank?: string;
  card_type?: string;
  card_level_generic?: string;
  country?: string;
  payment_method_type: 'card';
  prepaid?: boolean;
  commercial?: boolean;
  currency?: string;
  /** Length of the stored BIN prefix that matched; 0 when no record matched. */
  matched_length: number;
}

/** A vault payment method with its numbers opened (the shape of src/services/vault.ts). */
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

export type VaultResolution =
  | { ok: true; customer: VaultCustomer; method: VaultPaymentMethod }
  | {
      ok: false;
      reason: 'customer_not_found' | 'payment_method_not_found' | 'no_default_payment_method' | 'payment_method_type_mismatch';
      msg: string;
    };

export interface SurchargeRegion {
  country: string;
  state: string;
}

export interface TransactionDeps {
  /** Card metadata for a card number (brand, credit/debit, the matched BIN length). */
  cardMetadata(digits: string): Promise<CardMetadata>;
  /** Whether the card may be surcharged in the region (card-network and jurisdiction rules). */
  isSurchargeable(
    card: CardMetadata,
    region: SurchargeRegion,
    options: { customerExempt: boolean; now: Date },
  ): Promise<boolean>;
  /** The merchant's vault customer and the payment method to charge. */
  resolveVaultPaymentMethod(
    customerId: string,
    options: { paymentMethodId?: string; paymentMethodType?: 'card' | 'ach' },
  ): Promise<VaultResolution>;
}

/**
 * Stand-in used until the BIN lookup and vault services are merged: a card's metadata is its
 * first six digits only, nothing is surchargeable and the vault is empty. Replaced at the merge.
 */
export function transactionDepsFromEnv(_env: Env, _caller: Caller): TransactionDeps {
  return {
    cardMetadata: async (digits) => ({ bin: digits.slice(0, 6), payment_method_type: 'card', matched_length: 0 }),
    isSurchargeable: async () => false,
    resolveVaultPaymentMethod: async () => ({ ok: false, reason: 'customer_not_found', msg: 'customer not found' }),
  };
}
