/**
 * Step 2 of a lookup: which card a request is about. The one seam between the lookup and the
 * places cards come from: `bin` (the digits sent), `temp_token` (the tokenized card) and
 * `customer_id` (a vault payment method). Each source yields the same ResolvedCard.
 */
import type { Caller, Env } from '../env';
import { AppError } from '../errors';

export type CardSource =
  | { kind: 'bin'; bin: string }
  | { kind: 'temp_token'; token: string }
  | { kind: 'customer'; customerId: string; paymentMethodId?: string | undefined };

export type ResolvedCard =
  | {
      paymentMethodType: 'card';
      /** The digits to look up: the BIN sent, or the card number's leading digits. */
      digits: string;
      /** The whole card number, when the source has it (token, vault): the enhanced lookup matches on it. */
      fullNumber?: string;
      surchargeExempt: boolean;
    }
  | { paymentMethodType: 'ach'; surchargeExempt: boolean };

export async function resolveCardSource(_env: Env, _caller: Caller, source: CardSource): Promise<ResolvedCard> {
  switch (source.kind) {
    case 'bin':
      return { paymentMethodType: 'card', digits: source.bin, surchargeExempt: false };
    case 'temp_token':
      throw new AppError('bad_request', 'temp_token lookups are not available on this server yet; send bin instead');
    case 'customer':
      throw new AppError('bad_request', 'customer_id lookups are not available on this server yet; send bin instead');
  }
}
