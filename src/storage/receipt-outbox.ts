/**
 * The receipt outbox: a table of a ledger shard's own SQLite (durable-objects/ledger-shard/), so
 * that the intent to send a receipt is written in the same storage transaction as the transaction's
 * state change it is for (docs/receipts.md, "The outbox"). The shard's alarm sends what is due
 * (services/receipts/outbox.ts).
 *
 *   receipt_outbox  one row per write that asked for receipts: a batch chunk's approved rows with
 *                   email_receipt true (up to BATCH_CHUNK_ROWS receipts in one row, as the chunk's
 *                   records are one page row), one API transaction, one refund or void, one resend.
 *                   `entries` holds each receipt: what it says (its facts: no card number, the last
 *                   four digits only), its recipient, and its state (queued, sent, failed, with
 *                   when). The counts and the earliest next attempt sit beside them in columns, so
 *                   the sender and a batch's summary never parse the rows they do not need.
 *
 * Rows stay as long as the shard (TRANSACTION_RETENTION_DAYS, then the shard is emptied): a
 * transaction's record answers its receipts' state for as long as the record itself.
 */

import type { ReceiptKind, ReceiptStatus } from '../schemas/receipts';

export type { ReceiptKind, ReceiptStatus };

/**
 * What a receipt says, fixed when it is queued (a later void or refund sends its own): taken from
 * the transaction's record, never its card number (`last4` only) or expiry.
 */
export interface ReceiptFacts {
  /** When the transaction (or the refund or void) happened. */
  at: string;
  /** Minor units: the total of the transaction, or what the refund or void moved. */
  amount: number;
  currency: string;
  /** Parts of `amount`, 0 when absent. */
  surcharge: number;
  tax: number;
  shipping: number;
  discount: number;
  authCode: string | null;
  paymentType: 'card' | 'ach';
  /** The card's brand (visa, mastercard, …) or null; for ACH, null. */
  brand: string | null;
  /** The last four digits of the card or account. */
  last4: string | null;
  orderId: string | null;
  poNumber: string | null;
  description: string | null;
  /** The billing name as the request gave it (shown escaped). */
  customerName: string | null;
  /** A refund or a void: the transaction it refunds or voids. */
  referencedTransactionId: string | null;
}

export interface ReceiptEntry {
  /** `{transaction id}:{kind}`, or `{transaction id}:{kind}:{n}` for the n-th sent on request: the receipt's identity. */
  id: string;
  transactionId: string;
  kind: ReceiptKind;
  to: string;
  status: ReceiptStatus;
  /** Attempts made that the Email Service answered (a send refused at the rate limit is not one). */
  attempts: number;
  queuedAt: string;
  /** While queued: when it is next tried. */
  nextAttemptAt: string | null;
  sentAt: string | null;
  failedAt: string | null;
  /** The Email Service's last error code and message (never a card number: it quotes none). */
  lastError: string | null;
  /** A resend's Idempotency-Key: the same key again queues nothing more. */
  requestKey: string | null;
  facts: ReceiptFacts;
}

export interface OutboxRow {
  id: number;
  /** The page of the records (a batch chunk's page), or the transaction id the receipts are for. */
  page: string;
  entries: ReceiptEntry[];
}

/** The shard schema step that adds the outbox (appended to the shard's MIGRATIONS). */
export const RECEIPT_OUTBOX_MIGRATION = `CREATE TABLE IF NOT EXISTS receipt_outbox (
     id INTEGER PRIMARY KEY,
     page TEXT NOT NULL,
     entries TEXT NOT NULL,
     queued INTEGER NOT NULL,
     sent INTEGER NOT NULL,
     failed INTEGER NOT NULL,
     next_attempt_at TEXT,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX IF NOT EXISTS receipt_outbox_page ON receipt_outbox(page);
   CREATE INDEX IF NOT EXISTS receipt_outbox_due ON receipt_outbox(next_attempt_at) WHERE next_attempt_at IS NOT NULL;`;

function hasOutbox(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'receipt_outbox'").toArray().length > 0;
}

type OutboxSql = { id: number; page: string; entries: string };

function rowFromSql(row: OutboxSql): OutboxRow {
  return { id: row.id, page: row.page, entries: JSON.parse(row.entries) as ReceiptEntry[] };
}

/** The columns a row's entries decide: its counts and its earliest next attempt. */
function summaryOf(entries: readonly ReceiptEntry[]): { queued: number; sent: number; failed: number; nextAttemptAt: string | null } {
  let queued = 0;
  let sent = 0;
  let failed = 0;
  let next: string | null = null;
  for (const entry of entries) {
    if (entry.status === 'queued') {
      queued++;
      if (entry.nextAttemptAt !== null && (next === null || entry.nextAttemptAt < next)) next = entry.nextAttemptAt;
    } else if (entry.status === 'sent') sent++;
    else failed++;
  }
  return { queued, sent, failed, nextAttemptAt: next };
}

/** Writes a new row of receipts to send (inside the caller's transaction). */
export function insertOutboxRow(sql: SqlStorage, page: string, entries: readonly ReceiptEntry[], now: string): void {
  const summary = summaryOf(entries);
  sql.exec(
    'INSERT INTO receipt_outbox (page, entries, queued, sent, failed, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    page,
    JSON.stringify(entries),
    summary.queued,
    summary.sent,
    summary.failed,
    summary.nextAttemptAt,
    now,
    now,
  );
}

/** Rewrites a row's entries (the sender, after a group of sends). */
export function updateOutboxRow(sql: SqlStorage, row: OutboxRow, now: string): void {
  const summary = summaryOf(row.entries);
  sql.exec(
    'UPDATE receipt_outbox SET entries = ?, queued = ?, sent = ?, failed = ?, next_attempt_at = ?, updated_at = ? WHERE id = ?',
    JSON.stringify(row.entries),
    summary.queued,
    summary.sent,
    summary.failed,
    summary.nextAttemptAt,
    now,
    row.id,
  );
}

/**
 * The rows with a receipt due at `now`, earliest first, at most `limit`: their ids and how many
 * receipts each has queued (an upper bound of those due), read from the columns, no entries parsed.
 */
export function dueOutboxIds(sql: SqlStorage, now: string, limit: number): { id: number; queued: number }[] {
  if (!hasOutbox(sql)) return [];
  return sql
    .exec<{ id: number; queued: number }>('SELECT id, queued FROM receipt_outbox WHERE next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?', now, limit)
    .toArray();
}

/** One outbox row, its entries parsed; null once gone (the shard was emptied). */
export function readOutboxRow(sql: SqlStorage, id: number): OutboxRow | null {
  const row = sql.exec<OutboxSql>('SELECT id, page, entries FROM receipt_outbox WHERE id = ?', id).toArray()[0];
  return row ? rowFromSql(row) : null;
}

/** When the next queued receipt is due; null when none is queued. */
export function nextOutboxAttempt(sql: SqlStorage): string | null {
  if (!hasOutbox(sql)) return null;
  return sql.exec<{ at: string | null }>('SELECT MIN(next_attempt_at) AS at FROM receipt_outbox WHERE next_attempt_at IS NOT NULL').one().at;
}

/**
 * The receipts of the given transactions: rows under `pages` (exact names), and for each `floor`
 * value the row with the greatest page not above it (a batch row's line finds its chunk's row, as
 * its record finds its page).
 */
export function outboxEntriesFor(sql: SqlStorage, transactionIds: readonly string[], pages: { exact: readonly string[]; floor: readonly string[] }): ReceiptEntry[] {
  if (!hasOutbox(sql) || transactionIds.length === 0) return [];
  const names = new Set(pages.exact);
  for (const value of pages.floor) {
    const found = sql.exec<{ page: string | null }>('SELECT MAX(page) AS page FROM receipt_outbox WHERE page <= ?', value).one().page;
    if (found !== null) names.add(found);
  }
  if (names.size === 0) return [];
  const wanted = new Set(transactionIds);
  return sql
    .exec<OutboxSql>('SELECT id, page, entries FROM receipt_outbox WHERE page IN (SELECT value FROM json_each(?)) ORDER BY id', JSON.stringify([...names]))
    .toArray()
    .flatMap((row) => rowFromSql(row).entries.filter((entry) => wanted.has(entry.transactionId)));
}

/**
 * The receipts of the whole shard by state: a batch's counts (a batch shard holds one batch). Sums
 * of one row per chunk: at most BATCH_MAX_ROWS / BATCH_CHUNK_ROWS rows, never their entries.
 */
export function outboxCounts(sql: SqlStorage): { queued: number; sent: number; failed: number } {
  if (!hasOutbox(sql)) return { queued: 0, sent: 0, failed: 0 };
  const row = sql
    .exec<{ queued: number | null; sent: number | null; failed: number | null }>(
      'SELECT SUM(queued) AS queued, SUM(sent) AS sent, SUM(failed) AS failed FROM receipt_outbox',
    )
    .one();
  return { queued: row.queued ?? 0, sent: row.sent ?? 0, failed: row.failed ?? 0 };
}
