/**
 * Declines the card networks forbid ever retrying on the same card (the networks charge a fee for
 * any reattempt): Visa's category 1 response codes (pick up card, lost, stolen, closed account, no
 * such account or issuer, not permitted, stop payment orders) and Mastercard's "do not try again"
 * merchant advice codes (03, 21). Used by the decline guard at every door (card-guard.ts) and by
 * recurring billing's retries. The sandbox answers them for documented test cards
 * (docs/transactions.md, "Sandbox"). Pure.
 */
import type { TransactionRecord } from '../../schemas/transaction-columns';

/** Visa category 1 response codes (ISO 8583 field 39 as the processor answers them). */
export const VISA_CATEGORY_1 = new Set(['04', '07', '12', '14', '15', '41', '43', '46', '57', 'R0', 'R1', 'R3']);
/** Mastercard merchant advice codes that forbid another attempt, as processors quote them. */
const MASTERCARD_DO_NOT_TRY_AGAIN = /\bMAC ?(03|21)\b/;

/** Whether the networks forbid ever retrying this declined attempt on the card. */
export function isNeverRetry(record: Pick<TransactionRecord, 'response' | 'payment_type' | 'processor_response_code' | 'processor_response_text'>): boolean {
  if (record.response !== 'declined' || record.payment_type !== 'card') return false;
  const code = record.processor_response_code === null ? '' : String(record.processor_response_code);
  if (VISA_CATEGORY_1.has(code)) return true;
  const text = record.processor_response_text === null ? '' : String(record.processor_response_text);
  return MASTERCARD_DO_NOT_TRY_AGAIN.test(text);
}
