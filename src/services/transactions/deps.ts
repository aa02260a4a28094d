/**
 * The seam between the transaction engine and the services it consults: card metadata (BIN
 * lookup), surchargeability (the surcharge rule table) and the customer vault. The engine only
 * sees this interface; the composition (services/recorded.ts) builds the real one for a call, and
 * tests hand in their own.
 */
import type { CardMetadata } from '../bin-lookup/card-metadata';
import type { SurchargePolicy } from '../bin-lookup/surcharge';
import type { VaultReference, VaultResolution } from '../../schemas/vault-resolution';

export type { CardMetadata } from '../bin-lookup/card-metadata';
export type { SurchargePolicy } from '../bin-lookup/surcharge';
export type { VaultCustomer, VaultPaymentMethod, VaultReference, VaultResolution } from '../../schemas/vault-resolution';

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
