/**
 * Makes a message safe to log: any run of 3 or more digits (a card number, a CVC, an account
 * number) becomes "***". Used on exception messages, which may quote input.
 */
export function redactDigits(text: string): string {
  return text.replace(/\d[\d -]{1,}\d/g, (run) => (run.replace(/\D/g, '').length >= 3 ? '***' : run));
}
