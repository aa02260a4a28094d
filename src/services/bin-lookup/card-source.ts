/**
 * Step 2 of a lookup: which card a request is about. The one seam between the lookup and the
 * places cards come from: `bin` (the digits sent), `temp_token` (the tokenized card) and
 * `customer_id` (a vault payment method). Each source yields the same ResolvedCard.
 */
import type { Caller, Env } from '../../env';
import { AppError } from '../../errors';
import { readTempToken } from '../tokens';
import { resolveVaultPaymentMethod } from '../vault/resolution';

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

export async function resolveCardSource(env: Env, caller: Caller, source: CardSource, now: Date): Promise<ResolvedCard> {
  switch (source.kind) {
    case 'bin':
      return { paymentMethodType: 'card', digits: source.bin, surchargeExempt: false };
    case 'temp_token': {
      const token = await readTempToken(env, caller.merchantId, source.token, now);
      // Unknown, expired and another merchant's tokens read alike: nothing tells them apart.
      if (!token.ok) throw new AppError('bad_request', 'temp_token: unknown or expired token');
      return { paymentMethodType: 'card', digits: token.card.number, fullNumber: token.card.number, surchargeExempt: false };
    }
    case 'customer': {
      const options = source.paymentMethodId === undefined ? {} : { paymentMethodId: source.paymentMethodId };
      const vault = await resolveVaultPaymentMethod(env, caller.merchantId, source.customerId, options);
      if (!vault.ok) throw new AppError('bad_request', vault.msg);
      const surchargeExempt = vault.customer.surchargeExempt;
      if (vault.method.type === 'ach') return { paymentMethodType: 'ach', surchargeExempt };
      return { paymentMethodType: 'card', digits: vault.method.number, fullNumber: vault.method.number, surchargeExempt };
    }
  }
}
