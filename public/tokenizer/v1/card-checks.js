// Card checks of the hosted tokenizer frame, run as the user types. They give the same answers as
// the service's own checks (src/lib/card-number.ts, card-brand.ts, expiry.ts), which decide in the end:
// test/unit/card-checks.test.ts holds both to the same answers. No DOM here, so that test can run it.

/** Luhn (mod 10) over a string of ASCII digits. */
export function passesLuhn(digits) {
  if (!/^[0-9]+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let digit = digits.charCodeAt(i) - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

/** [brand, first prefix, last prefix], both ends inclusive and of one length: src/lib/card-brand.ts's table. */
export const IIN_RANGES = [
  ['uatp', '1', '1'], ['visa', '4', '4'], ['mastercard', '51', '55'], ['mastercard', '2221', '2720'],
  ['mir', '2200', '2204'], ['amex', '34', '34'], ['amex', '37', '37'], ['diners', '300', '305'],
  ['diners', '309', '309'], ['diners', '36', '36'], ['diners', '38', '39'], ['jcb', '3528', '3589'],
  ['jcb', '1800', '1800'], ['jcb', '2131', '2131'], ['discover', '6011', '6011'], ['discover', '644', '649'],
  ['discover', '65', '65'], ['unionpay', '62', '62'], ['unionpay', '810', '817'], ['maestro', '50', '50'],
  ['maestro', '56', '59'], ['maestro', '63', '63'], ['maestro', '67', '67'], ['maestro', '493698', '493698'],
  ['dankort', '5019', '5019'], ['elo', '401178', '401179'], ['elo', '431274', '431274'], ['elo', '438935', '438935'],
  ['elo', '451416', '451416'], ['elo', '457393', '457393'], ['elo', '457631', '457632'], ['elo', '504175', '504175'],
  ['elo', '506699', '506778'], ['elo', '509000', '509999'], ['elo', '627780', '627780'], ['elo', '636297', '636297'],
  ['elo', '636368', '636368'], ['elo', '650031', '650033'], ['elo', '650035', '650051'], ['elo', '650405', '650439'],
  ['elo', '650485', '650538'], ['elo', '650541', '650598'], ['elo', '650700', '650718'], ['elo', '650720', '650727'],
  ['elo', '650901', '650978'], ['elo', '651652', '651679'], ['elo', '655000', '655019'], ['elo', '655021', '655058'],
  ['hipercard', '606282', '606282'], ['hipercard', '384100', '384100'], ['hipercard', '384140', '384140'],
  ['hipercard', '384160', '384160'], ['hiper', '637095', '637095'], ['hiper', '637568', '637568'],
  ['hiper', '637599', '637599'], ['hiper', '637609', '637609'], ['hiper', '637612', '637612'],
  ['hiper', '63737423', '63737423'], ['hiper', '63743358', '63743358'], ['troy', '9792', '9792'],
  ['rupay', '508500', '508999'], ['rupay', '606985', '607984'], ['rupay', '608001', '608500'],
  ['rupay', '652150', '653149'], ['verve', '506099', '506198'], ['verve', '507865', '507964'],
  ['naranja', '589562', '589562'], ['naranja', '402918', '402918'], ['naranja', '527572', '527572'],
];

/** The brand whose IIN range holds these digits, the longest range winning; undefined when none does. */
export function detectBrand(digits) {
  let best;
  for (const range of IIN_RANGES) {
    const length = range[1].length;
    if (length > digits.length || (best && best[1].length >= length)) continue;
    const head = digits.slice(0, length);
    if (head >= range[1] && head <= range[2]) best = range;
  }
  return best?.[0];
}

/**
 * What the frame needs per brand to guide typing: the name shown, the card number lengths issued,
 * the CVC length and where the groups of digits break. Unknown brands: 12 to 19 digits, 3-4 CVC.
 */
const BRANDS = {
  visa: { label: 'Visa', lengths: [13, 16, 18, 19], cvc: [3] },
  mastercard: { label: 'Mastercard', lengths: [16], cvc: [3] },
  amex: { label: 'American Express', lengths: [15], cvc: [4], gaps: [4, 10] },
  discover: { label: 'Discover', lengths: [16, 19], cvc: [3] },
  diners: { label: 'Diners Club', lengths: [14, 16, 19], cvc: [3], gaps: [4, 10] },
  jcb: { label: 'JCB', lengths: [16, 17, 18, 19], cvc: [3] },
  unionpay: { label: 'UnionPay', lengths: [14, 15, 16, 17, 18, 19], cvc: [3] },
  maestro: { label: 'Maestro', lengths: [12, 13, 14, 15, 16, 17, 18, 19], cvc: [3] },
  mir: { label: 'Mir', lengths: [16, 17, 18, 19], cvc: [3] },
  elo: { label: 'Elo', lengths: [16], cvc: [3] },
  hipercard: { label: 'Hipercard', lengths: [16], cvc: [3] },
  hiper: { label: 'Hiper', lengths: [16], cvc: [3] },
  troy: { label: 'Troy', lengths: [16], cvc: [3] },
  rupay: { label: 'RuPay', lengths: [16], cvc: [3] },
  verve: { label: 'Verve', lengths: [16, 18, 19], cvc: [3] },
  naranja: { label: 'Naranja', lengths: [16], cvc: [3] },
  dankort: { label: 'Dankort', lengths: [16], cvc: [3] },
  uatp: { label: 'UATP', lengths: [15], cvc: [3], gaps: [4, 9] },
};
const ANY_LENGTH = [12, 13, 14, 15, 16, 17, 18, 19];
const ANY_CVC = [3, 4];
const DEFAULT_GAPS = [4, 8, 12, 16];

export function brandLabel(brand) {
  return brand ? BRANDS[brand]?.label ?? brand : '';
}

export function numberLengths(brand) {
  return (brand && BRANDS[brand]?.lengths) || ANY_LENGTH;
}

export function cvcLengths(brand) {
  return (brand && BRANDS[brand]?.cvc) || ANY_CVC;
}

/** The ASCII digits of what was typed or pasted; other scripts' digits are not card digits. */
export function digitsOf(text) {
  return text.replace(/[^0-9]/g, '');
}

/** "4111111111111111" → "4111 1111 1111 1111"; American Express "3782 822463 10005". */
export function formatNumber(digits) {
  const brand = detectBrand(digits);
  const gaps = (brand && BRANDS[brand]?.gaps) || DEFAULT_GAPS;
  let out = '';
  for (let i = 0; i < digits.length; i++) {
    if (gaps.includes(i)) out += ' ';
    out += digits[i];
  }
  return out;
}

/** "1229" → "12 / 29"; a first digit above 1 is a month of its own: "4" → "04 / ". */
export function formatExpiration(text, deleting = false) {
  let digits = digitsOf(text).slice(0, 6);
  if (digits.length === 1 && digits > '1') digits = `0${digits}`;
  if (digits.length < 2) return digits;
  if (digits.length === 2) return deleting ? digits : `${digits} / `;
  return `${digits.slice(0, 2)} / ${digits.slice(2)}`;
}

/** As src/lib/expiry.ts: MM/YY, MMYY, MM/YYYY or MMYYYY (the frame removes the spaces it added). */
export function parseExpiry(value) {
  const match = /^(0[1-9]|1[0-2])\/?([0-9]{2}|[0-9]{4})$/.exec(value.trim());
  if (!match) return null;
  const month = Number(match[1]);
  const year = match[2].length === 2 ? 2000 + Number(match[2]) : Number(match[2]);
  return { month, year };
}

/** A card is good through the last day of its expiration month (UTC), as the service decides. */
export function isExpired(expiry, now) {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth() + 1;
  return expiry.year < year || (expiry.year === year && expiry.month < month);
}

/**
 * Each check answers { empty, complete, error, definite }: `error` is what the field shows once the
 * user has left it (or submits), `definite` says it is wrong already while typing, so it shows at once.
 */
export function checkNumber(digits) {
  const brand = digits.length > 0 ? detectBrand(digits) : undefined;
  const lengths = numberLengths(brand);
  const result = { brand, empty: digits.length === 0, complete: false, error: null, definite: false };
  if (result.empty) return { ...result, error: 'Enter the card number.' };
  if (lengths.includes(digits.length) && passesLuhn(digits)) return { ...result, complete: true };
  if (digits.length < Math.min(...lengths)) return { ...result, error: 'The card number is incomplete.' };
  return { ...result, error: 'The card number is not valid.', definite: digits.length >= Math.max(...lengths) };
}

export function checkExpiration(text, now) {
  const digits = digitsOf(text);
  const result = { empty: digits.length === 0, complete: false, error: null, definite: false, month: 0, year: 0 };
  if (result.empty) return { ...result, error: 'Enter the expiration date.' };
  const month = Number(digits.slice(0, 2));
  if (digits.length >= 2 && (month < 1 || month > 12)) {
    return { ...result, error: 'The expiration month is not valid.', definite: true };
  }
  if (digits.length !== 4 && digits.length !== 6) {
    return { ...result, error: 'The expiration date is incomplete.' };
  }
  const expiry = parseExpiry(`${digits.slice(0, 2)}/${digits.slice(2)}`);
  if (expiry === null) return { ...result, error: 'The expiration date is not valid.', definite: true };
  if (isExpired(expiry, now)) return { ...result, error: 'The card has expired.', definite: true };
  return { ...result, complete: true, month: expiry.month, year: expiry.year };
}

export function checkCvc(digits, brand) {
  const lengths = cvcLengths(brand);
  const result = { empty: digits.length === 0, complete: false, error: null, definite: false };
  if (result.empty) return { ...result, error: 'Enter the CVC.' };
  if (lengths.includes(digits.length)) return { ...result, complete: true };
  const wanted = lengths.length === 1 ? `${lengths[0]} digits` : `${lengths.join(' or ')} digits`;
  return { ...result, error: `The CVC has ${wanted}.`, definite: digits.length > Math.max(...lengths) };
}
