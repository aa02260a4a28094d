/** The whole BIN lookup: request → card → metadata (+ surchargeability) → response body. */
import type { Caller, Env } from '../../env';
import type { BinLookupRequest } from '../../schemas/lookup';
import type { BinLookupResponse } from '../../schemas/lookup-response';
import { lookupCard } from './card-metadata';
import { resolveCardSource, type CardSource } from './card-source';
import { isSurchargeable } from './surcharge';

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
    return region ? { is_surchargeable: false, payment_method_type: 'ach' } : { payment_method_type: 'ach' };
  }

  const metadata = await lookupCard(env, card.fullNumber ?? card.digits, { enhanced: caller.enhancedBinLookup });
  const surchargeable = region
    ? await isSurchargeable(env, metadata, region, { customerExempt: card.surchargeExempt, now })
    : undefined;
  const regionAnswer = surchargeable !== undefined ? { is_surchargeable: surchargeable } : {};
  // An unknown BIN answers the minimal body: the BIN, and the brand when its IIN range tells it.
  if (metadata.matched_length === 0) {
    return { bin: metadata.bin, ...(metadata.card_brand && { card_brand: metadata.card_brand }), ...regionAnswer };
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
  };
}
