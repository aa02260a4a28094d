/**
 * Which declines may be retried, and when a declined subscription billing is retried. Pure.
 *
 * Never retried (the networks charge a fee for any reattempt): Visa's category 1 response codes
 * (pick up card, lost, stolen, closed account, no such account or issuer, not permitted, stop
 * payment orders) and Mastercard's "do not try again" merchant advice codes (03, 21). The sandbox
 * answers them for documented test cards (docs/transactions.md, "Sandbox").
 *
 * The retry schedule of a declined cycle: 2, 4, 6 and 8 days after the cycle's bill date (5
 * attempts in 9 days, as Visa Acceptance Solutions' monthly schedule retries every 2 days), then
 * the subscription is `failed`. Five attempts a cycle stay far under Visa's 15 (20 from May 2025)
 * reattempts in 30 days and Mastercard's 10 in 24 hours / 35 in 30 days for one card.
 */
import type { TransactionRecord } from '../../schemas/transaction-columns';
import { addDays } from './calendar';

/** Visa category 1 response codes (ISO 8583 field 39 as the processor answers them). */
export const VISA_CATEGORY_1 = new Set(['04', '07', '12', '14', '15', '41', '43', '46', '57', 'R0', 'R1', 'R3']);
/** Mastercard merchant advice codes that forbid another attempt, as processors quote them. */
const MASTERCARD_DO_NOT_TRY_AGAIN = /\bMAC ?(03|21)\b/;

export const RETRY_AFTER_DAYS = [2, 4, 6, 8] as const;

/** Whether the networks forbid ever retrying this declined attempt on the card. */
export function isNeverRetry(record: Pick<TransactionRecord, 'response' | 'payment_type' | 'processor_response_code' | 'processor_response_text'>): boolean {
  if (record.response !== 'declined' || record.payment_type !== 'card') return false;
  const code = record.processor_response_code === null ? '' : String(record.processor_response_code);
  if (VISA_CATEGORY_1.has(code)) return true;
  const text = record.processor_response_text === null ? '' : String(record.processor_response_text);
  return MASTERCARD_DO_NOT_TRY_AGAIN.test(text);
}

/** The day of the retry after `retries` declined attempts of the cycle billed on `cycleDate`; null: none left. */
export function retryDate(cycleDate: string, retries: number): string | null {
  const after = RETRY_AFTER_DAYS[retries - 1];
  return after === undefined ? null : addDays(cycleDate, after);
}
