/**
 * Which declines may be retried, and when a declined subscription billing is retried. Pure.
 *
 * Never retried: what the card networks forbid retrying (services/declines/network-rules.ts).
 *
 * The retry schedule of a declined cycle: 2, 4, 6 and 8 days after the cycle's bill date (5
 * attempts in 9 days, as Visa Acceptance Solutions' monthly schedule retries every 2 days), then
 * the subscription is `failed`. Five attempts a cycle stay far under Visa's 15 (20 from May 2025)
 * reattempts in 30 days and Mastercard's 10 in 24 hours / 35 in 30 days for one card.
 */
import { addDays } from './calendar';

// The networks' never-retry rule is the decline guard's, used here too (services/declines/network-rules.ts).
export { isNeverRetry } from '../declines/network-rules';

export const RETRY_AFTER_DAYS = [2, 4, 6, 8] as const;

/** The day of the retry after `retries` declined attempts of the cycle billed on `cycleDate`; null: none left. */
export function retryDate(cycleDate: string, retries: number): string | null {
  const after = RETRY_AFTER_DAYS[retries - 1];
  return after === undefined ? null : addDays(cycleDate, after);
}
