import { describe, expect, it } from 'vitest';
import { containsCardNumber, findCardNumbers, maskCardNumbersIn } from '../../src/lib/card-number';
import { redactDigits } from '../../src/lib/redact';
import { CARD_SPELLINGS } from '../helpers/card-spellings';


describe('card-number detector', () => {
  it.each(CARD_SPELLINGS)('finds %j alone and inside text', (spelling) => {
    expect(containsCardNumber(spelling)).toBe(true);
    expect(containsCardNumber(`card: ${spelling}, exp 12/30`)).toBe(true);
    expect(containsCardNumber(`ref${spelling}x`)).toBe(true);
    expect(containsCardNumber(`2026-11-21 ${spelling}`)).toBe(true);
  });

  it('finds the number inside a longer digit run when a separator stands between them', () => {
    expect(findCardNumbers('12 4111111111111111')).toEqual([{ start: 3, end: 19, digits: '4111111111111111' }]);
    expect(findCardNumbers('1-5555555555554444')).toEqual([{ start: 2, end: 18, digits: '5555555555554444' }]);
    expect(findCardNumbers('4111-1111-1111-1111-99')).toEqual([{ start: 0, end: 19, digits: '4111111111111111' }]);
    // Two numbers in one run are both found.
    expect(containsCardNumber('4111 1111 1111 1111 5555 5555 5555 4444')).toBe(true);
    expect(maskCardNumbersIn('4111 1111 1111 1111 5555 5555 5555 4444')).toBe('411111**********************4444');
  });

  it.each([
    ['a US phone number', '+1 (415) 555-2671'],
    ['a US phone number with extension', '+1-415-555-2671 x1234'],
    ['a UK phone number', '+44 20 7946 0958'],
    ['a German phone number', '+49 30 90182034'],
    ['a French phone number', '+33 1 42 68 53 00'],
    ['an Australian phone number', '+61 2 9374 4000'],
    ['an ISO timestamp', '2026-11-21T05:40:00.000Z'],
    ['a European date and time', '21.11.2026 14:30'],
    ['a date and time', '2026-11-21 14:30:05'],
    ['an order id', 'ORD-2026-000123-45'],
    ['an invoice number', 'INV-20261121-0042'],
    ['a 24-digit reference (one group: never a window inside it)', '123456789012345678901234'],
    ['a 17-digit group failing Luhn', '41111111111111119'],
    ['an IP address', '192.168.100.200'],
    ['an amount', '1,234,567.89'],
    ['a number one digit off', '4111 1111 1111 1112'],
    ['an 11-digit number', '4242-4242-424'],
    ['a Luhn-valid 16-digit number no brand issues (IIN 9)', '9111 1111 1111 1110'],
    ['a Luhn-valid Amex IIN at a length Amex never issues (16)', '3782 8224 6310 0052'],
    ['a card with one more digit behind (a 17-digit reference)', '41111111111111119'],
    ['a UUID v4 whose groups spell a Luhn-valid Visa length', '41111111-1111-4008-8111-111111111111'],
    ['a UUID in upper case in a sentence', 'request 5F3C1E02-1234-4567-8912-345678901238 failed'],
    ['a hex digest', 'sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'],
  ])('passes %s: %j', (_what, text) => {
    expect(containsCardNumber(text)).toBe(false);
    expect(maskCardNumbersIn(text)).toBe(text);
  });

  it('masks every spelling to first 6 and last 4, keeping the text around it', () => {
    expect(maskCardNumbersIn('pay 4111-1111-1111-1111 now')).toBe('pay 411111******1111 now');
    expect(maskCardNumbersIn('12 4111111111111111.csv')).toBe('12 411111******1111.csv');
    expect(maskCardNumbersIn('/api/vault/customer/4111.1111.1111.1111')).toBe('/api/vault/customer/411111******1111');
    for (const spelling of CARD_SPELLINGS) expect(containsCardNumber(maskCardNumbersIn(spelling))).toBe(false);
  });

  it('log redaction uses it for every spelling, then hides shorter digit runs too', () => {
    for (const spelling of CARD_SPELLINGS) {
      expect(redactDigits(`failed for ${spelling} cvc 123`)).not.toMatch(/\d{3}/);
    }
    expect(redactDigits('line 7 of 9')).toBe('line 7 of 9');
  });

  it('finds a number at the end of a megabyte of digit groups', () => {
    const text = '1234 5678 '.repeat(100_000);
    expect(containsCardNumber(`${text}4111 1111 1111 1111`)).toBe(true);
  });

  // Inputs a careless implementation rescans: long runs of groups, one endless group, ids, separators.
  const LINEAR_SHAPES: Record<string, (length: number) => string> = {
    'digit groups with spaces': (length) => '1234 5678 '.repeat(length / 10),
    'one unbroken digit run': (length) => '7'.repeat(length),
    'card numbers back to back': (length) => '4111 1111 1111 1111 '.repeat(length / 20),
    'long separator runs between digits': (length) => '12 -/_.,:+ '.repeat(length / 11),
    'digits glued to one more in front': (length) => '14111111111111111 '.repeat(length / 18),
    'UUID-like hex groups': (length) => '0123abcd-0123-4567-89ab-'.repeat(length / 24),
    'non-ASCII digits and zero-width spaces': (length) => '\u0664\u200b\u0661\u200b'.repeat(length / 4),
  };

  it.each(Object.keys(LINEAR_SHAPES))('does work in proportion to the input: %s', (shape) => {
    // Steps counted, not time: exact on a loaded machine. A rescan of each run would grow 100 times.
    const make = LINEAR_SHAPES[shape] as (length: number) => string;
    const steps = (length: number) => {
      const work = { steps: 0 };
      findCardNumbers(make(length), work);
      return work.steps;
    };
    const short = steps(36_000);
    const long = steps(360_000);
    expect(long / short).toBeLessThan(10.1);
    expect(long / 360_000).toBeLessThan(2 * 8 * 20 + 2);
  });

  it('reads a card glued to one more digit in front, not one behind', () => {
    // In front: the 17 digits' own IIN is lost, so the window one digit in is checked.
    expect(findCardNumbers('order 14111111111111111')).toEqual([{ start: 7, end: 23, digits: '4111111111111111' }]);
    expect(maskCardNumbersIn('ref 95555555555554444')).toBe('ref 9555555******4444');
    // Behind: the run starts with its IIN and is judged at its length (a 17-digit Visa is no card).
    expect(containsCardNumber('55555555555544449')).toBe(false);
  });

  it('reads digits of every script and separators of every kind as the ASCII spelling', () => {
    expect(findCardNumbers('\u0966\u096a\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967\u0967')).toEqual([
      { start: 1, end: 17, digits: '4111111111111111' },
    ]);
    // Mathematical bold digits sit outside the BMP: two code units each, masked whole.
    const bold = [...'4111111111111111'].map((d) => String.fromCodePoint(0x1d7ce + Number(d))).join('');
    expect(maskCardNumbersIn(`x ${bold} y`)).toBe('x 411111******1111 y');
    for (const separator of ['\u2014', '\u2212', '\u202f', '\u3000', '\u2060', '\u00ad', '\ufeff', ' / ', '\n']) {
      expect(containsCardNumber(['4111', '1111', '1111', '1111'].join(separator)), JSON.stringify(separator)).toBe(true);
    }
    // A letter between groups is not a separator.
    expect(containsCardNumber('4111a1111a1111a1111')).toBe(false);
  });

  it('still reads a card number next to an id, and a card glued to a word', () => {
    expect(containsCardNumber('bat_k3j5h2g8x1q9w7e6r5t4 4111 1111 1111 1111')).toBe(true);
    expect(containsCardNumber('550e8400-e29b-41d4-a716-446655440000 4111111111111111')).toBe(true);
    expect(containsCardNumber('card4111111111111111exp1230')).toBe(true);
  });
});
