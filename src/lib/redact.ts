import { maskCardNumbersIn } from './card-number';

/**
 * Makes a message safe to log: every card number (in any spelling the card-number detector
 * knows) and then any other run of 3 or more digits (a CVC, an account number), with single
 * spaces, dashes or dots between them, becomes "***". Used on exception messages, which may
 * quote input.
 */
export function redactDigits(text: string): string {
  return maskCardNumbersIn(text, () => '***').replace(/\d(?:[ .-]?\d)+/g, (run) => (run.replace(/\D/g, '').length >= 3 ? '***' : run));
}

