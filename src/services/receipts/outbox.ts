/**
 * The sender of a ledger shard's receipt outbox (storage/receipt-outbox.ts; docs/receipts.md, "The
 * outbox"). The shard's alarm runs it: the receipts due are sent through the `send_email` binding,
 * each once its send is granted by the service-wide pace (RECEIPT_SENDS_PER_MINUTE), and their
 * state is written back to their rows.
 *
 * At least once, and once in practice: a receipt is sent again only while no success is recorded
 * for it. The one gap is a run cut off between a send and its write (a deploy evicting the object):
 * the run writes after every RECORD_EVERY sends, so at most that many go twice, each with the same
 * X-Receipt-Id and References, so a mail client threads the copy with the first.
 *
 * A failed send is tried again after RECEIPT_RETRY_DELAYS (8 attempts over about 22 hours) and then
 * marked failed: the transaction's record and its batch's summary show it. Refusals that no retry
 * can fix (a suppressed recipient, an invalid message) fail at once; the Email Service's rate and
 * daily limits only postpone (to the next minute, or to the next UTC day) and cost no attempt.
 */
import type { Env } from '../../env';
import { maskCardNumbersIn } from '../../lib/card-number';
import { mapWithConcurrency } from '../../lib/concurrency';
import { HALF, WORKERS } from '../../lib/platform-limits';
import { isoTimestamp, type Clock } from '../../lib/time';
import { readMeta } from '../../storage/ledger-shard';
import { dueOutboxIds, nextOutboxAttempt, readOutboxRow, updateOutboxRow, type OutboxRow, type ReceiptEntry } from '../../storage/receipt-outbox';
import { returnSendGrant, takeSendGrant } from '../../storage/receipt-quota';
import { findReceiptMerchant } from '../../storage/receipt-settings';
import { renderReceipt, type ReceiptMerchant, type ReceiptMessage } from './render';

/**
 * Sends one run may make: each is a subrequest, and a run is one alarm invocation, which keeps to
 * half of the subrequests the service plans on (two more are D1's: the merchant and the grant).
 */
export const SENDS_PER_RUN = Math.floor(WORKERS.subrequestsPlanned * HALF) - 10;
/** Sends in flight at once: the connections one invocation may hold open. */
export const SEND_CONCURRENCY = WORKERS.simultaneousConnections;
/** Outbox rows one run looks at: a batch chunk's row holds up to BATCH_CHUNK_ROWS receipts. */
const ROWS_PER_RUN = 20;
/** The run writes its rows back after this many sends: the most that can go twice if it is cut off. */
export const RECORD_EVERY = 50;

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const DEFAULT_RETRY_DELAYS = [30, 120, 600, 3600, 10800, 21600, 43200];

export interface ReceiptSenderDeps {
  send(message: ReceiptMessage): Promise<unknown>;
  /** The merchant's name and receipt settings; null for an unknown merchant. */
  merchant(merchantId: string): Promise<ReceiptMerchant | null>;
  /** Sends granted at `now` out of `wanted` (at most `maxGrant`) by the service-wide pace, and sends given back. */
  grant(now: string, wanted: number): Promise<number>;
  maxGrant: number;
  giveBack(now: string, unused: number): Promise<void>;
  fromAddress: string;
  retryDelaysSeconds: readonly number[];
  clock: Clock;
}

/** The seconds of RECEIPT_RETRY_DELAYS ("30,120,…"); the default schedule when unset or malformed. */
export function retryDelays(value: string | undefined): number[] {
  const delays = (value ?? '').split(',').map((part) => Number(part.trim()));
  return delays.length > 0 && delays.every((d) => Number.isFinite(d) && d >= 0) && value ? delays : DEFAULT_RETRY_DELAYS;
}

export function sendsPerMinute(value: string | undefined): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : 600;
}

/** The one call to the Email Service (a seam the tests use to make a send fail as the service would). */
export const emailTransport = {
  send: (binding: SendEmail, message: ReceiptMessage): Promise<EmailSendResult> => binding.send(message),
};

export function receiptSenderDeps(env: Env, clock: Clock): ReceiptSenderDeps {
  const perMinute = sendsPerMinute(env.RECEIPT_SENDS_PER_MINUTE);
  return {
    send: (message) => emailTransport.send(env.RECEIPT_EMAIL, message),
    merchant: (merchantId) => findReceiptMerchant(env.DB, merchantId),
    grant: (now, wanted) => takeSendGrant(env.DB, now, wanted, perMinute),
    // One shard takes at most a quarter of a minute's sends at a time, so the shards with a
    // receipt or two are not left waiting behind a big batch for the whole minute.
    maxGrant: Math.max(1, Math.floor(perMinute / 4)),
    giveBack: (now, unused) => returnSendGrant(env.DB, now, unused),
    fromAddress: env.RECEIPT_FROM_ADDRESS,
    retryDelaysSeconds: retryDelays(env.RECEIPT_RETRY_DELAYS),
    clock,
  };
}

/** What a run did, and when the outbox wants the next one (null: nothing queued). */
export interface OutboxRun {
  sent: number;
  failed: number;
  postponed: number;
  retrying: number;
  nextRunAt: string | null;
}

type SendOutcome =
  | { kind: 'sent' }
  /** The Email Service's pace or daily quota: not an attempt; tried again at `until`. */
  | { kind: 'postponed'; until: string; error: string }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string };

/** Error codes no retry can fix (https://developers.cloudflare.com/email-service/api/send-emails/workers-api/#error-codes). */
const PERMANENT = new Set([
  'E_VALIDATION_ERROR',
  'E_FIELD_MISSING',
  'E_TOO_MANY_RECIPIENTS',
  'E_RECIPIENT_NOT_ALLOWED',
  'E_RECIPIENT_SUPPRESSED',
  'E_CONTENT_TOO_LARGE',
  'E_HEADER_NOT_ALLOWED',
  'E_HEADER_USE_API_FIELD',
  'E_HEADER_VALUE_INVALID',
  'E_HEADER_VALUE_TOO_LONG',
  'E_HEADER_NAME_INVALID',
  'E_HEADERS_TOO_LARGE',
  'E_HEADERS_TOO_MANY',
]);

/** The binding's error code: its `code`, or an E_… word at the start of its message. */
function errorCode(err: unknown): string | null {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  const message = err instanceof Error ? err.message : String(err);
  return /\b(E_[A-Z_]+)\b/.exec(message)?.[1] ?? null;
}

function describe(err: unknown): string {
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  const text = code !== null && !message.includes(code) ? `${code}: ${message}` : message;
  return maskCardNumbersIn(text).slice(0, 300);
}

function classify(err: unknown, now: Date): SendOutcome {
  const code = errorCode(err);
  const error = describe(err);
  if (code === 'E_RATE_LIMIT_EXCEEDED') {
    return { kind: 'postponed', until: isoTimestamp(new Date(Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS)), error };
  }
  if (code === 'E_DAILY_LIMIT_EXCEEDED') {
    return { kind: 'postponed', until: isoTimestamp(new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS + DAY_MS)), error };
  }
  if (code !== null && PERMANENT.has(code)) return { kind: 'failed', error };
  return { kind: 'retry', error };
}

/** An entry after an outcome (the state the transaction's record and the batch summary show). */
function applyOutcome(entry: ReceiptEntry, outcome: SendOutcome, at: Date, delays: readonly number[]): ReceiptEntry {
  const now = isoTimestamp(at);
  switch (outcome.kind) {
    case 'sent':
      return { ...entry, status: 'sent', attempts: entry.attempts + 1, sentAt: now, nextAttemptAt: null, lastError: null };
    case 'postponed':
      return { ...entry, nextAttemptAt: outcome.until, lastError: outcome.error };
    case 'failed':
      return { ...entry, status: 'failed', attempts: entry.attempts + 1, failedAt: now, nextAttemptAt: null, lastError: outcome.error };
    case 'retry': {
      const attempts = entry.attempts + 1;
      const delay = delays[attempts - 1];
      if (delay === undefined) return { ...entry, status: 'failed', attempts, failedAt: now, nextAttemptAt: null, lastError: outcome.error };
      return { ...entry, attempts, nextAttemptAt: isoTimestamp(new Date(at.getTime() + delay * 1000)), lastError: outcome.error };
    }
  }
}

/**
 * Sending is paced behind processing: a batch's shard sends its receipts in the pauses of its
 * batch, not between its chunks. While chunks keep completing (one every few hundred ms while the
 * batch runs), its runs wait until none has for QUIET_MS; an API day shard, written to all day,
 * does not wait.
 */
export const QUIET_MS = 5_000;
const lastWrite = new WeakMap<DurableObjectStorage, number>();

/** The shard completed records at `at` (in memory: an object started afresh sends at once). */
export function noteWrite(storage: DurableObjectStorage, at: number): void {
  lastWrite.set(storage, at);
}

/** Runs of one shard never overlap (the alarm, and a test's or a resend's call): each waits for the one before. */
const running = new WeakMap<DurableObjectStorage, Promise<unknown>>();

/**
 * Sends the shard's receipts due now, at most SENDS_PER_RUN, and answers when the next run should
 * be. Never rejects for a send: each failure stays on its receipt; a failure to reach D1 (the
 * merchant, the pace) leaves everything queued and asks for a run a minute later.
 */
export function runReceiptOutbox(storage: DurableObjectStorage, deps: ReceiptSenderDeps): Promise<OutboxRun> {
  const before = running.get(storage) ?? Promise.resolve();
  const run = before.then(
    () => sendDue(storage, deps),
    () => sendDue(storage, deps),
  );
  running.set(storage, run);
  return run;
}

async function sendDue(storage: DurableObjectStorage, deps: ReceiptSenderDeps): Promise<OutboxRun> {
  const sql = storage.sql;
  const started = deps.clock();
  const now = isoTimestamp(started);
  const result: OutboxRun = { sent: 0, failed: 0, postponed: 0, retrying: 0, nextRunAt: null };
  const meta = readMeta(sql);
  if (!meta) return result;
  // The grant is asked before any row's entries are read: when the pace is spent for the minute, a
  // run costs two D1 calls and a look at the columns, whatever the outbox holds.
  const candidates = dueOutboxIds(sql, now, ROWS_PER_RUN);
  const queued = candidates.reduce((sum, row) => sum + row.queued, 0);
  if (queued === 0) return { ...result, nextRunAt: nextOutboxAttempt(sql) };
  const quietFrom = (lastWrite.get(storage) ?? 0) + QUIET_MS;
  if (meta.name.includes('/batch/') && quietFrom > started.getTime()) return { ...result, nextRunAt: isoTimestamp(new Date(quietFrom)) };

  let merchant: ReceiptMerchant | null;
  let granted: number;
  const wanted = Math.min(queued, SENDS_PER_RUN, deps.maxGrant);
  try {
    // The shard's name starts with its merchant (services/transactions/ledger.ts, ledgerShardName).
    merchant = await deps.merchant(meta.name.split('/')[0] ?? '');
    granted = merchant ? await deps.grant(now, wanted) : wanted;
  } catch (err) {
    console.error(JSON.stringify({ level: 'error', event: 'receipts_run_failed', shard: meta.name, error: describe(err) }));
    return { ...result, nextRunAt: isoTimestamp(new Date(started.getTime() + MINUTE_MS)) };
  }
  // The due receipts, row by row until the grant is used: a chunk's row holds hundreds.
  const take: { row: OutboxRow; index: number }[] = [];
  for (const candidate of candidates) {
    if (take.length >= granted) break;
    const row = readOutboxRow(sql, candidate.id);
    row?.entries.forEach((entry, index) => {
      if (entry.status === 'queued' && entry.nextAttemptAt !== null && entry.nextAttemptAt <= now && take.length < granted) take.push({ row, index });
    });
  }
  // Granted more than was due (some queued receipts wait for a later attempt): the rest goes back.
  let unused = granted - take.length;
  let firstError: string | null = null;
  for (let i = 0; i < take.length; i += RECORD_EVERY) {
    const slice = take.slice(i, i + RECORD_EVERY);
    const outcomes = await mapWithConcurrency(slice, SEND_CONCURRENCY, async ({ row, index }): Promise<SendOutcome> => {
      const entry = row.entries[index] as ReceiptEntry;
      if (!merchant) return { kind: 'failed', error: 'the merchant of this transaction no longer exists' };
      try {
        await deps.send(renderReceipt(entry, merchant, deps.fromAddress));
        return { kind: 'sent' };
      } catch (err) {
        return classify(err, deps.clock());
      }
    });
    const at = deps.clock();
    const touched = new Set<OutboxRow>();
    outcomes.forEach((outcome, k) => {
      const { row, index } = slice[k] as { row: OutboxRow; index: number };
      row.entries[index] = applyOutcome(row.entries[index] as ReceiptEntry, outcome, at, deps.retryDelaysSeconds);
      touched.add(row);
      if (outcome.kind !== 'sent') firstError ??= outcome.error;
      if (outcome.kind === 'sent') result.sent++;
      else if (outcome.kind === 'failed') result.failed++;
      else if (outcome.kind === 'retry') result.retrying++;
      else {
        result.postponed++;
        unused++;
      }
    });
    storage.transactionSync(() => {
      for (const row of touched) updateOutboxRow(sql, row, isoTimestamp(at));
    });
  }
  if (unused > 0 && merchant) await deps.giveBack(now, unused).catch(() => undefined);
  if (result.failed > 0 || result.retrying > 0 || result.postponed > 0) {
    // The first error says why (addresses left out: a log line names no customer).
    const error = (firstError ?? '').replace(/[^\s@<>"']+@[^\s@<>"']+/g, '(an address)');
    console.warn(JSON.stringify({ level: 'warn', event: 'receipts_not_sent', shard: meta.name, failed: result.failed, retrying: result.retrying, postponed: result.postponed, error }));
  }
  let next = nextOutboxAttempt(sql);
  // Granted less than asked: the service-wide pace is spent for this minute; the rest waits for the next.
  if (granted < wanted && next !== null) {
    const nextMinute = isoTimestamp(new Date(Math.floor(started.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS));
    if (next < nextMinute) next = nextMinute;
  }
  return { ...result, nextRunAt: next };
}

/**
 * When the shard's alarm should next fire: the outbox's next run, the clearing of request hashes and
 * the archiving, whichever comes first (the alarm serves all three; null once the shard is empty).
 */
export function shardAlarmAt(storage: DurableObjectStorage, nextRunAt: string | null): number | null {
  const meta = readMeta(storage.sql);
  if (!meta) return null;
  const times = [nextRunAt, meta.hashesClearAt, meta.archiveAt].filter((t): t is string => t !== null).map((t) => Date.parse(t));
  return times.length > 0 ? Math.min(...times) : null;
}
