/**
 * The one card-number detector: every guard that refuses a card number in plain text and every
 * masker that hides one (logs, file names, error messages, quoted ids) asks this module, so they
 * all agree on what a card number looks like.
 *
 * Normalised before matching: a digit of any script (`\p{Nd}`: fullwidth, Arabic-Indic,
 * Devanagari, ...) counts as its ASCII digit, and any run of separators between digit groups joins
 * them: whitespace of any kind (no-break and zero-width included, and every other invisible format
 * character), `-` and the Unicode dashes, `.`, `/`, `_`, `,`, `:`, `+`.
 *
 * A card number is a window of such a run holding 12 to 19 digits that passes Luhn and starts with
 * an IIN of a brand that issues numbers of its length (src/lib/card-brand.ts). Windows start at a
 * group's first digit or one digit into it (a card glued to one more digit in front), and end at a
 * group's last digit.
 *
 * Ids are not card numbers: the digits of a UUID (8-4-4-4-12 hex groups) and of a hex token where
 * letters and digits alternate (a hash, a UUID without dashes) are never read; a digit group inside
 * another token where letters and digits alternate (the service's base-32 ids, base-36 ids) is only
 * judged alone, never joined to its neighbours across separators. docs/security.md has the measured
 * false-positive rates (test/node/card-number-ids.test.ts).
 *
 * Linear: the text is read once; from each group start at most 2 x 8 windows are checked, each in
 * at most 19 steps (counted in `DetectorWork`, which test/unit/card-number.test.ts holds to the
 * input's length). No regular expression runs over the text, so no backtracking.
 *
 * Imports only card-brand.ts (no imports of its own), with its extension, so that scripts/dev.mjs
 * can load both with Node's type stripping.
 */
import { hasIssuedIinAndLength } from './card-brand.ts';

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

/** What the detector reads as a card number: Luhn, and a brand's IIN with a length it issues. */
function isCardDigits(digits: string): boolean {
  return passesLuhn(digits) && hasIssuedIinAndLength(digits);
}

/** A stretch of text holding one or more card numbers: from its first digit to just after its last. */
export interface CardNumberSpan {
  start: number;
  end: number;
  /** The span's digits as ASCII, separators removed. */
  digits: string;
}

const NON_ASCII_DIGIT = /^\p{Nd}$/u;
const NON_ASCII_SEPARATOR = /^[\s\p{Pd}\p{Cf}\u00b7\u2022\u2027\u2044\u2212\u2215\u30fb\uff0b\uff0c\uff0e\uff0f\uff1a\uff3f]$/u;
const digitValues = new Map<number, number>();

/**
 * 0-9 for a digit of any script, -1 otherwise. Unicode assigns every decimal digit set as ten
 * consecutive code points from 0 to 9, and adjacent sets follow each other (the mathematical
 * digits), so a digit's value is its distance from the start of its block of digits, modulo 10.
 */
function digitValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code < 0x660) return -1;
  const known = digitValues.get(code);
  if (known !== undefined) return known;
  let value = -1;
  if (NON_ASCII_DIGIT.test(String.fromCodePoint(code))) {
    let first = code;
    while (NON_ASCII_DIGIT.test(String.fromCodePoint(first - 1))) first--;
    value = (code - first) % 10;
  }
  if (digitValues.size < 4096) digitValues.set(code, value);
  return value;
}

const separators = new Map<number, boolean>();

function isSeparator(code: number): boolean {
  // Space, tab and line breaks, - . / _ , : +
  if (code < 128) return code === 32 || (code >= 9 && code <= 13) || code === 45 || code === 46 || code === 47 || code === 95 || code === 44 || code === 58 || code === 43;
  let known = separators.get(code);
  if (known === undefined) {
    known = NON_ASCII_SEPARATOR.test(String.fromCodePoint(code));
    // Bounded: text in a script of its own would otherwise grow the map by each new letter.
    if (separators.size < 4096) separators.set(code, known);
  }
  return known;
}

const isAsciiLetter = (code: number) => (code | 32) >= 97 && (code | 32) <= 122;
const isHexLetter = (code: number) => (code | 32) >= 97 && (code | 32) <= 102;

/** A maximal run of ASCII letters and digits (of any script): a word, an id, a number. */
interface Token {
  start: number;
  end: number;
  /** Only 0-9 and a-f / A-F. */
  hex: boolean;
  /** A letter stands between two digits: `550e8400`, `k3j5h2`. */
  alternates: boolean;
}

/** A maximal run of digits inside one token: `from` to `to` in the scan's digit arrays. */
interface Group {
  token: number;
  from: number;
  to: number;
  /** The group is its token's start, after separators only, and the previous token ended on a digit. */
  joinsPrevious: boolean;
}

/** What one pass over the text finds: every digit (made ASCII) with where it starts and ends. */
interface Scan {
  tokens: Token[];
  groups: Group[];
  digits: string;
  /** Where each digit starts in the text, and where it ends (a digit outside the BMP takes two). */
  at: number[];
  after: number[];
}

/**
 * Steps the detector took: each character read, each token compared for a UUID's shape, each
 * window end tried and each digit of a window checked. A test holds their growth to the input's.
 */
export interface DetectorWork {
  steps: number;
}

/** One pass over the text: its tokens, and its digit groups with the digits made ASCII. */
function scan(text: string, work: DetectorWork): Scan {
  const tokens: Token[] = [];
  const groups: Group[] = [];
  const at: number[] = [];
  const after: number[] = [];
  let digits = '';
  let token: Token | undefined;
  let group: Group | undefined;
  let tokenHasDigit = false;
  let letterSinceDigit = false;
  let previousTokenEndedOnDigit = false;
  /** Since the last token: something was there, and all of it separators. */
  let gapSeparatorsOnly = false;
  for (let i = 0; i < text.length; ) {
    work.steps++;
    const code = text.codePointAt(i) as number;
    const width = code > 0xffff ? 2 : 1;
    const value = digitValue(code);
    if (value >= 0 || isAsciiLetter(code)) {
      if (!token) {
        token = { start: i, end: i, hex: true, alternates: false };
        tokens.push(token);
        tokenHasDigit = false;
        letterSinceDigit = false;
      }
      if (value >= 0) {
        if (code > 57) token.hex = false;
        if (letterSinceDigit) token.alternates = true;
        if (!group) {
          const joinsPrevious = token.start === i && gapSeparatorsOnly && previousTokenEndedOnDigit;
          group = { token: tokens.length - 1, from: digits.length, to: digits.length, joinsPrevious };
          groups.push(group);
        }
        at.push(i);
        after.push(i + width);
        digits += String.fromCharCode(48 + value);
        group.to = digits.length;
        tokenHasDigit = true;
        letterSinceDigit = false;
      } else {
        if (!isHexLetter(code)) token.hex = false;
        if (tokenHasDigit) letterSinceDigit = true;
        group = undefined;
      }
      token.end = i + width;
    } else {
      if (token) {
        previousTokenEndedOnDigit = group !== undefined;
        gapSeparatorsOnly = true;
        token = undefined;
        group = undefined;
      }
      if (!isSeparator(code)) gapSeparatorsOnly = false;
    }
    i += width;
  }
  return { tokens, groups, digits, at, after };
}

/** Marks the tokens of each UUID (8-4-4-4-12 hex groups joined by single dashes). */
function uuidTokens(text: string, tokens: Token[], work: DetectorWork): Set<number> {
  const inUuid = new Set<number>();
  const lengths = [8, 4, 4, 4, 12];
  for (let t = 0; t + 4 < tokens.length; t++) {
    let shaped = true;
    for (let k = 0; k < 5 && shaped; k++) {
      work.steps++;
      const token = tokens[t + k] as Token;
      const previous = tokens[t + k - 1];
      shaped =
        token.hex &&
        token.end - token.start === lengths[k] &&
        (k === 0 || (previous !== undefined && previous.end + 1 === token.start && text[previous.end] === '-'));
    }
    if (shaped) for (let k = 0; k < 5; k++) inUuid.add(t + k);
  }
  return inUuid;
}

/**
 * Every card number in `text`, as spans (overlapping or touching windows of one run merged into
 * one span), in text order.
 */
export function findCardNumbers(text: string, work: DetectorWork = { steps: 0 }): CardNumberSpan[] {
  const found = scan(text, work);
  const { tokens, groups } = found;
  const uuids = uuidTokens(text, tokens, work);
  const spans: CardNumberSpan[] = [];
  /** The run being gathered (groups `runFirst` to `g - 1`): joined by separators, none of them in an id. */
  let runFirst = -1;
  const flushRun = (end: number) => {
    if (runFirst >= 0) collectWindows(found, runFirst, end, spans, true, work);
    runFirst = -1;
  };
  groups.forEach((group, g) => {
    const token = tokens[group.token] as Token;
    if (uuids.has(group.token) || (token.hex && token.alternates)) {
      // An id's digits: never read, and they end any run.
      flushRun(g);
    } else if (token.alternates) {
      // A group inside a base-32/36 id: judged alone, never joined to its neighbours.
      flushRun(g);
      collectWindows(found, g, g + 1, spans, false, work);
    } else {
      if (!group.joinsPrevious) flushRun(g);
      if (runFirst < 0) runFirst = g;
    }
  });
  flushRun(groups.length);
  return spans;
}

/**
 * Pushes the card numbers of one run (groups `first` to `end - 1`, whose digits follow each other
 * in the scan's arrays); `glued` also tries windows one digit into a group.
 */
function collectWindows(
  { groups, digits, at, after }: Scan,
  first: number,
  end: number,
  spans: CardNumberSpan[],
  glued: boolean,
  work: DetectorWork,
): void {
  const runGroups = groups.slice(first, end);
  const runStart = (runGroups[0] as Group).from;
  const runEnd = (runGroups[runGroups.length - 1] as Group).to;
  if (runEnd - runStart < CARD_NUMBER_MIN_DIGITS) return;
  // Window ends, as indexes into the digits: each group's end.
  const groupEnds = runGroups.map((group) => group.to);
  const starts: number[] = [];
  for (const group of runGroups) {
    starts.push(group.from);
    if (glued && group.from + 1 < group.to) starts.push(group.from + 1);
  }
  let spanStart = -1;
  let spanEnd = -1;
  const flush = () => {
    if (spanStart < 0) return;
    spans.push({ start: at[spanStart] as number, end: after[spanEnd - 1] as number, digits: digits.slice(spanStart, spanEnd) });
    spanStart = -1;
  };
  let firstEnd = 0;
  for (const from of starts) {
    while (firstEnd < groupEnds.length && (groupEnds[firstEnd] as number) - from < CARD_NUMBER_MIN_DIGITS) {
      work.steps++;
      firstEnd++;
    }
    // The longest valid window from this start hides the most; shorter ones are inside it.
    let best = -1;
    for (let e = firstEnd; e < groupEnds.length; e++) {
      work.steps++;
      const to = groupEnds[e] as number;
      if (to - from > CARD_NUMBER_MAX_DIGITS) break;
      work.steps += to - from;
      if (isCardDigits(digits.slice(from, to))) best = to;
    }
    if (best < 0) continue;
    if (spanStart >= 0 && from <= spanEnd) {
      spanEnd = Math.max(spanEnd, best);
    } else {
      flush();
      spanStart = from;
      spanEnd = best;
    }
  }
  flush();
}

/** Whether `text` holds a card number in any spelling the detector knows. */
export function containsCardNumber(text: string): boolean {
  // Most values (names, amounts, short ids) have too few digits to hold one: answered without a
  // scan. Any digit of another script counts, so the fast path never misses one.
  let count = 0;
  for (let i = 0; i < text.length && count < CARD_NUMBER_MIN_DIGITS; i++) {
    const code = text.charCodeAt(i);
    if ((code >= 48 && code <= 57) || code >= 0x660) count++;
  }
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
