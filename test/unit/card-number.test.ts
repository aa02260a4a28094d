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
    ['digits with two spaces between groups', '4111  1111  1111  1111'],
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

  it('handles long inputs in one pass (a megabyte of separated digit groups)', () => {
    const text = '1234 5678 '.repeat(100_000);
    // Windows of 12-19 digits end only at group ends: a few checks per group, never a rescan.
    expect(containsCardNumber(`${text}4111 1111 1111 1111`)).toBe(true);
  });
});
