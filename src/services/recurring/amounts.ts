/**
 * What one billing charges: the subscription's amount, plus its add-ons, less its discounts, each
 * while its duration lasts. Pure.
 *
 * A percentage (thousandths of a percent) is of the subscription's own amount, rounded half up to
 * the cent; discounts never take a billing below zero. An entry with duration N applies to the
 * first N billings of the subscription (0: every billing until it ends).
 */
import type { AppliedAdjustment } from '../../schemas/recurring';

export function applies(entry: AppliedAdjustment, billings: number): boolean {
  return entry.duration === 0 || billings < entry.duration;
}

function valueOf(entry: AppliedAdjustment, base: number): number {
  if (entry.amount > 0) return entry.amount;
  return Math.round((base * entry.percentage) / 100_000);
}

export interface BillingAmount {
  base: number;
  adds: number;
  discounts: number;
  total: number;
}

/** The amounts of the billing that follows `billings` approved ones. */
export function billingAmount(base: number, addOns: AppliedAdjustment[], discounts: AppliedAdjustment[], billings: number): BillingAmount {
  const adds = addOns.filter((entry) => applies(entry, billings)).reduce((sum, entry) => sum + valueOf(entry, base), 0);
  const off = discounts.filter((entry) => applies(entry, billings)).reduce((sum, entry) => sum + valueOf(entry, base), 0);
  return { base, adds, discounts: off, total: Math.max(0, base + adds - off) };
}
