import { isValidCardNumber } from './luhn';

/** Masking of account numbers for display: the only form a card number takes outside encrypted storage. */

/**
 * First 6 digits (8 when the BIN record that matched is 8 digits long), then "*", then the last 4:
 * "411111******1111". Numbers too short to keep anything hidden show only the last 4.
 */
export function maskCardNumber(number: string, binLength: 6 | 8 = 6): string {
  const lead = number.length - 4 > binLength ? binLength : 0;
  return number.slice(0, lead) + '*'.repeat(number.length - lead - 4) + number.slice(-4);
}

/** Bank accounts show only their last 4 digits. */
export function maskAccountNumber(number: string): string {
  return '*'.repeat(Math.max(0, number.length - 4)) + number.slice(-4);
}

/**
 * Free text with every card number in it masked ("card 411111******1111"): for values shown
 * back that the client chose freely, such as an uploaded file's name.
 */
export function maskCardNumbersIn(text: string): string {
  return text.replace(/\d(?:[ -]?\d)*/g, (run) => {
    const digits = run.replace(/[ -]/g, '');
    return isValidCardNumber(digits) ? maskCardNumber(digits) : run;
  });
}
