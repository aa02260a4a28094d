import { maskDigits } from './card-number';

/** Masking of account numbers for display: the only form a card number takes outside encrypted storage. */

/**
 * First 6 digits (8 when the BIN record that matched is 8 digits long), then "*", then the last 4:
 * "411111******1111". Numbers too short to keep anything hidden show only the last 4.
 */
export function maskCardNumber(number: string, binLength: 6 | 8 = 6): string {
  return maskDigits(number, binLength);
}

/** Bank accounts show only their last 4 digits. */
export function maskAccountNumber(number: string): string {
  return '*'.repeat(Math.max(0, number.length - 4)) + number.slice(-4);
}
