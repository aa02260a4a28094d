/**
 * What a ledger shard does for receipts, kept out of the shard's own files so that they carry only
 * one call at each place (durable-objects/ledger-shard/):
 *
 *   queueReceipts    inside the storage transaction that records completed transactions or an
 *                    approved refund or void: their receipts, one outbox row per page written
 *   armReceipts      right after it, in the same turn (so with the same commit): the alarm now
 *   rearmShardAlarm  at the end of the alarm: the next of the outbox's run, hash clearing, archiving
 *   the RPC answers  a transaction's receipts, a batch's counts, a resend queued
 */
import type { ReceiptEntry } from '../../storage/receipt-outbox';
import { insertOutboxRow, outboxCounts, outboxEntriesFor } from '../../storage/receipt-outbox';
import { readMeta } from '../../storage/ledger-shard';
import { noteWrite, shardAlarmAt, type OutboxRun } from './outbox';

/** Receipts to queue, by the page of the records they are for (a batch chunk's page, or a transaction id). */
export interface ReceiptGroup {
  page: string | null;
  entries: ReceiptEntry[];
}

/** Writes each group's receipts as one outbox row; call inside the transaction that records their transactions. */
export function queueReceipts(sql: SqlStorage, groups: readonly ReceiptGroup[]): void {
  for (const { page, entries } of groups) {
    const first = entries[0];
    if (!first) continue;
    insertOutboxRow(sql, page ?? first.transactionId, entries, first.queuedAt);
  }
}

/**
 * The alarm time this object last set for its receipts (in memory: an object started afresh does
 * not know it, and sets the alarm again).
 */
const armedAt = new WeakMap<DurableObjectStorage, number>();
/** An alarm due this soon (or that has just fired and is running) finds receipts queued now: no second one. */
const ARM_AHEAD_MS = 60_000;
const ARM_BEHIND_MS = 10_000;

/**
 * Arms the alarm to run at once when receipts were queued. Call right after the transaction that
 * queued them, before any await, so the alarm is committed with them: a receipt is never left
 * queued with no alarm to send it. The alarm then sets itself for what comes next. When this
 * object armed one due within the minute (a batch's chunks follow one another, and the pace is
 * per minute), that one will find them: every chunk of a batch does not wake the sender anew.
 */
export function armReceipts(storage: DurableObjectStorage, groups: readonly ReceiptGroup[]): Promise<void> {
  const now = Date.now();
  noteWrite(storage, now);
  if (!groups.some((group) => group.entries.length > 0)) return Promise.resolve();
  const known = armedAt.get(storage);
  if (known !== undefined && known >= now - ARM_BEHIND_MS && known <= now + ARM_AHEAD_MS) return Promise.resolve();
  armedAt.set(storage, now);
  return storage.setAlarm(now);
}

/**
 * Whether the alarm should leave retention to an alarm of its own: the run made sends, which the
 * Email binding counts in its 50 subrequests a request, and retention (R2 and D1 calls) is due.
 */
export function retentionWaits(sql: SqlStorage, run: OutboxRun, now: number): boolean {
  const meta = readMeta(sql);
  if (!meta || run.sent + run.failed + run.retrying === 0) return false;
  return [meta.hashesClearAt, meta.archiveAt].some((at) => at !== null && Date.parse(at) <= now);
}

/** Sets the shard's alarm for whichever comes first: the outbox's next run, clearing hashes, archiving. */
export async function rearmShardAlarm(storage: DurableObjectStorage, nextRunAt: string | null): Promise<void> {
  const at = shardAlarmAt(storage, nextRunAt);
  if (at === null) {
    armedAt.delete(storage);
    return;
  }
  armedAt.set(storage, at);
  await storage.setAlarm(at);
}

/** A receipt as a transaction's record shows it: its state, without what it says. */
export type ReceiptState = Omit<ReceiptEntry, 'facts' | 'requestKey'>;

function stateOf(entry: ReceiptEntry): ReceiptState {
  const { facts: _facts, requestKey: _key, ...state } = entry;
  return state;
}

/** The receipts of these transactions (their pages, or floor values of a batch row's line), oldest first. */
export function receiptStatesIn(sql: SqlStorage, ids: readonly string[], pages: { exact: readonly string[]; floor: readonly string[] }): ReceiptState[] {
  return outboxEntriesFor(sql, ids, pages).map(stateOf);
}

export function receiptCountsIn(sql: SqlStorage): { queued: number; sent: number; failed: number } {
  return outboxCounts(sql);
}

/** At most this many receipts per transaction, resends included: a key cannot mail a customer without end. */
export const MAX_RECEIPTS_PER_TRANSACTION = 10;

export type ResendOutcome =
  | { outcome: 'queued'; receipt: ReceiptState }
  | { outcome: 'replayed'; receipt: ReceiptState }
  | { outcome: 'limit'; count: number }
  /** Not queued: the recipient has had its receipts from the merchant today (the message says so). */
  | { outcome: 'refused'; message: string };

/**
 * Queues a receipt sent on request (POST /api/transaction/{id}/receipt): numbered after the
 * transaction's receipts so far; a request key seen before answers that receipt again.
 */
export function queueResendIn(sql: SqlStorage, entry: ReceiptEntry, pages: { exact: readonly string[]; floor: readonly string[] }, refusal: string | null = null): ResendOutcome {
  const existing = outboxEntriesFor(sql, [entry.transactionId], pages);
  const same = entry.requestKey === null ? undefined : existing.find((e) => e.requestKey === entry.requestKey);
  if (same) return { outcome: 'replayed', receipt: stateOf(same) };
  if (refusal !== null) return { outcome: 'refused', message: refusal };
  if (existing.length >= MAX_RECEIPTS_PER_TRANSACTION) return { outcome: 'limit', count: existing.length };
  const numbered: ReceiptEntry = { ...entry, id: `${entry.id}:${existing.length + 1}` };
  queueReceipts(sql, [{ page: entry.transactionId, entries: [numbered] }]);
  return { outcome: 'queued', receipt: stateOf(numbered) };
}
