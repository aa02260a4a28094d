/**
 * What became of one receipt in a run of the sender (services/receipts/outbox.ts), and the state it
 * leaves on the receipt: sent, tried again later (an attempt spent), failed, or put off without an
 * attempt spent (the Email Service's own limits, the invocation's subrequests, the merchant's budget).
 */
import { maskCardNumbersIn } from '../../lib/card-number';
import { isoTimestamp } from '../../lib/time';
import type { ReceiptEntry } from '../../storage/receipt-outbox';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export type SendOutcome =
  | { kind: 'sent' }
  /** Not an attempt (a limit, not the receipt, is the cause): tried again at `until`. */
  | { kind: 'postponed'; until: string; error: string; reason: 'service' | 'budget' }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string; attempted: boolean };

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

export function describe(err: unknown): string {
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  const text = code !== null && !message.includes(code) ? `${code}: ${message}` : message;
  return maskCardNumbersIn(text).slice(0, 300);
}

/** The start of the next UTC minute after `at`, plus `jitterMs` (so the shards put off together do not all come back at once). */
export function nextMinute(at: Date, jitterMs = 0): string {
  return isoTimestamp(new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS + MINUTE_MS + jitterMs));
}

export function nextDay(at: Date, jitterMs = 0): string {
  return isoTimestamp(new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS + DAY_MS + jitterMs));
}

/**
 * A send's error as an outcome. The Email Service's rate and daily limits and the invocation's
 * subrequest limit say nothing about the receipt: they put it off without spending an attempt.
 */
export function classify(err: unknown, now: Date, jitterMs: number): SendOutcome {
  const code = errorCode(err);
  const error = describe(err);
  if (code === 'E_RATE_LIMIT_EXCEEDED') return { kind: 'postponed', until: nextMinute(now, jitterMs), error, reason: 'service' };
  if (code === 'E_DAILY_LIMIT_EXCEEDED') return { kind: 'postponed', until: nextDay(now, jitterMs), error, reason: 'service' };
  // workerd's answer past an invocation's subrequests: the next run (a new invocation) sends it.
  if (/too many subrequests/i.test(error)) return { kind: 'postponed', until: isoTimestamp(new Date(now.getTime() + 1_000)), error, reason: 'service' };
  if (code !== null && PERMANENT.has(code)) return { kind: 'failed', error, attempted: true };
  return { kind: 'retry', error };
}

/** Whether the outcome reached the Email Service as an attempt (and so used a send of the pace). */
export function attempted(outcome: SendOutcome): boolean {
  return outcome.kind === 'sent' || outcome.kind === 'retry' || (outcome.kind === 'failed' && outcome.attempted);
}

/** An entry after an outcome (the state the transaction's record and the batch summary show). */
export function applyOutcome(entry: ReceiptEntry, outcome: SendOutcome, at: Date, delays: readonly number[]): ReceiptEntry {
  const now = isoTimestamp(at);
  switch (outcome.kind) {
    case 'sent':
      return { ...entry, status: 'sent', attempts: entry.attempts + 1, sentAt: now, nextAttemptAt: null, lastError: null };
    case 'postponed':
      return { ...entry, nextAttemptAt: outcome.until, lastError: outcome.error };
    case 'failed':
      return { ...entry, status: 'failed', attempts: entry.attempts + (outcome.attempted ? 1 : 0), failedAt: now, nextAttemptAt: null, lastError: outcome.error };
    case 'retry': {
      const attempts = entry.attempts + 1;
      const delay = delays[attempts - 1];
      if (delay === undefined) return { ...entry, status: 'failed', attempts, failedAt: now, nextAttemptAt: null, lastError: outcome.error };
      return { ...entry, attempts, nextAttemptAt: isoTimestamp(new Date(at.getTime() + delay * 1000)), lastError: outcome.error };
    }
  }
}
