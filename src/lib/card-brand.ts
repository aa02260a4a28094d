/**
 * Card brands: the canonical names this service answers with, the normalisation of the free-text
 * brand names found in BIN datasets, and brand detection from IIN ranges (the fallback used when
 * no BIN record matches). Ranges follow ISO/IEC 7812 assignments as published by the networks and
 * mirrored by braintree/credit-card-type; where ranges overlap, the most specific prefix wins.
 */

/** Canonical brand ids: lower-case and stable, so clients and the result CSV can compare them. */
export type CardBrand =
  | 'visa'
  | 'mastercard'
  | 'amex'
  | 'discover'
  | 'diners'
  | 'jcb'
  | 'unionpay'
  | 'maestro'
  | 'mir'
  | 'elo'
  | 'hipercard'
  | 'hiper'
  | 'troy'
  | 'rupay'
  | 'verve'
  | 'naranja'
  | 'dankort'
  | 'uatp';

/** [brand, first prefix, last prefix]: both ends inclusive and of the same length. */
type IinRange = readonly [CardBrand, string, string];

const r = (brand: CardBrand, first: string, last = first): IinRange => [brand, first, last];

/** Exported for the hosted frame's copy (public/tokenizer/v1/card-checks.js), which a test holds to it. */
export const IIN_RANGES: readonly IinRange[] = [
  r('uatp', '1'),
  r('visa', '4'),
  r('mastercard', '51', '55'),
  r('mastercard', '2221', '2720'),
  r('mir', '2200', '2204'),
  r('amex', '34'),
  r('amex', '37'),
  r('diners', '300', '305'),
  r('diners', '309'),
  r('diners', '36'),
  r('diners', '38', '39'),
  r('jcb', '3528', '3589'),
  r('jcb', '1800'),
  r('jcb', '2131'),
  r('discover', '6011'),
  r('discover', '644', '649'),
  r('discover', '65'),
  r('unionpay', '62'),
  r('unionpay', '810', '817'),
  r('maestro', '50'),
  r('maestro', '56', '59'),
  r('maestro', '63'),
  r('maestro', '67'),
  r('maestro', '493698'),
  r('dankort', '5019'),
  r('elo', '401178', '401179'),
  r('elo', '431274'),
  r('elo', '438935'),
  r('elo', '451416'),
  r('elo', '457393'),
  r('elo', '457631', '457632'),
  r('elo', '504175'),
  r('elo', '506699', '506778'),
  r('elo', '509000', '509999'),
  r('elo', '627780'),
  r('elo', '636297'),
  r('elo', '636368'),
  r('elo', '650031', '650033'),
  r('elo', '650035', '650051'),
  r('elo', '650405', '650439'),
  r('elo', '650485', '650538'),
  r('elo', '650541', '650598'),
  r('elo', '650700', '650718'),
  r('elo', '650720', '650727'),
  r('elo', '650901', '650978'),
  r('elo', '651652', '651679'),
  r('elo', '655000', '655019'),
  r('elo', '655021', '655058'),
  r('hipercard', '606282'),
  r('hipercard', '384100'),
  r('hipercard', '384140'),
  r('hipercard', '384160'),
  r('hiper', '637095'),
  r('hiper', '637568'),
  r('hiper', '637599'),
  r('hiper', '637609'),
  r('hiper', '637612'),
  r('hiper', '63737423'),
  r('hiper', '63743358'),
  r('troy', '9792'),
  r('rupay', '508500', '508999'),
  r('rupay', '606985', '607984'),
  r('rupay', '608001', '608500'),
  r('rupay', '652150', '653149'),
  r('verve', '506099', '506198'),
  r('verve', '507865', '507964'),
  r('naranja', '589562'),
  r('naranja', '402918'),
  r('naranja', '527572'),
];

/**
 * The brand whose IIN range holds these digits, the most specific (longest) range winning;
 * undefined when no range does. Only ranges no longer than the digits given are considered.
 */
export function detectBrand(digits: string): CardBrand | undefined {
  let best: IinRange | undefined;
  for (const range of IIN_RANGES) {
    const length = range[1].length;
    if (length > digits.length || (best && best[1].length >= length)) continue;
    const head = digits.slice(0, length);
    // Same-length digit strings compare like the numbers they spell.
    if (head >= range[1] && head <= range[2]) best = range;
  }
  return best?.[0];
}

/**
 * The lengths each brand issues (ISO/IEC 7812 numbers of that network, as braintree/credit-card-type
 * lists them, Visa's legacy 13 and Maestro's 12 to 19 included). The card-number detector asks
 * this with the IIN: a Luhn-valid run whose length no brand of its prefix issues is not a card.
 */
export const CARD_LENGTHS: Readonly<Record<CardBrand, readonly number[]>> = {
  visa: [13, 16, 18, 19],
  mastercard: [16],
  amex: [15],
  discover: [16, 19],
  diners: [14, 16, 19],
  jcb: [16, 17, 18, 19],
  unionpay: [14, 15, 16, 17, 18, 19],
  maestro: [12, 13, 14, 15, 16, 17, 18, 19],
  mir: [16, 17, 18, 19],
  elo: [16],
  hipercard: [16],
  hiper: [16],
  troy: [16],
  rupay: [16],
  verve: [16, 18, 19],
  naranja: [16],
  dankort: [16],
  uatp: [15],
};

/**
 * Whether some brand whose IIN range holds these digits issues numbers of this length. Every
 * matching range counts, not only the most specific: an Elo prefix inside Visa's 4 is either.
 */
export function hasIssuedIinAndLength(digits: string): boolean {
  for (const range of IIN_RANGES) {
    const head = digits.slice(0, range[1].length);
    if (head.length === range[1].length && head >= range[1] && head <= range[2] && CARD_LENGTHS[range[0]].includes(digits.length)) {
      return true;
    }
  }
  return false;
}

/** Free-text names seen in BIN datasets → canonical ids. Keys are lower-case, single-spaced. */
const BRAND_ALIASES: Record<string, CardBrand> = {
  visa: 'visa',
  'visa electron': 'visa',
  vpay: 'visa',
  'v pay': 'visa',
  mastercard: 'mastercard',
  'master card': 'mastercard',
  mc: 'mastercard',
  'american express': 'amex',
  americanexpress: 'amex',
  'american-express': 'amex',
  amex: 'amex',
  discover: 'discover',
  'discover card': 'discover',
  diners: 'diners',
  'diners club': 'diners',
  'diners club international': 'diners',
  'diners-club': 'diners',
  dinersclub: 'diners',
  jcb: 'jcb',
  unionpay: 'unionpay',
  'union pay': 'unionpay',
  'china union pay': 'unionpay',
  'china unionpay': 'unionpay',
  cup: 'unionpay',
  maestro: 'maestro',
  mir: 'mir',
  'nspk mir': 'mir',
  elo: 'elo',
  hipercard: 'hipercard',
  hiper: 'hiper',
  troy: 'troy',
  rupay: 'rupay',
  verve: 'verve',
  naranja: 'naranja',
  dankort: 'dankort',
  uatp: 'uatp',
};

/**
 * A dataset's brand name in canonical form: known aliases map to their id (`American Express`
 * and `amex` → `amex`); any other brand (`private label`, `ebt`, `girocard`) is kept, lower-cased
 * and single-spaced, so no information is lost. Empty input gives undefined.
 */
export function normalizeBrandName(name: string | undefined): string | undefined {
  const key = (name ?? '').trim().toLowerCase().replace(/[\s_]+/g, ' ');
  if (key === '') return undefined;
  return BRAND_ALIASES[key] ?? key;
}
