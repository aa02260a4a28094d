/**
 * The seam between the transaction engine and the services it consults: card metadata (BIN
 * lookup), surchargeability (the surcharge rule table) and the customer vault. The engine only
 * sees this interface; `transactionDepsFromEnv` builds the real one for a call, and tests hand in
 * their own.
 */
import type { Caller, Env } from '../../env';
import { lookupCards, type CardMetadata } from '../bin-lookup/card-metadata';
import { surchargePolicy, type SurchargePolicy } from '../bin-lookup/surcharge';
import { resolveVaultPaymentMethods, type VaultReference, type VaultResolution } from '../vault/resolution';

export type { CardMetadata } from '../bin-lookup/card-metadata';
export type { VaultCustomer, VaultPaymentMethod } from '../vault/resolution';
export type { SurchargePolicy } from '../bin-lookup/surcharge';

export type { VaultReference, VaultResolution } from '../vault/resolution';

export interface SurchargeRegion {
  country: string;
  state: string;
}

export interface TransactionDeps {
  /** Card metadata for card numbers, in order (brand, credit/debit, the matched BIN length). */
  cardMetadata(numbers: readonly string[]): Promise<CardMetadata[]>;
  /** Whether, and up to which rate, the card may be surcharged in the region (network and jurisdiction rules). */
  surchargePolicy(
    card: CardMetadata,
    region: SurchargeRegion,
    options: { customerExempt: boolean; now: Date },
  ): Promise<SurchargePolicy>;
  /** The merchant's vault customers and the payment methods to charge, in order (one query for a call). */
  resolveVaultPaymentMethods(references: readonly VaultReference[]): Promise<VaultResolution[]>;
}

/** The real dependencies. The engine asks for the card metadata and vault methods of a whole call at once. */
export function transactionDepsFromEnv(env: Env, caller: Caller): TransactionDeps {
  return {
    cardMetadata: (numbers) => lookupCards(env, numbers, { enhanced: caller.enhancedBinLookup }),
    surchargePolicy: (card, region, options) => surchargePolicy(env, card, region, options),
    resolveVaultPaymentMethods: (references) => resolveVaultPaymentMethods(env, caller.merchantId, references),
  };
}
