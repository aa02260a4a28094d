/** The whole BIN lookup: request → card → metadata (+ surchargeability, + the surcharge on `amount`) → response body. */
import type { Caller, Env } from '../../env';
import type { BinLookupRequest } from '../../schemas/lookup';
import type { BinLookupResponse } from '../../schemas/lookup-response';
import { lookupCard } from './card-metadata';
import { resolveCardSource, type CardSource } from './card-source';
import { allowedSurcharge, surchargePolicy, type SurchargePolicy } from './surcharge';
import { NOT_ALLOWED } from './surcharge-decision';

export type { BinLookupResponse };

export function sourceOf(request: BinLookupRequest): CardSource {
  if (request.temp_token !== undefined) return { kind: 'temp_token', token: request.temp_token };
  if (request.customer_id !== undefined) {
    return { kind: 'customer', customerId: request.customer_id, paymentMethodId: request.payment_method_id };
  }
  // The schema guarantees exactly one source.
  return { kind: 'bin', bin: request.bin ?? '' };
}

export async function answerBinLookup(env: Env, caller: Caller, request: BinLookupRequest, now: Date): Promise<BinLookupResponse> {
  const card = await resolveCardSource(env, caller, sourceOf(request), now);
  const region = request.country !== undefined && request.state !== undefined ? { country: request.country, state: request.state } : null;

  if (card.paymentMethodType === 'ach') {
    // A bank account has no card metadata and is never surcharged (card-network rules).
    if (!region) return { payment_method_type: 'ach' };
    return { is_surchargeable: false, payment_method_type: 'ach', ...surchargeOn(request.amount, caller, NOT_ALLOWED) };
  }

  const metadata = await lookupCard(env, card.fullNumber ?? card.digits, { enhanced: caller.enhancedBinLookup });
  const policy = region ? await surchargePolicy(env, metadata, region, { customerExempt: card.surchargeExempt, now }) : undefined;
  const regionAnswer = policy ? { is_surchargeable: policy.allowed } : {};
  const amountAnswer = policy ? surchargeOn(request.amount, caller, policy) : {};
  // An unknown BIN answers the minimal body: the BIN, and the brand when its IIN range tells it.
  if (metadata.matched_length === 0) {
    return { bin: metadata.bin, ...(metadata.card_brand && { card_brand: metadata.card_brand }), ...regionAnswer, ...amountAnswer };
  }
  // The contract's fields in its order, then the additive ones the data knows; matched_length stays internal.
  return {
    bin: metadata.bin,
    ...(metadata.card_brand && { card_brand: metadata.card_brand }),
    ...(metadata.issuing_bank && { issuing_bank: metadata.issuing_bank }),
    ...(metadata.card_type && { card_type: metadata.card_type }),
    ...(metadata.card_level_generic && { card_level_generic: metadata.card_level_generic }),
    ...(metadata.country && { country: metadata.country }),
    ...regionAnswer,
    payment_method_type: metadata.payment_method_type,
    ...(metadata.prepaid !== undefined && { is_prepaid: metadata.prepaid }),
    ...(metadata.commercial !== undefined && { is_commercial: metadata.commercial }),
    ...(metadata.currency && { issuer_currency: metadata.currency }),
    ...amountAnswer,
  };
}

/**
 * The surcharge on `amount` (only when it was sent): the merchant's configured rate, limited by the
 * cap in force, exactly as a sale computes it from base_amount.
 */
function surchargeOn(
  amount: number | undefined,
  caller: Caller,
  policy: SurchargePolicy,
): Pick<BinLookupResponse, 'surcharge_amount' | 'surcharge_rate_bps' | 'surcharge_cap_bps' | 'surcharge_at_cost'> {
  if (amount === undefined) return {};
  const { rateBps, surcharge } = allowedSurcharge(amount, caller.surchargeRateBps, policy);
  return {
    surcharge_amount: surcharge,
    surcharge_rate_bps: rateBps,
    ...(policy.maxRateBps !== null && { surcharge_cap_bps: policy.maxRateBps }),
    surcharge_at_cost: policy.atCost,
  };
}
