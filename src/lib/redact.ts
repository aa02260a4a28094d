import { maskCardNumbersIn } from './card-number';

/**
 * Makes a message safe to log: every card number (in any spelling the card-number detector
 * knows) and then any other run of 3 or more digits of any script (a CVC, an account number), with single
 * spaces, dashes or dots between them, becomes "***". Used on exception messages, which may
 * quote input.
 */
export function redactDigits(text: string): string {
  return maskCardNumbersIn(text, () => '***').replace(/\p{Nd}(?:[ .-]?\p{Nd})+/gu, (run) => (run.replace(/\P{Nd}/gu, '').length >= 3 ? '***' : run));
}

/**
 * A URL path or query string as a log line may show it: percent-escapes decoded (so an encoded
 * card number is seen), "+" read as a space in a query, then every card number masked.
 */
export function redactUrlPart(text: string, isQuery = false): string {
  const plain = isQuery ? text.replace(/\+/g, ' ') : text;
  let decoded: string;
  try {
    decoded = decodeURIComponent(plain);
  } catch {
    // A malformed escape elsewhere must not hide well-formed ones: decode the ASCII ones alone.
    decoded = plain.replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
  return maskCardNumbersIn(decoded);
}
