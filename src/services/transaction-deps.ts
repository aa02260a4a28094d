/**
 * The seam between the transaction engine and the services it consults: card metadata (BIN
 * lookup), surchargeability (the surcharge rule table) and the customer vault. The engine only
 * sees this interface; `transactionDepsFromEnv` builds the real one for a call, and tests hand in
 * their own.
 */
import type { Caller, Env } from '../env';
import { memoise } from '../lib/concurrency';
import { MAX_PREFIX, lookupCard, type CardMetadata } from './bin-lookup';
import { isSurchargeable } from './surcharge';
import { resolveVaultPaymentMethod } from './vault';

export type { CardMetadata } from './bin-lookup';
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
 * The real dependencies, for one call. Card metadata is memoised for the call by what the BIN
 * lookup's answer depends on: the first 11 digits (its longest prefix) and the length, or the
 * whole number for a merchant with the enhanced lookup (account ranges look further).
 */
export function transactionDepsFromEnv(env: Env, caller: Caller): TransactionDeps {
  const enhanced = caller.enhancedBinLookup;
  return {
    cardMetadata: memoise(
      (digits: string) => (enhanced ? digits : `${digits.length}:${digits.slice(0, MAX_PREFIX)}`),
      (digits: string) => lookupCard(env, digits, { enhanced }),
    ),
    isSurchargeable: (card, region, options) => isSurchargeable(env, card, region, options),
    resolveVaultPaymentMethod: (customerId, options) =>
      resolveVaultPaymentMethod(env, caller.merchantId, customerId, options),
  };
}
