import { containsCardNumber, maskCardNumbersIn } from './card-number';

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
  return maskCardNumbersIn(decodeUrlPart(text, isQuery));
}

/** Percent-escapes decoded ("+" as a space in a query), as the reader of a URL sees it. */
function decodeUrlPart(text: string, isQuery = false): string {
  const plain = isQuery ? text.replace(/\+/g, ' ') : text;
  try {
    return decodeURIComponent(plain);
  } catch {
    // A malformed escape elsewhere must not hide well-formed ones: decode the ASCII ones alone.
    return plain.replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
}

/**
 * Whether a whole URL holds a card number: as written, with its escapes decoded, or in its query
 * read the form way. For URLs that are stored and answered back (webhook endpoints).
 */
export function urlContainsCardNumber(url: string): boolean {
  return containsCardNumber(url) || containsCardNumber(decodeUrlPart(url)) || containsCardNumber(decodeUrlPart(url, true));
}
