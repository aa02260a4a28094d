#!/usr/bin/env node
// Writes scripts/sample-bins.csv: the sample BIN data `npm run dev` seeds into an empty bins table.
// Hand-written rows for the BINs of well-known public test cards, then 300 generated rows (fixed
// seed, so the file is reproducible). Issuers are fictional; no row comes from a real BIN dataset.
// Run: node scripts/generate-sample-bins.mjs
import { writeFileSync } from 'node:fs';

const HEADER = 'bin,card_brand,issuing_bank,card_type,card_level_generic,country,prepaid,commercial,currency';

// [bin, brand, issuer, type, level, country, prepaid, commercial, currency]
const TEST_CARDS = [
  ['411111', 'visa', 'Sample Test Bank', 'credit', 'classic', 'US', false, false, 'USD'],
  ['41111199', 'visa', 'Sample Eight Digit Bank', 'debit', 'classic', 'CA', false, false, 'CAD'],
  ['424242', 'visa', 'Sample Test Bank', 'credit', 'classic', 'US', false, false, 'USD'],
  ['400000', 'visa', 'Sample Test Bank', 'credit', 'classic', 'US', false, false, 'USD'],
  ['400005', 'visa', 'Sample Debit Bank', 'debit', 'classic', 'US', false, false, 'USD'],
  ['401288', 'visa', 'Sample Test Bank', 'credit', 'signature', 'US', false, false, 'USD'],
  ['422222', 'visa', 'Sample Test Bank', 'credit', 'classic', 'US', false, false, 'USD'],
  ['400055', 'visa', 'Sample Business Bank', 'credit', 'business', 'US', false, true, 'USD'],
  ['555555', 'mastercard', 'Sample Test Bank', 'credit', 'standard', 'US', false, false, 'USD'],
  ['520082', 'mastercard', 'Sample Debit Bank', 'debit', 'standard', 'US', false, false, 'USD'],
  ['510510', 'mastercard', 'Sample Prepaid Bank', 'debit', 'prepaid', 'US', true, false, 'USD'],
  ['222300', 'mastercard', 'Sample Test Bank', 'credit', 'world', 'US', false, false, 'USD'],
  ['555544', 'mastercard', 'Sample Business Bank', 'credit', 'business', 'US', false, true, 'USD'],
  ['378282', 'amex', 'Sample Amex Issuer', 'credit', 'green', 'US', false, false, 'USD'],
  ['371449', 'amex', 'Sample Amex Issuer', 'credit', 'gold', 'US', false, false, 'USD'],
  ['378734', 'amex', 'Sample Amex Issuer', 'credit', 'corporate', 'US', false, true, 'USD'],
  ['601111', 'discover', 'Sample Discover Issuer', 'credit', 'standard', 'US', false, false, 'USD'],
  ['601100', 'discover', 'Sample Discover Issuer', 'credit', 'standard', 'US', false, false, 'USD'],
  ['353011', 'jcb', 'Sample JCB Issuer', 'credit', 'standard', 'JP', false, false, 'JPY'],
  ['356600', 'jcb', 'Sample JCB Issuer', 'credit', 'gold', 'JP', false, false, 'JPY'],
  ['305693', 'diners', 'Sample Diners Issuer', 'credit', 'standard', 'US', false, false, 'USD'],
  ['362272', 'diners', 'Sample Diners Issuer', 'credit', 'standard', 'US', false, false, 'USD'],
  ['620000', 'unionpay', 'Sample UnionPay Issuer', 'debit', 'standard', 'CN', false, false, 'CNY'],
  ['220138', 'mir', 'Sample Mir Issuer', 'debit', 'standard', 'RU', false, false, 'RUB'],
  ['636297', 'elo', 'Sample Elo Issuer', 'credit', 'standard', 'BR', false, false, 'BRL'],
  ['606282', 'hipercard', 'Sample Hipercard Issuer', 'credit', 'standard', 'BR', false, false, 'BRL'],
  ['450875', 'visa', 'Sample UK Bank', 'credit', 'classic', 'GB', false, false, 'GBP'],
  ['497010', 'visa', 'Sample French Bank', 'debit', 'classic', 'FR', false, false, 'EUR'],
];

// Fictional issuers (the names Microsoft uses in its documentation samples).
const ISSUERS = ['Contoso Bank', 'Fabrikam Savings', 'Northwind Credit Union', 'Woodgrove Bank', 'Tailspin Financial', 'Adventure Works Bank', 'Litware Bank', 'Proseware Credit'];
const COUNTRIES = [['US', 'USD'], ['CA', 'CAD'], ['GB', 'GBP'], ['DE', 'EUR'], ['FR', 'EUR'], ['MX', 'MXN'], ['BR', 'BRL'], ['AU', 'AUD'], ['JP', 'JPY'], ['IN', 'INR']];
const BRANDS = [
  ['visa', () => '4' + digits(5), ['classic', 'gold', 'platinum', 'signature', 'infinite', 'business']],
  ['mastercard', () => String(51 + rand(5)) + digits(4), ['standard', 'gold', 'platinum', 'world', 'world elite', 'business']],
  ['mastercard', () => String(2221 + rand(500)) + digits(2), ['standard', 'world']],
  ['amex', () => (rand(2) ? '34' : '37') + digits(4), ['green', 'gold', 'platinum', 'corporate']],
  ['discover', () => '6011' + digits(2), ['standard', 'it']],
  ['jcb', () => String(3528 + rand(62)) + digits(2), ['standard', 'gold']],
];

// A small deterministic PRNG (mulberry32), so the file is the same on every run.
let seed = 20261121;
function rand(n) {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
}
const digits = (n) => Array.from({ length: n }, () => rand(10)).join('');
const pick = (items) => items[rand(items.length)];

const rows = TEST_CARDS.map((row) => row.join(','));
const used = new Set(TEST_CARDS.map((row) => row[0]));
while (rows.length < TEST_CARDS.length + 300) {
  const [brand, makeBin, levels] = pick(BRANDS);
  const bin = makeBin();
  if (used.has(bin)) continue;
  used.add(bin);
  const [country, currency] = pick(COUNTRIES);
  const level = pick(levels);
  const commercial = /business|corporate/.test(level);
  const type = brand === 'amex' ? pick(['credit', 'charge']) : pick(['credit', 'credit', 'debit']);
  const prepaid = type === 'debit' && rand(6) === 0;
  rows.push([bin, brand, `${pick(ISSUERS)} ${country}`, type, prepaid ? 'prepaid' : level, country, prepaid, commercial, currency].join(','));
}

const file = new URL('./sample-bins.csv', import.meta.url);
writeFileSync(file, [HEADER, ...rows].join('\n') + '\n');
console.log(`Wrote ${rows.length} rows to ${file.pathname}`);
