import { describe, expect, it } from 'vitest';
import { detectBrand, normalizeBrandName } from '../../src/lib/card-brand';

// Public test card numbers and IIN vectors (Stripe, Braintree, Adyen test cards; network IIN tables).
const VECTORS: [string, string][] = [
  ['4111111111111111', 'visa'],
  ['4242424242424242', 'visa'],
  ['4000056655665556', 'visa'],
  ['5555555555554444', 'mastercard'],
  ['5105105105105100', 'mastercard'],
  ['2221000000000009', 'mastercard'],
  ['2223003122003222', 'mastercard'],
  ['2720990000000007', 'mastercard'],
  ['378282246310005', 'amex'],
  ['371449635398431', 'amex'],
  ['340000000000009', 'amex'],
  ['6011111111111117', 'discover'],
  ['6011000990139424', 'discover'],
  ['6445644564456445', 'discover'],
  ['3530111333300000', 'jcb'],
  ['3566002020360505', 'jcb'],
  ['30569309025904', 'diners'],
  ['38520000023237', 'diners'],
  ['36227206271667', 'diners'],
  ['6200000000000005', 'unionpay'],
  ['6221260000000000', 'unionpay'],
  ['8171999927660000', 'unionpay'],
  ['6759649826438453', 'maestro'],
  ['6304000000000000', 'maestro'],
  ['5018000000000009', 'maestro'],
  ['2201382000000013', 'mir'],
  ['2204000000000000', 'mir'],
  ['6362970000457013', 'elo'],
  ['5066991111111118', 'elo'],
  ['4576321111111111', 'elo'],
  ['5090000000000000', 'elo'],
  ['6062826786276634', 'hipercard'],
  ['6370950000000005', 'hiper'],
  ['6373742300000000', 'hiper'],
  ['9792000000000001', 'troy'],
  ['6521500000000000', 'rupay'],
  ['5061000000000000', 'verve'],
  ['5895620000000002', 'naranja'],
  ['5019717010103742', 'dankort'],
];

describe('detectBrand', () => {
  it.each(VECTORS)('%s is %s', (number, brand) => {
    expect(detectBrand(number)).toBe(brand);
  });

  it('lets the most specific range win over its enclosing one', () => {
    expect(detectBrand('457632')).toBe('elo'); // inside Visa 4
    expect(detectBrand('457600')).toBe('visa');
    expect(detectBrand('650035')).toBe('elo'); // inside Discover 65
    expect(detectBrand('650000')).toBe('discover');
    expect(detectBrand('63737423')).toBe('hiper'); // an 8-digit range
    expect(detectBrand('637374')).toBe('maestro'); // 6 digits are not enough to see it
  });

  it('detects Mastercard 2-series at its bounds only', () => {
    expect(detectBrand('222100')).toBe('mastercard');
    expect(detectBrand('272099')).toBe('mastercard');
    expect(detectBrand('222099')).toBeUndefined();
    expect(detectBrand('272100')).toBeUndefined();
  });

  it('answers undefined for digits no network claims', () => {
    expect(detectBrand('000000')).toBeUndefined();
    expect(detectBrand('700000')).toBeUndefined();
  });
});

describe('normalizeBrandName', () => {
  it('maps the spellings datasets use to one value', () => {
    expect(normalizeBrandName('american express')).toBe('amex');
    expect(normalizeBrandName('AMEX')).toBe('amex');
    expect(normalizeBrandName('American Express')).toBe('amex');
    expect(normalizeBrandName('MASTERCARD')).toBe('mastercard');
    expect(normalizeBrandName('diners club international')).toBe('diners');
    expect(normalizeBrandName('nspk mir')).toBe('mir');
    expect(normalizeBrandName(' China  UnionPay ')).toBe('unionpay');
  });

  it('keeps other brands, lower-cased, and drops empty ones', () => {
    expect(normalizeBrandName('PRIVATE LABEL')).toBe('private label');
    expect(normalizeBrandName('ebt')).toBe('ebt');
    expect(normalizeBrandName('  ')).toBeUndefined();
  });
});
