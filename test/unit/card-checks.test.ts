/**
 * The hosted frame's card checks (public/tokenizer/v1/card-checks.js, plain browser JavaScript)
 * against the service's own: the frame must never accept a card the token endpoint refuses, nor
 * show a brand the lookup would not, and it guides the user with its own messages.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as frame from '../../public/tokenizer/v1/card-checks.js';
import { detectBrand, IIN_RANGES } from '../../src/lib/card-brand';
import { isExpired, parseExpiry } from '../../src/lib/expiry';
import { passesLuhn } from '../../src/lib/card-number';
import { fuzzRuns } from '../helpers/fuzz';

const digitString = (maxLength: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength }).map((d) => d.join(''));

/** Digit strings that start inside a known IIN range more often than chance would. */
const cardLike = fc.oneof(
  digitString(19),
  fc.tuple(fc.constantFrom('4', '51', '2221', '2720', '34', '37', '36', '6011', '65', '62', '50', '6362', '5066', '6370', '9792', '1'), digitString(15)).map(
    ([head, tail]) => head + tail,
  ),
);

describe('the frame agrees with the service', () => {
  it('has the same IIN table', () => {
    expect(frame.IIN_RANGES).toEqual(IIN_RANGES);
  });

  it('on the brand of any digits', () => {
    fc.assert(fc.property(cardLike, (digits) => frame.detectBrand(digits) === detectBrand(digits)), fuzzRuns(3000));
  });

  it('on Luhn', () => {
    fc.assert(fc.property(cardLike, (digits) => frame.passesLuhn(digits) === passesLuhn(digits)), fuzzRuns(2000));
  });

  it('on expiration dates, and on when a card has expired', () => {
    const text = fc.array(fc.constantFrom('0', '1', '2', '3', '9', '/', ' '), { maxLength: 8 }).map((c) => c.join(''));
    const now = fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2040-12-31T23:59:59Z'), noInvalidDate: true });
    fc.assert(
      fc.property(text, now, (value, at) => {
        const mine = frame.parseExpiry(value);
        const theirs = parseExpiry(value);
        expect(mine).toEqual(theirs);
        if (mine && theirs) expect(frame.isExpired(mine, at)).toBe(isExpired(theirs, at));
      }),
      fuzzRuns(2000),
    );
  });

  it('never calls a card number complete that the token endpoint would refuse', () => {
    // Half the inputs end in their Luhn check digit, so the frame calls many of them complete
    // (random digits alone pass Luhn and a brand's length about once in a hundred).
    const withCheckDigit = cardLike.map((head) => {
      const check = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'].find((digit) => passesLuhn(head + digit));
      return head + (check ?? '0');
    });
    let complete = 0;
    fc.assert(
      fc.property(fc.oneof(cardLike, withCheckDigit), (digits) => {
        if (!frame.checkNumber(digits).complete) return;
        complete++;
        expect(digits.length >= 12 && digits.length <= 19 && passesLuhn(digits), digits).toBe(true);
      }),
      fuzzRuns(3000),
    );
    // The check above ran: a frame that called nothing complete would pass it vacuously.
    expect(complete).toBeGreaterThan(100);
  });
});

describe('what the user sees while typing', () => {
  it('groups digits as printed on the card', () => {
    expect(frame.formatNumber('4111111111111111')).toBe('4111 1111 1111 1111');
    expect(frame.formatNumber('378282246310005')).toBe('3782 822463 10005');
    expect(frame.formatNumber('4111111111111111111')).toBe('4111 1111 1111 1111 111');
    expect(frame.formatNumber('41')).toBe('41');
  });

  it('takes only ASCII digits from what is typed or pasted', () => {
    expect(frame.digitsOf('4111-1111 1111\u00a01111')).toBe('4111111111111111');
    expect(frame.digitsOf('٤١١١')).toBe('');
  });

  it('writes the expiration as MM / YY, a leading month digit above 1 padded', () => {
    expect(frame.formatExpiration('1')).toBe('1');
    expect(frame.formatExpiration('12')).toBe('12 / ');
    expect(frame.formatExpiration('12', true)).toBe('12');
    expect(frame.formatExpiration('4')).toBe('04 / ');
    expect(frame.formatExpiration('1229')).toBe('12 / 29');
    expect(frame.formatExpiration('12/2029')).toBe('12 / 2029');
  });

  it('a complete number passing Luhn is complete; failing Luhn at its longest length is wrong at once', () => {
    expect(frame.checkNumber('4111111111111111')).toMatchObject({ brand: 'visa', complete: true, error: null });
    expect(frame.checkNumber('378282246310005')).toMatchObject({ brand: 'amex', complete: true });
    expect(frame.checkNumber('5555555555554445')).toMatchObject({ complete: false, error: 'The card number is not valid.', definite: true });
    // A Visa number may still grow to 19 digits: wrong, but only shown once the user leaves the field.
    expect(frame.checkNumber('4111111111111112')).toMatchObject({ complete: false, error: 'The card number is not valid.', definite: false });
    expect(frame.checkNumber('411111')).toMatchObject({ complete: false, error: 'The card number is incomplete.', definite: false });
    expect(frame.checkNumber('')).toMatchObject({ empty: true, error: 'Enter the card number.' });
  });

  it('checks the expiration month, completeness and expiry against the clock', () => {
    const now = new Date('2026-11-23T12:00:00Z');
    expect(frame.checkExpiration('11 / 26', now)).toMatchObject({ complete: true, month: 11, year: 2026 });
    expect(frame.checkExpiration('10 / 26', now)).toMatchObject({ complete: false, error: 'The card has expired.', definite: true });
    expect(frame.checkExpiration('13', now)).toMatchObject({ error: 'The expiration month is not valid.', definite: true });
    expect(frame.checkExpiration('12 / 2', now)).toMatchObject({ error: 'The expiration date is incomplete.', definite: false });
    expect(frame.checkExpiration('12 / 2031', now)).toMatchObject({ complete: true, year: 2031 });
  });

  it('wants the CVC length of the brand', () => {
    expect(frame.checkCvc('123', 'visa')).toMatchObject({ complete: true });
    expect(frame.checkCvc('123', 'amex')).toMatchObject({ complete: false, error: 'The CVC has 4 digits.' });
    expect(frame.checkCvc('1234', 'amex')).toMatchObject({ complete: true });
    expect(frame.checkCvc('12', undefined)).toMatchObject({ error: 'The CVC has 3 or 4 digits.' });
    expect(frame.checkCvc('', 'visa')).toMatchObject({ empty: true, error: 'Enter the CVC.' });
  });
});
