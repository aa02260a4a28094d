/**
 * The CSV formats the BIN import understands, recognised by their header:
 * - `binbatch`: this service's own, columns named like the lookup response (any order, `bin`
 *   required): bin, card_brand, issuing_bank, card_type, card_level_generic, country,
 *   payment_method_type, prepaid, commercial, currency;
 * - `binlist`: BIN,Brand,Type,Category,Issuer,IssuerPhone,IssuerUrl,isoCode2,isoCode3,CountryName
 *   (Category carries the card level, and prepaid / business levels);
 * - `openbiin`: BIN6,Ranges,Issuer,Country,Brand,Type (Ranges lists digits 7-8 as "00-10|40-45";
 *   "00-99" or empty means the whole 6-digit BIN).
 * Account ranges (enhanced lookup) have one format: low, high and the same field columns.
 * Pure functions: a row becomes records or a reason, never an exception.
 */
import type { AccountRange, BinFields, BinRecord } from '../../storage/bins';
import { normalizeBrandName } from '../../lib/card-brand';

export type BinCsvFormat = 'binbatch' | 'binlist' | 'openbiin';

export type RowResult<T> = { ok: true; records: T[] } | { ok: false; reason: string };

export interface BinCsvLayout {
  format: BinCsvFormat;
  /** Lower-cased column name → index. */
  columns: Map<string, number>;
  width: number;
}

const FIELD_COLUMNS = ['card_brand', 'issuing_bank', 'card_type', 'card_level_generic', 'country', 'prepaid', 'commercial', 'currency'];
const BINBATCH_COLUMNS = new Set(['bin', 'payment_method_type', ...FIELD_COLUMNS]);
const RANGE_COLUMNS = new Set(['low', 'high', ...FIELD_COLUMNS]);
const BINLIST_REQUIRED = ['bin', 'brand', 'type', 'category', 'issuer', 'isocode2'];
const OPENBIIN_REQUIRED = ['bin6', 'ranges', 'issuer', 'country', 'brand', 'type'];

function columnMap(header: readonly string[]): Map<string, number> {
  return new Map(header.map((name, index) => [name.trim().toLowerCase(), index]));
}

function missing(columns: Map<string, number>, required: readonly string[]): string[] {
  return required.filter((name) => !columns.has(name));
}

export type HeaderResult<T> = { ok: true; layout: T } | { ok: false; reason: string };

/** Which format a BIN CSV is in, from its header row. */
export function detectBinFormat(header: readonly string[]): HeaderResult<BinCsvLayout> {
  const columns = columnMap(header);
  const layout = (format: BinCsvFormat): HeaderResult<BinCsvLayout> => ({ ok: true, layout: { format, columns, width: header.length } });
  if (columns.has('bin6')) {
    const lacking = missing(columns, OPENBIIN_REQUIRED);
    return lacking.length === 0 ? layout('openbiin') : { ok: false, reason: `OpenBIIN header lacks ${lacking.join(', ')}` };
  }
  if (columns.has('isocode2')) {
    const lacking = missing(columns, BINLIST_REQUIRED);
    return lacking.length === 0 ? layout('binlist') : { ok: false, reason: `binlist header lacks ${lacking.join(', ')}` };
  }
  if (columns.has('bin')) {
    const unknown = [...columns.keys()].filter((name) => !BINBATCH_COLUMNS.has(name));
    if (unknown.length > 0) return { ok: false, reason: `unknown column(s) ${unknown.join(', ')}; allowed: ${[...BINBATCH_COLUMNS].join(', ')}` };
    return layout('binbatch');
  }
  return {
    ok: false,
    reason:
      'unrecognised header: expected this service\'s format (bin, card_brand, ...), binlist (BIN,Brand,Type,Category,Issuer,...,isoCode2,...) or OpenBIIN (BIN6,Ranges,Issuer,Country,Brand,Type)',
  };
}

export interface RangeCsvLayout {
  columns: Map<string, number>;
  width: number;
}

export function detectRangeFormat(header: readonly string[]): HeaderResult<RangeCsvLayout> {
  const columns = columnMap(header);
  const lacking = missing(columns, ['low', 'high']);
  if (lacking.length > 0) return { ok: false, reason: `account range header lacks ${lacking.join(', ')}` };
  const unknown = [...columns.keys()].filter((name) => !RANGE_COLUMNS.has(name));
  if (unknown.length > 0) return { ok: false, reason: `unknown column(s) ${unknown.join(', ')}; allowed: ${[...RANGE_COLUMNS].join(', ')}` };
  return { ok: true, layout: { columns, width: header.length } };
}

class RowError extends Error {}

function cell(fields: readonly string[], columns: Map<string, number>, name: string): string {
  const index = columns.get(name);
  return index === undefined ? '' : (fields[index] ?? '').trim();
}

const orNull = (text: string): string | null => (text === '' ? null : text);

/** A bad value quoted in a row error: short, and never a long digit run (it may be a card number). */
function quoted(text: string): string {
  return /\d(?:[ -]?\d){11,}/.test(text) ? '(a long digit string)' : text.slice(0, 20);
}

const CARD_TYPES = new Set(['credit', 'debit', 'charge', 'deferred_debit']);

/** A card type; "prepaid" (some datasets put it there) sets the prepaid flag instead. */
function cardType(text: string, strict: boolean): { card_type: string | null; prepaid: boolean | null } {
  const type = text.toLowerCase().replace(/[\s-]+/g, '_');
  if (type === '') return { card_type: null, prepaid: null };
  if (type === 'prepaid') return { card_type: null, prepaid: true };
  if (CARD_TYPES.has(type)) return { card_type: type, prepaid: null };
  if (strict) throw new RowError(`card_type must be one of credit, debit, charge, deferred_debit, prepaid (got "${quoted(text)}")`);
  return { card_type: null, prepaid: null }; // e.g. OpenBIIN rows with "visa" as their type
}

function country(text: string, strict: boolean, column = 'country'): string | null {
  if (text === '') return null;
  if (/^[A-Za-z]{2}$/.test(text)) return text.toUpperCase();
  if (strict) throw new RowError(`${column} must be an ISO 3166 alpha-2 code (got "${quoted(text)}")`);
  return null;
}

function currency(text: string): string | null {
  if (text === '') return null;
  if (/^[A-Za-z]{3}$/.test(text)) return text.toUpperCase();
  throw new RowError(`currency must be an ISO 4217 code of 3 letters (got "${quoted(text)}")`);
}

function flag(text: string, column: string): boolean | null {
  const value = text.toLowerCase();
  if (value === '') return null;
  if (['true', 'yes', 'y', '1'].includes(value)) return true;
  if (['false', 'no', 'n', '0'].includes(value)) return false;
  throw new RowError(`${column} must be true or false (got "${quoted(text)}")`);
}

function level(text: string): string | null {
  const value = text.trim().toLowerCase().replace(/\s+/g, ' ');
  return value === '' || value === '-' || value === '—' ? null : value;
}

/** Prefix of 6-11 ASCII digits; `pad` left-pads 4-5 digit BINs whose leading zeros a spreadsheet dropped. */
function prefix(text: string, column: string, pad = false): string {
  const value = pad && /^[0-9]{4,5}$/.test(text) ? text.padStart(6, '0') : text;
  if (!/^[0-9]{6,11}$/.test(value)) throw new RowError(`${column} must be 6 to 11 digits (got ${text.length} characters)`); // never echo digits: they may be a card number
  return value;
}

/** Shared field columns of this service's formats (BINs and ranges). */
function ownFields(fields: readonly string[], columns: Map<string, number>): BinFields {
  const type = cardType(cell(fields, columns, 'card_type'), true);
  const prepaid = flag(cell(fields, columns, 'prepaid'), 'prepaid') ?? type.prepaid;
  return {
    card_brand: normalizeBrandName(cell(fields, columns, 'card_brand')) ?? null,
    issuing_bank: orNull(cell(fields, columns, 'issuing_bank')),
    card_type: type.card_type,
    card_level_generic: level(cell(fields, columns, 'card_level_generic')),
    country: country(cell(fields, columns, 'country'), true),
    prepaid,
    commercial: flag(cell(fields, columns, 'commercial'), 'commercial'),
    currency: currency(cell(fields, columns, 'currency')),
  };
}

const COMMERCIAL_LEVEL = /business|corporate|commercial|purchas|fleet/i;

function binRecords(layout: BinCsvLayout, fields: readonly string[]): BinRecord[] {
  const { columns } = layout;
  const get = (name: string) => cell(fields, columns, name);
  switch (layout.format) {
    case 'binbatch': {
      const method = get('payment_method_type').toLowerCase() || 'card';
      if (!/^[a-z_]{1,20}$/.test(method)) throw new RowError('payment_method_type must be a word such as card');
      return [{ prefix: prefix(get('bin'), 'bin'), payment_method_type: method, ...ownFields(fields, columns) }];
    }
    case 'binlist': {
      const category = get('category');
      const type = cardType(get('type'), false);
      return [
        {
          prefix: prefix(get('bin'), 'BIN', true),
          payment_method_type: 'card',
          card_brand: normalizeBrandName(get('brand')) ?? null,
          issuing_bank: orNull(get('issuer')),
          card_type: type.card_type,
          card_level_generic: level(category),
          country: country(get('isocode2'), false),
          prepaid: /prepaid/i.test(category) ? true : type.prepaid,
          commercial: category === '' ? null : COMMERCIAL_LEVEL.test(category),
          currency: null,
        },
      ];
    }
    case 'openbiin': {
      const bin6 = get('bin6');
      if (!/^[0-9]{6}$/.test(bin6)) throw new RowError(`BIN6 must be 6 digits (got "${quoted(bin6)}")`);
      const type = cardType(get('type'), false);
      const shared: Omit<BinRecord, 'prefix'> = {
        payment_method_type: 'card',
        card_brand: normalizeBrandName(get('brand')) ?? null,
        issuing_bank: orNull(get('issuer')),
        card_type: type.card_type,
        card_level_generic: null,
        country: country(get('country'), false),
        prepaid: type.prepaid,
        commercial: null,
        currency: null,
      };
      return expandRanges(bin6, get('ranges')).map((p) => ({ prefix: p, ...shared }));
    }
  }
}

/** "00-10|40-45" after BIN 457100 → 45710000 … 45710010, 45710040 … 45710045; "00-99" → the BIN itself. */
export function expandRanges(bin6: string, ranges: string): string[] {
  const text = ranges.trim();
  if (text === '' || text === '00-99') return [bin6];
  const prefixes: string[] = [];
  for (const block of text.split('|')) {
    const match = /^([0-9]{2})(?:-([0-9]{2}))?$/.exec(block.trim());
    if (!match) throw new RowError(`Ranges block "${quoted(block)}" must be NN or NN-NN (digits 7-8)`);
    const from = Number(match[1]);
    const to = Number(match[2] ?? match[1]);
    if (to < from) throw new RowError(`Ranges block "${quoted(block)}" ends before it starts`);
    for (let n = from; n <= to; n++) prefixes.push(bin6 + String(n).padStart(2, '0'));
  }
  return prefixes;
}

function rowResult<T>(layoutWidth: number, fields: readonly string[], build: () => T[]): RowResult<T> {
  if (fields.length !== layoutWidth) return { ok: false, reason: `expected ${layoutWidth} fields, found ${fields.length}` };
  try {
    return { ok: true, records: build() };
  } catch (err) {
    if (err instanceof RowError) return { ok: false, reason: err.message };
    throw err;
  }
}

/** One data row of a BIN CSV → the records to upsert (OpenBIIN rows may expand to several). */
export function parseBinRow(layout: BinCsvLayout, fields: readonly string[]): RowResult<BinRecord> {
  return rowResult(layout.width, fields, () => binRecords(layout, fields));
}

/** Bound of 6 to 19 digits. */
function bound(text: string, column: string): string {
  if (!/^[0-9]{6,19}$/.test(text)) throw new RowError(`${column} must be 6 to 19 digits`);
  return text;
}

/** One data row of an account range CSV → the range, bounds padded to 19 digits. */
export function parseRangeRow(layout: RangeCsvLayout, fields: readonly string[]): RowResult<AccountRange> {
  return rowResult(layout.width, fields, () => {
    const low = bound(cell(fields, layout.columns, 'low'), 'low').padEnd(19, '0');
    const high = bound(cell(fields, layout.columns, 'high'), 'high').padEnd(19, '9');
    if (low > high) throw new RowError('low must not be above high');
    if (low.slice(0, 6) !== high.slice(0, 6)) throw new RowError('low and high must share their first 6 digits (one BIN per range)');
    return [{ low, high, ...ownFields(fields, layout.columns) }];
  });
}
