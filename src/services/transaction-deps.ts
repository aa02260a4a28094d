/**
 * The seam between the transaction engine and the services it consults: card metadata (BIN
 * lookup), surchargeability (the surcharge rule table) and the customer vault. The engine only
 * sees this interface; `transactionDepsFromEnv` builds the real one for a call, and unit tests
 * hand in their own.
 */
import type { Caller, Env } from '../env';
import { resolveVaultPaymentMethod } from './vault';

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

export type { VaultCustomer, VaultPaymentMethod } from './vault';

/** What `resolveVaultPaymentMethod` answers. */
export type VaultResolution = Awaited<ReturnType<typeof resolveVaultPaymentMethod>>;

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
 * The real dependencies for one call. Until the BIN lookup service is merged, a card's metadata
 * is its first six digits only and nothing is surchargeable.
 */
export function transactionDepsFromEnv(env: Env, caller: Caller): TransactionDeps {
  return {
    cardMetadata: async (digits) => ({ bin: digits.slice(0, 6), payment_method_type: 'card', matched_length: 0 }),
    isSurchargeable: async () => false,
    resolveVaultPaymentMethod: (customerId, options) =>
      resolveVaultPaymentMethod(env, caller.merchantId, customerId, options),
  };
}
