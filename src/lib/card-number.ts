/**
 * The one card-number detector: every guard that refuses a card number in plain text and every
 * masker that hides one (logs, file names, error messages, quoted ids) asks this module, so they
 * all agree on what a card number looks like.
 *
 * A card number is 12 to 19 ASCII digits passing Luhn, written together or in groups separated by
 * a single space, dash or dot ("4111 1111 1111 1111", "4111-1111-1111-1111", "4111.1111.1111.1111").
 * It may sit inside any text and next to other digits as long as a separator stands between them
 * ("12 4111111111111111", "1-5555555555554444"): every window of a digit run that starts and ends
 * at a group boundary is checked, not only the whole run. A window never starts or ends inside a
 * group, so a long unbroken digit string (an order id of 24 digits) is one group, judged whole.
 *
 * Linear: each run is scanned once, and from each group start at most 8 group ends fall within
 * 12-19 digits, each checked in at most 19 steps. No regular expression, so no backtracking.
 *
 * Self-contained (no imports) so that scripts/dev.mjs can load it with Node's type stripping.
 */

export const CARD_NUMBER_MIN_DIGITS = 12;
export const CARD_NUMBER_MAX_DIGITS = 19;

/** Luhn (mod 10) check of a digit string, as card numbers carry. */
export function passesLuhn(digits: string): boolean {
  if (digits.length === 0) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let digit = digits.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return false;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

/** A card number as a field that must hold one accepts it: 12 to 19 ASCII digits passing Luhn. */
export function isValidCardNumber(value: string): boolean {
  return value.length >= CARD_NUMBER_MIN_DIGITS && value.length <= CARD_NUMBER_MAX_DIGITS && passesLuhn(value);
}

/** A stretch of text holding one or more card numbers: from its first digit to just after its last. */
export interface CardNumberSpan {
  start: number;
  end: number;
  /** The span's digits, separators removed. */
  digits: string;
}

const isDigit = (code: number) => code >= 48 && code <= 57;
/** Space, dash, dot: what people type between digit groups. */
const isSeparator = (code: number) => code === 32 || code === 45 || code === 46;

/**
 * Every card number in `text`, as spans (overlapping or touching windows of one run merged into
 * one span), in text order.
 */
export function findCardNumbers(text: string): CardNumberSpan[] {
  const spans: CardNumberSpan[] = [];
  const length = text.length;
  let i = 0;
  while (i < length) {
    if (!isDigit(text.charCodeAt(i))) {
      i++;
      continue;
    }
    // One run: digits, with single separators between them.
    const positions: number[] = [];
    /** Digit indexes (into `positions`) that begin a group; ends are the next start, or the run's end. */
    const groupStarts: number[] = [0];
    let digits = '';
    for (;;) {
      positions.push(i);
      digits += text[i];
      i++;
      if (i < length && isDigit(text.charCodeAt(i))) continue;
      if (i + 1 < length && isSeparator(text.charCodeAt(i)) && isDigit(text.charCodeAt(i + 1))) {
        i++;
        groupStarts.push(digits.length);
        continue;
      }
      break;
    }
    if (digits.length >= CARD_NUMBER_MIN_DIGITS) collectWindows(text, positions, digits, groupStarts, spans);
  }
  return spans;
}

function collectWindows(
  text: string,
  positions: number[],
  digits: string,
  groupStarts: number[],
  spans: CardNumberSpan[],
): void {
  // Group ends, as digit counts: each later group's start, then the run's end.
  const groupEnds = [...groupStarts.slice(1), digits.length];
  let runSpanStart = -1;
  let runSpanEnd = -1;
  const flush = () => {
    if (runSpanStart < 0) return;
    const start = positions[runSpanStart] as number;
    const end = (positions[runSpanEnd - 1] as number) + 1;
    spans.push({ start, end, digits: digits.slice(runSpanStart, runSpanEnd) });
    runSpanStart = -1;
  };
  let firstEnd = 0;
  for (const from of groupStarts) {
    while (firstEnd < groupEnds.length && (groupEnds[firstEnd] as number) - from < CARD_NUMBER_MIN_DIGITS) firstEnd++;
    // The longest valid window from this start hides the most; shorter ones are inside it.
    let best = -1;
    for (let e = firstEnd; e < groupEnds.length; e++) {
      const to = groupEnds[e] as number;
      if (to - from > CARD_NUMBER_MAX_DIGITS) break;
      if (passesLuhn(digits.slice(from, to))) best = to;
    }
    if (best < 0) continue;
    if (runSpanStart >= 0 && from <= runSpanEnd) {
      runSpanEnd = Math.max(runSpanEnd, best);
    } else {
      flush();
      runSpanStart = from;
      runSpanEnd = best;
    }
  }
  flush();
}

/** Whether `text` holds a card number in any spelling the detector knows. */
export function containsCardNumber(text: string): boolean {
  // Most values (names, ids, amounts) have too few digits to hold one: answered without a scan.
  let count = 0;
  for (let i = 0; i < text.length && count < CARD_NUMBER_MIN_DIGITS; i++) if (isDigit(text.charCodeAt(i))) count++;
  return count >= CARD_NUMBER_MIN_DIGITS && findCardNumbers(text).length > 0;
}

/**
 * The first `lead` digits (6, or 8 when an 8-digit BIN is known), "*" for the rest but the last 4:
 * "411111******1111". Numbers too short to keep anything hidden show only the last 4.
 */
export function maskDigits(digits: string, lead = 6): string {
  lead = digits.length - 4 > lead ? lead : 0;
  return digits.slice(0, lead) + '*'.repeat(digits.length - lead - 4) + digits.slice(-4);
}

/**
 * `text` with every card number in it replaced (by default masked, separators dropped:
 * "card 4111-1111-1111-1111" → "card 411111******1111").
 */
export function maskCardNumbersIn(text: string, replace: (digits: string) => string = maskDigits): string {
  const spans = findCardNumbers(text);
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.start) + replace(span.digits);
    at = span.end;
  }
  return out + text.slice(at);
}
