import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { isValidRoutingNumber } from '../../src/lib/aba';
import { open, seal } from '../../src/lib/card-crypto';
import { formatExpiry, isExpired, parseExpiry } from '../../src/lib/expiry';
import { isValidCardNumber, passesLuhn } from '../../src/lib/card-number';
import { maskAccountNumber, maskCardNumber } from '../../src/lib/mask';
import { redactDigits } from '../../src/lib/redact';

describe('Luhn', () => {
  it('accepts well-known test cards and refuses one digit off', () => {
    for (const card of ['4111111111111111', '5555555555554444', '378282246310005', '6011111111111117', '3530111333300000']) {
      expect(isValidCardNumber(card)).toBe(true);
    }
    expect(passesLuhn('4111111111111112')).toBe(false);
  });

  it('refuses non-ASCII digits, separators and wrong lengths', () => {
    expect(passesLuhn('٤١١١١١١١١١١١١١١١')).toBe(false); // Arabic-Indic digits
    expect(isValidCardNumber('4111 1111 1111 1111')).toBe(false);
    expect(isValidCardNumber('42424242424')).toBe(false); // 11 digits
    expect(isValidCardNumber('4'.repeat(20))).toBe(false);
  });
});

describe('ABA routing numbers', () => {
  it('accepts valid checksums and refuses others', () => {
    expect(isValidRoutingNumber('021000021')).toBe(true); // JPMorgan Chase
    expect(isValidRoutingNumber('011000015')).toBe(true); // Federal Reserve Boston
    expect(isValidRoutingNumber('021000022')).toBe(false);
    expect(isValidRoutingNumber('02100002')).toBe(false);
    expect(isValidRoutingNumber('02100002a')).toBe(false);
  });
});

describe('expiration dates', () => {
  it('parses MM/YY, MMYY, MM/YYYY and MMYYYY', () => {
    for (const text of ['12/27', '1227', '12/2027', '122027']) expect(parseExpiry(text)).toEqual({ month: 12, year: 2027 });
    for (const text of ['13/27', '0/27', '12-27', '1/27', '12/7', '']) expect(parseExpiry(text)).toBeNull();
  });

  it('treats a card as good through the last day of its month', () => {
    const expiry = { month: 11, year: 2026 };
    expect(isExpired(expiry, new Date('2026-11-30T23:59:59Z'))).toBe(false);
    expect(isExpired(expiry, new Date('2026-12-01T00:00:00Z'))).toBe(true);
    expect(formatExpiry({ month: 3, year: 2031 })).toBe('03/31');
  });
});

describe('masking', () => {
  it('keeps the first 6 (or 8) and last 4 digits only', () => {
    expect(maskCardNumber('4111111111111111')).toBe('411111******1111');
    expect(maskCardNumber('4111111111111111', 8)).toBe('41111111****1111');
    expect(maskCardNumber('378282246310005')).toBe('378282*****0005');
    expect(maskAccountNumber('123456789')).toBe('*****6789');
  });
});

describe('card data sealing', () => {
  it('round-trips, never contains the plaintext, and is bound to its associated data', async () => {
    const sealed = await seal(env.CARD_DATA_KEY, '4111111111111111', 'merchant-a');
    expect(sealed).not.toContain('4111111111111111');
    expect(sealed).toMatch(/^v1\./);
    expect(await open(env.CARD_DATA_KEY, sealed, 'merchant-a')).toBe('4111111111111111');
    expect(await open(env.CARD_DATA_KEY, sealed, 'merchant-b')).toBeNull();
    expect(await seal(env.CARD_DATA_KEY, '4111111111111111', 'merchant-a')).not.toBe(sealed); // fresh IV
  });

  it('refuses tampered or malformed values', async () => {
    const sealed = await seal(env.CARD_DATA_KEY, '4111111111111111');
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(await open(env.CARD_DATA_KEY, tampered)).toBeNull();
    expect(await open(env.CARD_DATA_KEY, 'not-sealed')).toBeNull();
  });
});

describe('log redaction', () => {
  it('removes card numbers, CVCs and account numbers from a message', () => {
    expect(redactDigits('card 4111 1111 1111 1111 cvc 123 failed at line 7')).toBe('card *** cvc *** failed at line 7');
    expect(redactDigits('account 000123456789')).toBe('account ***');
  });
});
