/**
 * Amount arithmetic, in integer minor units only.
 *
 * - `amount` is the total charged; surcharge, shipping_amount and tax_amount are parts of it
 *   (discount_amount is informational: already taken off the total).
 * - With `base_amount`: amount = base_amount + surcharge + tax_amount, where the surcharge is the
 *   `surcharge` column when given, else base_amount x the merchant's surcharge_rate_bps / 10000,
 *   rounded half up to a whole minor unit, when the card may be surcharged and nobody is exempt.
 * - A region's cap binds both: a computed surcharge is the lookup's (`allowedSurcharge`: min(merchant
 *   rate, cap), never above base x cap), so a sale and a lookup with `amount` agree; a given one
 *   above base x cap (rounded down: a cap is never exceeded by rounding) is refused.
 */
import type { RowError } from '../../schemas/transaction-columns';
import { allowedSurcharge, surchargeFor } from '../bin-lookup/surcharge-decision';
import { MAX_AMOUNT, type AmountFields, type TransactionType } from './validation';

export type SurchargeExemption = 'row' | 'customer' | null;

export interface SurchargeFacts {
  /** ACH payments are never surcharged (the card networks' rules are the only basis for one). */
  isCard: boolean;
  /** Who exempts the transaction: the row's surcharge_exempt, or the vault customer's flag. */
  exemption: SurchargeExemption;
  /** Both billing_country and billing_state were given. */
  regionGiven: boolean;
  /** The surcharge rules' answer for card and region; null when it was not needed (see `needsSurchargeRule`). */
  surchargeable: boolean | null;
  /** The lowest cap of the rules in force (a state's law, the network's rule); null for none. */
  maxRateBps: number | null;
  /** The merchant's surcharge_rate_bps. */
  rateBps: number;
}

export interface Amounts {
  amount: number;
  baseAmount: number | null;
  surcharge: number;
  shippingAmount: number;
  taxAmount: number;
  discountAmount: number;
}

export { surchargeFor };

/** Whether the surcharge rules must be asked for this request (they may cost a lookup). */
export function needsSurchargeRule(fields: AmountFields, facts: Omit<SurchargeFacts, 'surchargeable' | 'maxRateBps'>): boolean {
  if (!facts.isCard || facts.exemption !== null || !facts.regionGiven) return false;
  if (fields.surcharge !== null) return fields.surcharge > 0;
  return fields.baseAmount !== null && facts.rateBps > 0;
}

export function computeAmounts(
  type: TransactionType,
  fields: AmountFields,
  taxExempt: boolean,
  facts: SurchargeFacts,
): { ok: true; value: Amounts } | { ok: false; errors: RowError[] } {
  const errors: RowError[] = [];
  const taxAmount = fields.taxAmount ?? 0;
  const shippingAmount = fields.shippingAmount ?? 0;
  const discountAmount = fields.discountAmount ?? 0;

  let surcharge = 0;
  if (fields.surcharge !== null) {
    surcharge = fields.surcharge;
    const refusal = surcharge > 0 ? surchargeRefusal(facts) : null;
    if (refusal) errors.push({ field: 'surcharge', msg: refusal });
  } else if (type !== 'credit' && fields.baseAmount !== null && facts.isCard && facts.exemption === null && facts.surchargeable === true) {
    surcharge = allowedSurcharge(fields.baseAmount, facts.rateBps, { allowed: true, maxRateBps: facts.maxRateBps }).surcharge;
  }
  if (surcharge > 0 && fields.surcharge !== null && facts.surchargeable === true && facts.maxRateBps !== null) {
    // Without base_amount the base is what the total holds besides its other parts.
    const base = fields.baseAmount ?? (fields.amount ?? 0) - surcharge - taxAmount - shippingAmount;
    const cap = Math.floor((Math.max(base, 0) * facts.maxRateBps) / 10_000);
    if (surcharge > cap) {
      errors.push({
        field: 'surcharge',
        msg: `exceeds the billing region's cap of ${(facts.maxRateBps / 100).toFixed(2)}% of ${base} (at most ${cap})`,
      });
    }
  }

  if (taxExempt && taxAmount > 0) errors.push({ field: 'tax_amount', msg: 'must be 0 when tax_exempt is true' });

  let amount: number;
  if (fields.baseAmount !== null) {
    amount = fields.baseAmount + surcharge + taxAmount;
    if (fields.amount !== null && fields.amount !== amount) {
      errors.push({
        field: 'amount',
        msg: `must equal base_amount + surcharge + tax_amount = ${fields.baseAmount} + ${surcharge} + ${taxAmount} = ${amount}`,
      });
    }
  } else {
    amount = fields.amount ?? 0;
    const parts = surcharge + shippingAmount + taxAmount;
    if (parts > amount) {
      errors.push({ field: 'amount', msg: `must include surcharge + shipping_amount + tax_amount = ${parts}` });
    }
  }
  if (amount > MAX_AMOUNT) errors.push({ field: 'amount', msg: `the total must be at most ${MAX_AMOUNT}` });
  if (type === 'verification') {
    // A zero-amount authorization: it checks the card and moves no money, so nothing is added to it.
    if (amount !== 0 || surcharge + shippingAmount + taxAmount > 0) {
      errors.push({ field: 'amount', msg: 'must be 0 for a verification (it checks the card; nothing is charged)' });
    }
  } else if (amount === 0 && type !== 'authorize') {
    errors.push({ field: 'amount', msg: `must be greater than 0 for a ${type} (0 is allowed only for an authorize or a verification)` });
  }

  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: { amount, baseAmount: fields.baseAmount, surcharge, shippingAmount, taxAmount, discountAmount },
  };
}

function surchargeRefusal(facts: SurchargeFacts): string | null {
  if (!facts.isCard) return 'not allowed: ACH payments cannot be surcharged';
  if (facts.exemption === 'row') return 'not allowed: the transaction is surcharge_exempt';
  if (facts.exemption === 'customer') return 'not allowed: the vault customer is surcharge-exempt';
  if (!facts.regionGiven) return 'not allowed: billing_country and billing_state are needed to check the surcharge rules';
  if (facts.surchargeable !== true) {
    return 'not allowed: this card may not be surcharged in the billing region (debit, prepaid, or a prohibiting jurisdiction)';
  }
  return null;
}
