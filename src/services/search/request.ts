/**
 * FluidPay's search request turned into the search's own terms: the conditions each record must
 * meet, the created_at window (FluidPay's default of four months when the request has none), and the
 * cursor a page continues from (docs/transactions.md, "Search").
 */
import { hash53 } from '../../lib/hash53';
import type { Condition, DateField, IntField, StringField } from '../../schemas/search-conditions';
import { ADDRESS_FIELDS, INT_FIELDS } from '../../schemas/search-conditions';
import type { SearchFilters } from '../../schemas/transaction-search';
import type { Position } from '../../storage/search/day';

/** The window searched when the request names none: FluidPay's "prior four months". */
export const DEFAULT_WINDOW_MONTHS = 4;

export interface SearchWindow {
  /** Included. */
  from: string;
  /** Excluded; null: no end. */
  to: string | null;
  defaulted: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

/** The last instant a search window can name: ISO 8601 strings compare as text only up to year 9999. */
export const LAST_INSTANT = '9999-12-31T23:59:59.999Z';

/**
 * `end` included to the end of its second (to its millisecond when it has one): the first instant
 * after it, at most LAST_INSTANT (the instant after 9999-12-31T23:59:59 is written +010000-…, which
 * sorts before every four-digit year and made a 0000-9999 range look reversed).
 */
function afterEnd(end: string): string {
  const ms = Math.min(Date.parse(end) + (/\.[0-9]+/.test(end) ? 1 : 1000), Date.parse(LAST_INSTANT));
  return new Date(ms).toISOString();
}

const REVERSED = `must be before end_date (dates run from 0000-01-01T00:00:00Z to ${LAST_INSTANT})`;

function monthsBefore(at: Date, months: number): Date {
  const shifted = new Date(at);
  shifted.setUTCMonth(shifted.getUTCMonth() - months);
  // 31 October less four months is 1 July (no 31 June): keep the day within the month.
  if (shifted.getUTCDate() !== at.getUTCDate()) shifted.setUTCDate(0);
  return shifted;
}

/** The created_at window: as given, or the last four months up to now (or up to the end given). */
export function searchWindow(range: SearchFilters['created_at'], now: Date): Parsed<SearchWindow> {
  const start = range?.start_date ? new Date(Date.parse(range.start_date)).toISOString() : null;
  const end = range?.end_date ? afterEnd(range.end_date) : null;
  if (start !== null && end !== null && start >= end) return { ok: false, field: 'created_at.start_date', message: REVERSED };
  if (start !== null) return { ok: true, value: { from: start, to: end, defaulted: false } };
  const from = monthsBefore(end === null ? now : new Date(Date.parse(end)), DEFAULT_WINDOW_MONTHS).toISOString();
  return { ok: true, value: { from, to: end, defaulted: range === undefined } };
}

function dateCondition(field: DateField, range: { start_date?: string | undefined; end_date?: string | undefined } | undefined): Parsed<Condition | null> {
  if (!range || (!range.start_date && !range.end_date)) return { ok: true, value: null };
  const from = range.start_date ? new Date(Date.parse(range.start_date)).toISOString() : null;
  const to = range.end_date ? afterEnd(range.end_date) : null;
  if (from !== null && to !== null && from >= to) return { ok: false, field: `${field}.start_date`, message: REVERSED };
  return { ok: true, value: { kind: 'date', field, from, to } };
}

type StringQuery = { operator: '=' | '!='; value: string } | undefined;

/** The conditions of the request's filters, created_at aside (it is the window). */
export function searchConditions(filters: SearchFilters): Parsed<Condition[]> {
  const conditions: Condition[] = [];
  const text = (field: StringField, query: StringQuery) => {
    if (query) conditions.push({ kind: 'string', field, op: query.operator, value: query.value });
  };
  text('id', filters.transaction_id);
  for (const field of ['type', 'status', 'ip_address', 'order_id', 'po_number', 'payment_method', 'payment_type', 'processor_id', 'customer_id', 'subscription_id', 'settlement_batch_id', 'batch_id', 'card_brand', 'last_four'] as const) {
    text(field, filters[field]);
  }
  for (const kind of ['billing', 'shipping'] as const) {
    const address = filters[`${kind}_address`];
    if (!address) continue;
    for (const field of ADDRESS_FIELDS) text(`${kind}_${field}`, address[field]);
  }
  for (const field of INT_FIELDS as readonly IntField[]) {
    const query = filters[field];
    if (query) conditions.push({ kind: 'int', field, op: query.operator, value: query.value });
  }
  for (const field of ['captured_at', 'settled_at'] as const) {
    const parsed = dateCondition(field, filters[field]);
    if (!parsed.ok) return parsed;
    if (parsed.value) conditions.push(parsed.value);
  }
  return { ok: true, value: conditions };
}

/** What a cursor carries: where the last page ended, the window and the first page's count, for these filters. */
export interface SearchCursor {
  after: Position;
  window: SearchWindow;
  totalCount: number;
  exact: boolean;
  /** A hash of the filters the cursor was made for. */
  filters: number;
}

/** The filters' fingerprint: a cursor continues the search it came from, not another. */
export function filtersFingerprint(filters: SearchFilters): number {
  const { created_at: _window, ...rest } = filters;
  return hash53(canonicalJson(rest));
}

/** JSON with every object's keys in order, so equal filters give equal text. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function encodeCursor(cursor: SearchCursor): string {
  const json = JSON.stringify({ v: 1, a: cursor.after.at, i: cursor.after.id, f: cursor.window.from, t: cursor.window.to, d: cursor.window.defaulted, n: cursor.totalCount, x: cursor.exact, h: cursor.filters });
  return btoa(json).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

export function decodeCursor(text: string): SearchCursor | null {
  try {
    const json = JSON.parse(atob(text.replaceAll('-', '+').replaceAll('_', '/'))) as Record<string, unknown>;
    const { v, a, i, f, t, d, n, x, h } = json;
    if (v !== 1 || typeof a !== 'string' || typeof i !== 'string' || typeof f !== 'string' || (t !== null && typeof t !== 'string')) return null;
    if (typeof d !== 'boolean' || typeof n !== 'number' || typeof x !== 'boolean' || typeof h !== 'number') return null;
    if ([a, f, ...(t === null ? [] : [t])].some((iso) => Number.isNaN(Date.parse(iso)))) return null;
    return { after: { at: a, id: i }, window: { from: f, to: t, defaulted: d }, totalCount: n, exact: x, filters: h };
  } catch {
    return null;
  }
}
