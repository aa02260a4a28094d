/**
 * A merchant's receipt budget for one UTC day, in the SQLite of its `ReceiptBudget` object
 * (durable-objects/receipt-budget.ts; docs/receipts.md, "Budgets"): how many receipts it sent that
 * day and in the current minute, and how many each recipient got, against the merchant's limits.
 *
 *   receipt_budget   one row: the day, the sketch's width, the day's and the minute's counts
 *   recipient_sketch the recipients' counts as a count-min sketch: DEPTH rows of `width` 16-bit
 *                    counters, kept in pages of PAGE_COUNTERS (8 KiB) written only once touched
 *
 * Why a sketch rather than a row per recipient: a row per recipient would grow with the merchant's
 * transactions (10 million a day at the design point), in one object. The sketch's size is fixed
 * when the day's first receipt is counted, from the merchant's daily budget (`widthFor`), so it does
 * not grow with anything after: at most DEPTH × 2 × MAX_WIDTH bytes (64 MiB), 64 KiB for the default
 * budget. A sketch never counts a recipient low (the limit always holds); it may count one high when
 * other recipients share both its counters. With `width` ≥ the daily budget a counter holds at
 * most one receipt of others on average, so a row's counter reaches the per-recipient limit L
 * wrongly with a probability of at most 1/L (Markov; about 1e-7 when recipients get a receipt or
 * two each, as customers do), and both rows at once at most 1/L² (1 % at the default 10; in practice
 * far less). Nothing here holds an address: only
 * the two 32-bit halves of its SHA-256 (services/receipts/budget.ts), and the object is emptied once
 * its day is over.
 */

export const DEPTH = 2;
export const PAGE_COUNTERS = 4096;
/** The widest sketch: a budget of 10 million receipts a day or more (2^24 counters a row). */
export const MAX_WIDTH = 1 << 24;
const COUNTER_MAX = 0xffff;

/** A recipient as the budget sees it: two 32-bit numbers from its address's hash. */
export type RecipientHash = readonly [number, number];

export interface BudgetLimits {
  /** Receipts the merchant may send in a UTC day. */
  daily: number;
  /** Receipts the merchant may send in a UTC minute (its share of the service's pace). */
  perMinute: number;
  /** Receipts one recipient may get from the merchant in a UTC day. */
  perRecipient: number;
}

/** Why a receipt may not go now: the merchant's day or minute is spent, or its recipient has had enough today. */
export type BudgetVerdict = 'ok' | 'daily' | 'minute' | 'recipient';

export const RECEIPT_BUDGET_SCHEMA = `CREATE TABLE IF NOT EXISTS receipt_budget (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     day TEXT NOT NULL,
     width INTEGER NOT NULL,
     used INTEGER NOT NULL,
     minute TEXT NOT NULL,
     minute_used INTEGER NOT NULL
   );
   CREATE TABLE IF NOT EXISTS recipient_sketch (page INTEGER PRIMARY KEY, counts BLOB NOT NULL);`;

/** The sketch's width for a daily budget: a power of two at least the budget, 4,096 to MAX_WIDTH. */
export function widthFor(daily: number): number {
  let width = PAGE_COUNTERS;
  while (width < daily && width < MAX_WIDTH) width *= 2;
  return width;
}

interface Meta {
  day: string;
  width: number;
  used: number;
  minute: string;
  minuteUsed: number;
}

function readBudgetMeta(sql: SqlStorage): Meta | null {
  const row = sql
    .exec<{ day: string; width: number; used: number; minute: string; minute_used: number }>('SELECT day, width, used, minute, minute_used FROM receipt_budget WHERE id = 1')
    .toArray()[0];
  return row ? { day: row.day, width: row.width, used: row.used, minute: row.minute, minuteUsed: row.minute_used } : null;
}

function writeBudgetMeta(sql: SqlStorage, meta: Meta): void {
  sql.exec(
    `INSERT INTO receipt_budget (id, day, width, used, minute, minute_used) VALUES (1, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET used = excluded.used, minute = excluded.minute, minute_used = excluded.minute_used`,
    meta.day,
    meta.width,
    meta.used,
    meta.minute,
    meta.minuteUsed,
  );
}

/** The pages of the sketch a call touches, read once and written back once. */
class Sketch {
  readonly #pages = new Map<number, Uint16Array>();
  readonly #dirty = new Set<number>();
  constructor(
    private readonly sql: SqlStorage,
    private readonly width: number,
  ) {}

  #slot(row: number, hash: number): { page: number; offset: number } {
    const index = (hash >>> 0) % this.width;
    return { page: row * (this.width / PAGE_COUNTERS) + Math.floor(index / PAGE_COUNTERS), offset: index % PAGE_COUNTERS };
  }

  #page(page: number): Uint16Array {
    let counts = this.#pages.get(page);
    if (!counts) {
      const row = this.sql.exec<{ counts: ArrayBuffer }>('SELECT counts FROM recipient_sketch WHERE page = ?', page).toArray()[0];
      counts = row ? new Uint16Array(row.counts.slice(0)) : new Uint16Array(PAGE_COUNTERS);
      this.#pages.set(page, counts);
    }
    return counts;
  }

  /** The recipient's count: the least of its counters (never below the truth). */
  estimate(hash: RecipientHash): number {
    let least = COUNTER_MAX;
    for (let row = 0; row < DEPTH; row++) {
      const { page, offset } = this.#slot(row, hash[row] ?? 0);
      least = Math.min(least, this.#page(page)[offset] ?? 0);
    }
    return least;
  }

  add(hash: RecipientHash, delta: 1 | -1): void {
    for (let row = 0; row < DEPTH; row++) {
      const { page, offset } = this.#slot(row, hash[row] ?? 0);
      const counts = this.#page(page);
      counts[offset] = Math.max(0, Math.min(COUNTER_MAX, (counts[offset] ?? 0) + delta));
      this.#dirty.add(page);
    }
  }

  write(): void {
    for (const page of this.#dirty) {
      const counts = this.#pages.get(page) as Uint16Array;
      this.sql.exec('INSERT INTO recipient_sketch (page, counts) VALUES (?, ?) ON CONFLICT (page) DO UPDATE SET counts = excluded.counts', page, counts.buffer);
    }
  }
}

/**
 * Counts the receipts that may go now, in order, and answers each one's verdict (call inside one
 * storage transaction). `now` is an ISO instant of the object's day.
 */
export function admitReceipts(sql: SqlStorage, now: string, limits: BudgetLimits, recipients: readonly RecipientHash[]): BudgetVerdict[] {
  const day = now.slice(0, 10);
  const minute = now.slice(0, 16);
  const stored = readBudgetMeta(sql);
  const meta: Meta = stored ?? { day, width: widthFor(limits.daily), used: 0, minute, minuteUsed: 0 };
  if (meta.minute !== minute) {
    meta.minute = minute;
    meta.minuteUsed = 0;
  }
  const sketch = new Sketch(sql, meta.width);
  const verdicts = recipients.map((hash): BudgetVerdict => {
    if (meta.used >= limits.daily) return 'daily';
    if (meta.minuteUsed >= limits.perMinute) return 'minute';
    if (sketch.estimate(hash) >= limits.perRecipient) return 'recipient';
    sketch.add(hash, 1);
    meta.used++;
    meta.minuteUsed++;
    return 'ok';
  });
  sketch.write();
  writeBudgetMeta(sql, meta);
  return verdicts;
}

/** Gives back receipts counted but not sent (the Email Service refused them for its own limits). */
export function releaseReceipts(sql: SqlStorage, now: string, recipients: readonly RecipientHash[]): void {
  const meta = readBudgetMeta(sql);
  if (!meta || recipients.length === 0) return;
  const sketch = new Sketch(sql, meta.width);
  for (const hash of recipients) sketch.add(hash, -1);
  sketch.write();
  meta.used = Math.max(0, meta.used - recipients.length);
  if (meta.minute === now.slice(0, 16)) meta.minuteUsed = Math.max(0, meta.minuteUsed - recipients.length);
  writeBudgetMeta(sql, meta);
}

/** How many receipts the merchant's day has counted for this recipient (never fewer than it got), counting nothing. */
export function recipientCount(sql: SqlStorage, recipient: RecipientHash): number {
  const meta = readBudgetMeta(sql);
  return meta ? new Sketch(sql, meta.width).estimate(recipient) : 0;
}

/** The day's counts as the admin API answers them. */
export function budgetUsage(sql: SqlStorage): { day: string | null; sent: number } {
  const meta = readBudgetMeta(sql);
  return { day: meta?.day ?? null, sent: meta?.used ?? 0 };
}
