/**
 * The sender of a ledger shard's receipt outbox (storage/receipt-outbox.ts; docs/receipts.md, "The
 * outbox"). The shard's alarm runs it: the receipts due are sent through the `send_email` binding,
 * each once the service-wide pace (ReceiptPace) and the merchant's budget of the day (ReceiptBudget)
 * allow it, and their state is written back to their rows.
 *
 * At least once, and once in practice: a receipt is sent again only while no success is recorded
 * for it. The one gap is a run cut off between a send and its write (a deploy evicting the object):
 * the run writes once, after its at most SENDS_PER_RUN sends, so at most that many go twice, each
 * with the same X-Receipt-Id and References, so a mail client threads the copy with the first.
 *
 * A failed send is tried again after RECEIPT_RETRY_DELAYS (8 attempts over about 22 hours) and then
 * marked failed: the transaction's record and its batch's summary show it. Refusals that no retry
 * can fix (a suppressed recipient, an invalid message) fail at once; limits (the Email Service's
 * rate and daily limits, the invocation's subrequests, the merchant's day or minute) only postpone
 * and cost no attempt; a recipient past its daily limit fails without an attempt.
 */
import type { Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import { EMAIL_SERVICE, WORKERS } from '../../lib/platform-limits';
import { isoTimestamp, type Clock } from '../../lib/time';
import { readMeta } from '../../storage/ledger-shard';
import type { BudgetLimits, BudgetVerdict, RecipientHash } from '../../storage/receipt-budget';
import { dueOutboxIds, nextOutboxAttempt, readOutboxRow, updateOutboxRow, type OutboxRow, type ReceiptEntry } from '../../storage/receipt-outbox';
import { findReceiptMerchant } from '../../storage/receipt-settings';
import { budgetLimits, budgetName, effectiveLimits, PACE_SHARDS, recipientHash, serviceSendsPerMinute } from './budget';
import { applyOutcome, attempted, classify, describe, nextDay, nextMinute, type SendOutcome } from './outcomes';
import { renderReceipt, type ReceiptMerchant, type ReceiptMessage } from './render';

/** Pace shards one run may take its sends from: a minute ends for a run only when three in a row are spent. */
const PACE_TRIES = 3;
/** Pace shards one run gives unsent sends back to (the latest it took from); the rest stay spent for the minute. */
const PACE_GIVE_BACKS = 2;
/**
 * Calls a run makes besides its sends: the merchant (D1), the pace's grants and give-backs, the
 * budget's admission and its give-back. Each is a subrequest of the alarm's invocation.
 */
export const RUN_OVERHEAD_CALLS = 1 + PACE_TRIES + PACE_GIVE_BACKS + 2;
/**
 * Sends one run may make: the Email Service's binding allows EMAIL_SERVICE.subrequestsPerRequest
 * (50) subrequests per request, sends included; 40 sends and the run's other calls stay under it
 * with room to spare.
 */
export const SENDS_PER_RUN = 40;
/** Sends in flight at once: the connections one invocation may hold open. */
export const SEND_CONCURRENCY = WORKERS.simultaneousConnections;
/** Outbox rows one run looks at: a batch chunk's row holds up to BATCH_CHUNK_ROWS receipts. */
const ROWS_PER_RUN = 20;
/** Runs put off to the next minute come back spread over its first seconds, not all at its start. */
const JITTER_MS = 20_000;

const MINUTE_MS = 60_000;
const DEFAULT_RETRY_DELAYS = [30, 120, 600, 3600, 10800, 21600, 43200];

if (SENDS_PER_RUN + RUN_OVERHEAD_CALLS > EMAIL_SERVICE.subrequestsPerRequest) throw new Error('SENDS_PER_RUN does not fit the Email binding');

/** The merchant as a run needs it: its name and settings for the receipt, its limits for the budget. */
export type SenderMerchant = ReceiptMerchant & { limits: BudgetLimits };

export interface ReceiptSenderDeps {
  send(message: ReceiptMessage): Promise<unknown>;
  /** The merchant's name, receipt settings and limits; null for an unknown merchant. */
  merchant(merchantId: string): Promise<SenderMerchant | null>;
  /** The service-wide pace: sends granted now out of `wanted` (one of its shards, chosen for this run), and sends given back. */
  pace: { take(now: string, wanted: number): Promise<number>; giveBack(now: string, unused: number): Promise<void> };
  /** The merchant's budget of the day of `now`. */
  budget(merchantId: string, now: string): {
    admit(now: string, limits: BudgetLimits, recipients: RecipientHash[]): Promise<BudgetVerdict[]>;
    release(now: string, recipients: RecipientHash[]): Promise<void>;
  };
  fromAddress: string;
  retryDelaysSeconds: readonly number[];
  clock: Clock;
  /** A delay in [0, JITTER_MS) added to a time many shards are put off to. */
  jitterMs(): number;
}

/** The seconds of RECEIPT_RETRY_DELAYS ("30,120,…"); the default schedule when unset or malformed. */
export function retryDelays(value: string | undefined): number[] {
  const delays = (value ?? '').split(',').map((part) => Number(part.trim()));
  return delays.length > 0 && delays.every((d) => Number.isFinite(d) && d >= 0) && value ? delays : DEFAULT_RETRY_DELAYS;
}

/** RECEIPT_SENDS_PER_MINUTE, the whole service's pace. */
export const sendsPerMinute = serviceSendsPerMinute;

/** The one call to the Email Service (a seam the tests use to make a send fail as the service would). */
export const emailTransport = {
  send: (binding: SendEmail, message: ReceiptMessage): Promise<EmailSendResult> => binding.send(message),
};

export function receiptSenderDeps(env: Env, clock: Clock): ReceiptSenderDeps {
  const perMinute = sendsPerMinute(env.RECEIPT_SENDS_PER_MINUTE);
  const perShard = Math.max(1, Math.floor(perMinute / PACE_SHARDS));
  return {
    send: (message) => emailTransport.send(env.RECEIPT_EMAIL, message),
    merchant: async (merchantId) => {
      const found = await findReceiptMerchant(env.DB, merchantId);
      return found ? { name: found.name, settings: found.settings, limits: budgetLimits(effectiveLimits(found.limits, perMinute)) } : null;
    },
    pace: paceOf(env.RECEIPT_PACE, perShard),
    budget: (merchantId, now) => {
      const stub = env.RECEIPT_BUDGET.getByName(budgetName(merchantId, now));
      return { admit: (at, limits, recipients) => stub.admit(at, limits, recipients), release: (at, recipients) => stub.release(at, recipients) };
    },
    fromAddress: env.RECEIPT_FROM_ADDRESS,
    retryDelaysSeconds: retryDelays(env.RECEIPT_RETRY_DELAYS),
    clock,
    jitterMs: () => Math.floor(Math.random() * JITTER_MS),
  };
}

/**
 * The pace as one run takes it: from a shard chosen at random (so a merchant's runs draw on every
 * share), and when that share is short for the minute, the rest from the next shards: at most
 * PACE_TRIES calls to take. Sends not made go back to the shards they came from, the last first, at
 * most PACE_GIVE_BACKS calls (what is not given back only leaves the minute a little short).
 */
function paceOf(namespace: Env['RECEIPT_PACE'], perShard: number): ReceiptSenderDeps['pace'] {
  const first = Math.floor(Math.random() * PACE_SHARDS);
  const taken: { shard: number; count: number }[] = [];
  const stub = (shard: number) => namespace.getByName(`pace/${shard}`);
  return {
    async take(now, wanted) {
      let granted = 0;
      for (let k = 0; k < Math.min(PACE_TRIES, PACE_SHARDS) && granted < wanted; k++) {
        const shard = (first + k) % PACE_SHARDS;
        const count = await stub(shard).take(now, wanted - granted, perShard);
        if (count > 0) taken.push({ shard, count });
        granted += count;
      }
      return granted;
    },
    async giveBack(now, unused) {
      let left = unused;
      for (const part of [...taken].reverse().slice(0, PACE_GIVE_BACKS)) {
        if (left <= 0) break;
        const count = Math.min(left, part.count);
        await stub(part.shard).giveBack(now, count);
        left -= count;
      }
    },
  };
}

/** What a run did, and when the outbox wants the next one (null: nothing queued). */
export interface OutboxRun {
  sent: number;
  failed: number;
  /** Put off by a limit, no attempt spent: the Email Service's, or the merchant's budget. */
  postponed: number;
  retrying: number;
  nextRunAt: string | null;
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
 * be. Never rejects for a send: each failure stays on its receipt; a failure to reach D1 or the
 * pace or budget objects leaves everything queued and asks for a run a minute later.
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

/** The budget's verdict as an outcome: a spent day or minute puts the receipt off; a recipient past its limit fails it. */
function budgetOutcome(verdict: Exclude<BudgetVerdict, 'ok'>, limits: BudgetLimits, now: Date, jitterMs: number): SendOutcome {
  switch (verdict) {
    case 'daily':
      return { kind: 'postponed', reason: 'budget', until: nextDay(now, jitterMs), error: `RECEIPT_DAILY_BUDGET: the merchant has sent its ${limits.daily} receipts for today (receipt_limits.daily)` };
    case 'minute':
      return { kind: 'postponed', reason: 'budget', until: nextMinute(now, jitterMs), error: `RECEIPT_MINUTE_BUDGET: the merchant has sent its ${limits.perMinute} receipts for this minute (receipt_limits.per_minute)` };
    case 'recipient':
      return { kind: 'failed', attempted: false, error: `RECEIPT_RECIPIENT_LIMIT: this address has had ${limits.perRecipient} receipts from the merchant today, the most allowed (receipt_limits.per_recipient)` };
  }
}

type Taken = { row: OutboxRow; index: number };

async function sendDue(storage: DurableObjectStorage, deps: ReceiptSenderDeps): Promise<OutboxRun> {
  const sql = storage.sql;
  const started = deps.clock();
  const now = isoTimestamp(started);
  const result: OutboxRun = { sent: 0, failed: 0, postponed: 0, retrying: 0, nextRunAt: null };
  const meta = readMeta(sql);
  if (!meta) return result;
  // The pace is asked before any row's entries are read: when it is spent for the minute, a run
  // costs two calls and a look at the columns, whatever the outbox holds.
  const candidates = dueOutboxIds(sql, now, ROWS_PER_RUN);
  const queued = candidates.reduce((sum, row) => sum + row.queued, 0);
  if (queued === 0) return { ...result, nextRunAt: nextOutboxAttempt(sql) };
  const quietFrom = (lastWrite.get(storage) ?? 0) + QUIET_MS;
  if (meta.name.includes('/batch/') && quietFrom > started.getTime()) return { ...result, nextRunAt: isoTimestamp(new Date(quietFrom)) };

  // The shard's name starts with its merchant (services/transactions/ledger.ts, ledgerShardName).
  const merchantId = meta.name.split('/')[0] ?? '';
  const wanted = Math.min(queued, SENDS_PER_RUN);
  const retryLater = (err: unknown): OutboxRun => {
    console.error(JSON.stringify({ level: 'error', event: 'receipts_run_failed', shard: meta.name, error: describe(err) }));
    return { ...result, nextRunAt: isoTimestamp(new Date(started.getTime() + MINUTE_MS + deps.jitterMs())) };
  };
  let merchant: SenderMerchant | null;
  let granted: number;
  try {
    merchant = await deps.merchant(merchantId);
    granted = merchant ? await deps.pace.take(now, wanted) : wanted;
  } catch (err) {
    return retryLater(err);
  }
  // The due receipts, row by row until the grant is used: a chunk's row holds hundreds.
  const take: Taken[] = [];
  for (const candidate of candidates) {
    if (take.length >= granted) break;
    const row = readOutboxRow(sql, candidate.id);
    row?.entries.forEach((entry, index) => {
      if (entry.status === 'queued' && entry.nextAttemptAt !== null && entry.nextAttemptAt <= now && take.length < granted) take.push({ row, index });
    });
  }
  const entryOf = ({ row, index }: Taken) => row.entries[index] as ReceiptEntry;
  const hashes = await Promise.all(take.map((taken) => recipientHash(entryOf(taken).to)));
  let verdicts: BudgetVerdict[] = take.map(() => 'ok');
  const budget = deps.budget(merchantId, now);
  if (merchant && take.length > 0) {
    try {
      verdicts = await budget.admit(now, merchant.limits, hashes);
    } catch (err) {
      await deps.pace.giveBack(now, granted).catch(() => undefined);
      return retryLater(err);
    }
  }
  const outcomes = await sendTaken(take, verdicts, merchant, deps, started);
  writeOutcomes(storage, take, outcomes, deps, result);
  if (merchant) {
    // Sends granted and not made go back to the pace; receipts admitted and put off by the Email
    // Service go back to the budget (they did not reach the customer).
    const unused = granted - outcomes.filter(attempted).length;
    const putOff = hashes.filter((_, k) => verdicts[k] === 'ok' && outcomes[k]?.kind === 'postponed');
    await Promise.all([unused > 0 ? deps.pace.giveBack(now, unused) : null, putOff.length > 0 ? budget.release(now, putOff) : null]).catch(() => undefined);
  }
  let next = nextOutboxAttempt(sql);
  // Granted less than asked, or the merchant's minute spent: the rest waits for the next minute.
  const minuteSpent = granted < wanted || verdicts.includes('minute');
  if (minuteSpent && next !== null) {
    const later = nextMinute(started, deps.jitterMs());
    if (next < later) next = later;
  }
  return { ...result, nextRunAt: next };
}

/** Sends the receipts the budget admitted, SEND_CONCURRENCY at a time; the others get its verdict. */
async function sendTaken(take: readonly Taken[], verdicts: readonly BudgetVerdict[], merchant: SenderMerchant | null, deps: ReceiptSenderDeps, started: Date): Promise<SendOutcome[]> {
  // Once the Email Service answers with one of its limits, the rest of the run is put off with it.
  let halted: SendOutcome | null = null;
  return mapWithConcurrency(take, SEND_CONCURRENCY, async ({ row, index }, k): Promise<SendOutcome> => {
    const verdict = verdicts[k] ?? 'ok';
    if (!merchant) return { kind: 'failed', attempted: true, error: 'the merchant of this transaction no longer exists' };
    if (verdict !== 'ok') return budgetOutcome(verdict, merchant.limits, started, deps.jitterMs());
    if (halted) return halted;
    try {
      await deps.send(renderReceipt(row.entries[index] as ReceiptEntry, merchant, deps.fromAddress));
      return { kind: 'sent' };
    } catch (err) {
      const outcome = classify(err, deps.clock(), deps.jitterMs());
      if (outcome.kind === 'postponed') halted = outcome;
      return outcome;
    }
  });
}

/** Writes the run's outcomes to their rows (one storage transaction) and counts them. */
function writeOutcomes(storage: DurableObjectStorage, take: readonly Taken[], outcomes: readonly SendOutcome[], deps: ReceiptSenderDeps, result: OutboxRun): void {
  const at = deps.clock();
  const touched = new Set<OutboxRow>();
  let firstError: string | null = null;
  outcomes.forEach((outcome, k) => {
    const { row, index } = take[k] as Taken;
    row.entries[index] = applyOutcome(row.entries[index] as ReceiptEntry, outcome, at, deps.retryDelaysSeconds);
    touched.add(row);
    if (outcome.kind !== 'sent') firstError ??= outcome.error;
    if (outcome.kind === 'sent') result.sent++;
    else if (outcome.kind === 'failed') result.failed++;
    else if (outcome.kind === 'retry') result.retrying++;
    else result.postponed++;
  });
  storage.transactionSync(() => {
    for (const row of touched) updateOutboxRow(storage.sql, row, isoTimestamp(at));
  });
  if (result.failed > 0 || result.retrying > 0 || result.postponed > 0) {
    // The first error says why (addresses left out: a log line names no customer).
    const error = (firstError ?? '').replace(/[^\s@<>"']+@[^\s@<>"']+/g, '(an address)');
    const shard = readMeta(storage.sql)?.name;
    console.warn(JSON.stringify({ level: 'warn', event: 'receipts_not_sent', shard, failed: result.failed, retrying: result.retrying, postponed: result.postponed, error }));
  }
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
