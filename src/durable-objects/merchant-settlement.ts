/**
 * A merchant's settlement (docs/transactions.md "Settlement", docs/capacity.md "Settlement"): one
 * object per merchant (`settlementObjectName`), holding the merchant's cutoff, the index of the
 * ledger shards that may hold money awaiting settlement, the current settlement run and the
 * merchant's settlement batches.
 *
 * A shard is registered before money awaiting settlement is written in it (a sale or credit
 * approved, a capture, a refund), so a run never has to scan every shard: it asks only the shards of
 * the index, and drops those left with nothing unsettled. A run is a row of its own, worked in
 * bounded steps (`#step`: at most ENTRIES_PER_STEP entries and SHARD_CALLS_PER_STEP calls), one per
 * alarm tick, or one per "settle now" call (POST /admin/merchants/{id}/settle drives the steps
 * from its request). Each shard call answers one handoff piece (at most a page of entries); the
 * piece and the shard's acknowledgement point are recorded together, and the next call acknowledges
 * it, so a step that dies anywhere loses nothing and counts nothing twice (storage/ledger-shard/handoff.ts).
 * A shard that fails waits (backoff) while the others go on; the alarm re-arms even when a tick throws.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import type { HandoffPiece, ShardIdentity } from '../storage/ledger-shard';
import {
  batchSlices,
  deleteBatchesBefore,
  initialiseSettlement,
  oldestBatchDate,
  readBatches,
  readSettlementMeta,
  recordPiece,
  searchBatches,
  upgradeSettlement,
  writeCutoff,
  type BatchSearch,
  type BatchSlice,
  type SettlementBatch,
} from '../storage/settlement';
import {
  addShard,
  currentRun,
  failShard,
  finishRun,
  finishShard,
  hasShards,
  lastFinishedRun,
  listShards,
  markAnnounced,
  readRun,
  runRemainder,
  shardsToAsk,
  startRun,
  unannouncedRuns,
  type SettlementRunRow,
} from '../storage/settlement-runs';
import { HANDOFF_ENTRIES_PER_PIECE } from '../storage/ledger-shard';
import { settlementBatchId } from '../services/transactions/lifecycle-rules';
import { announceSettlement } from '../services/settlement/events';
import { systemClock } from '../lib/time';
import { DURABLE_OBJECTS, HALF, WORKERS } from '../lib/platform-limits';
import { DEFAULT_CUTOFF, batchDateOf, lastCutoff } from '../services/settlement/cutoff';
import { indexSettlement } from '../services/search/changes';

const DAY_MS = 86_400_000;

/**
 * One step records at most this many entries: 10 pieces of HANDOFF_ENTRIES_PER_PIECE, each a shard
 * call that decodes about a piece's worth of records. Measured (docs/capacity.md, "Settlement"):
 * the heaviest step, an API day shard's, stays under half of WORKERS.cpuMsPerInvocation and of
 * WORKERS.isolateMemoryBytes.
 */
const ENTRIES_PER_STEP = 10 * HANDOFF_ENTRIES_PER_PIECE;
/** Shard calls one step may make: each is a subrequest, planned at half of WORKERS.subrequestsPlanned. */
if (ENTRIES_PER_STEP > WORKERS.subrequestsPlanned * HALF * HANDOFF_ENTRIES_PER_PIECE) throw new Error('a step would need more calls than it may make');
const SHARD_CALLS_PER_STEP = WORKERS.subrequestsPlanned * HALF;
/** A failing shard waits this long, doubled per failure up to an hour, while the run goes on. */
const RETRY_BASE_MS = 30_000;
const RETRY_MAX_MS = 3_600_000;
/** While "settle now" drives a run, the alarm waits this long before it takes over (the request stopped). */
const SETTLE_NOW_TAKEOVER_MS = 60_000;
/** A tick that threw is tried again this much later (the platform would drop it after DURABLE_OBJECTS.alarmRetries). */
const TICK_RETRY_MS = 60_000;

/** Lower budgets, for tests that watch a run span several steps and pages. */
export interface StepBudget {
  entries?: number;
  pageEntries?: number;
}

export interface SettlementRun {
  /** The batches of the runs finished in this step, with their totals after them. */
  batches: SettlementBatch[];
  /** Shards that could not be settled now (their failure); they are asked again after a wait. */
  failed: string[];
  /** False: the current run has more to do (its next step is armed). */
  done: boolean;
  /** The step itself failed (the object's storage): nothing of it was recorded; the alarm tries again. */
  error?: string;
}

/** What one step of "settle now" answers. */
export interface SettleNowStep {
  done: boolean;
  /** Whether the step moved (false: only failing shards are left; the alarm retries them). */
  progressed: boolean;
  /** The batches the run made or added to so far (all of them once done). */
  batches: SettlementBatch[];
  failed: string[];
  error?: string;
}

export class MerchantSettlement extends DurableObject<Env> {
  /** Steps run one at a time: a "settle now" call and an alarm tick never interleave their shard calls. */
  #busy: Promise<unknown> = Promise.resolve();

  #ensure(merchantId: string): void {
    if (!readSettlementMeta(this.ctx.storage.sql)) initialiseSettlement(this.ctx.storage.sql, merchantId, DEFAULT_CUTOFF);
    else upgradeSettlement(this.ctx.storage.sql);
  }

  #cutoff(): string {
    return readSettlementMeta(this.ctx.storage.sql)?.cutoff ?? DEFAULT_CUTOFF;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#busy.then(work, work);
    this.#busy = next.catch(() => undefined);
    return next;
  }

  /**
   * A step whose own storage failed answers the failure instead of rejecting (a rejected call would
   * also be reported as an uncaught exception of the object), and the alarm is set to try again:
   * what the step did not record stays in the shards' handoff.
   */
  async #guarded<T>(work: () => Promise<T>, failed: (error: string) => T): Promise<T> {
    try {
      return await work();
    } catch (err) {
      const error = err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error';
      console.log(JSON.stringify({ level: 'error', event: 'settlement_step_failed', error }));
      await this.ctx.storage.setAlarm(Date.now() + TICK_RETRY_MS).catch(() => undefined);
      return failed(error);
    }
  }

  /** Indexes a shard (before money awaiting settlement is written there) and arms the cutoff's alarm. */
  async register(merchantId: string, shard: ShardIdentity, generation: number, now: string): Promise<true> {
    this.#ensure(merchantId);
    addShard(this.ctx.storage.sql, shard, generation, now);
    const next = lastCutoff(new Date(now), this.#cutoff()).getTime() + DAY_MS;
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > next) await this.ctx.storage.setAlarm(next);
    return true;
  }

  async cutoff(merchantId: string): Promise<string> {
    this.#ensure(merchantId);
    return this.#cutoff();
  }

  async setCutoff(merchantId: string, cutoff: string, now: string): Promise<string> {
    this.#ensure(merchantId);
    writeCutoff(this.ctx.storage.sql, cutoff);
    await this.#arm(new Date(now));
    return cutoff;
  }

  /**
   * One step of settling everything captured before `now` (POST /admin/merchants/{id}/settle calls
   * it with the same `now` until `done`): a run in progress is finished first, then a run ending at
   * `now` is started and worked.
   */
  async settleNow(merchantId: string, now: string, budget: StepBudget = {}): Promise<SettleNowStep> {
    return this.#serial(() => this.#guarded(() => this.#settleNow(merchantId, now, budget), (error) => ({ done: false, progressed: false, batches: [], failed: [], error })));
  }

  async #settleNow(merchantId: string, now: string, budget: StepBudget): Promise<SettleNowStep> {
    this.#ensure(merchantId);
    const sql = this.ctx.storage.sql;
    const inProgress = currentRun(sql);
    let run = inProgress ? await this.#closeIfStuck(inProgress, now, now) : null;
    if (!run) {
      const last = lastFinishedRun(sql);
      if (last && last.endAt >= now) return { done: true, progressed: false, batches: readBatches(sql, last.touched), failed: [] };
      run = startRun(sql, { endAt: now, batchDate: batchDateOf(new Date(now)), settledAt: now }, now);
    }
    const step = await this.#step(run, now, budget);
    // The request drives the next steps: the alarm only takes over if it stops calling.
    await this.#arm(new Date(now), undefined, SETTLE_NOW_TAKEOVER_MS);
    const mine = run.endAt >= now;
    if (step.finished && mine) return { done: true, progressed: true, batches: step.batches, failed: step.failed };
    // An earlier run finished by this step: its batches are this request's work too (runs.ts gathers them).
    const batches = mine ? readBatches(sql, currentRun(sql)?.touched ?? []) : step.finished ? step.batches : [];
    return { done: false, progressed: step.progressed || step.finished, batches, failed: step.failed };
  }

  /**
   * What the alarm does at `now` (tests pass their own clock): a step of the run in progress, or of a
   * run started for the last cutoff if none settled up to it yet; retention; the next alarm.
   */
  async runDue(now: string, retentionDays: number, budget: StepBudget = {}): Promise<SettlementRun> {
    return this.#serial(() => this.#guarded(() => this.#runDue(now, retentionDays, budget), (error) => ({ batches: [], failed: [], done: false, error })));
  }

  async #runDue(now: string, retentionDays: number, budget: StepBudget): Promise<SettlementRun> {
    const sql = this.ctx.storage.sql;
    const meta = readSettlementMeta(sql);
    if (!meta) return { batches: [], failed: [], done: true };
    upgradeSettlement(sql);
    const at = new Date(now);
    await this.#announcePending();
    const end = lastCutoff(at, meta.cutoff).toISOString();
    const inProgress = currentRun(sql);
    let run = inProgress ? await this.#closeIfStuck(inProgress, end, now) : null;
    if (!run && hasShards(sql) && (lastFinishedRun(sql)?.endAt ?? '') < end) {
      run = startRun(sql, { endAt: end, batchDate: batchDateOf(new Date(end)), settledAt: now }, now);
    }
    const step = run ? await this.#step(run, now, budget) : { batches: [], failed: [], finished: true, progressed: false };
    deleteBatchesBefore(sql, new Date(at.getTime() - retentionDays * DAY_MS).toISOString().slice(0, 10));
    await this.#arm(at, retentionDays);
    return { batches: step.batches, failed: step.failed, done: step.finished };
  }

  /**
   * Works `run` within the step's budget: asks each shard it has not finished with for its next
   * handoff piece and records it, until the budget is spent. Finishes the run when no shard is left
   * (announcing its batches); a shard that fails waits while the others go on.
   */
  async #step(run: SettlementRunRow, now: string, budget: StepBudget): Promise<{ batches: SettlementBatch[]; failed: string[]; finished: boolean; progressed: boolean }> {
    const sql = this.ctx.storage.sql;
    const merchantId = readSettlementMeta(sql)?.merchantId ?? '';
    const entryBudget = budget.entries ?? ENTRIES_PER_STEP;
    const pageEntries = budget.pageEntries ?? HANDOFF_ENTRIES_PER_PIECE;
    const failed: string[] = [];
    let entries = 0;
    let calls = 0;
    let progressed = false;
    while (entries < entryBudget && calls < SHARD_CALLS_PER_STEP) {
      const shards = shardsToAsk(sql, now, SHARD_CALLS_PER_STEP - calls).filter((s) => !failed.includes(s.identity.name));
      if (shards.length === 0) break;
      for (const shard of shards) {
        const name = shard.identity.name;
        let acked = shard.ackedSeq;
        // One shard at a time, piece after piece, until it is done or the step's budget is spent.
        while (entries < entryBudget && calls < SHARD_CALLS_PER_STEP) {
          calls++;
          const answer = await this.#ask(shard.identity, { before: run.endAt, batchDate: run.batchDate, settledAt: run.settledAt, after: acked, pageEntries });
          if ('failed' in answer) {
            const failures = failShard(sql, name, answer.failed, (n) => new Date(Date.parse(now) + Math.min(RETRY_BASE_MS * 2 ** (n - 1), RETRY_MAX_MS)).toISOString());
            console.log(JSON.stringify({ level: 'error', event: 'settlement_shard_failed', shard: name, failures, error: answer.failed }));
            failed.push(name);
            break;
          }
          progressed = true;
          if (answer.piece) {
            const piece = answer.piece;
            // The piece's transactions are marked settled in the search index before the piece is
            // recorded; its object calls count in the step's budget of subrequests, as the shard calls
            // do. An index object that fails holds back this shard only: the shard waits (the same
            // backoff as a failing shard) and answers the same piece again, while the others go on.
            const indexed = await this.#index(merchantId, name, piece, run.settledAt);
            if (typeof indexed === 'string') {
              const failures = failShard(sql, name, indexed, (n) => new Date(Date.parse(now) + Math.min(RETRY_BASE_MS * 2 ** (n - 1), RETRY_MAX_MS)).toISOString());
              console.log(JSON.stringify({ level: 'error', event: 'settlement_index_failed', shard: name, failures, error: indexed }));
              failed.push(name);
              calls++;
              break;
            }
            calls += indexed;
            this.ctx.storage.transactionSync(() => recordPiece(sql, name, piece, { id: run.id, at: now, batchIdOf: settlementBatchId }));
            acked = piece.seq;
            entries += piece.entries.length;
            continue;
          }
          if (answer.done) {
            const { holdsUnsettled, generation } = answer;
            this.ctx.storage.transactionSync(() => finishShard(sql, name, holdsUnsettled, generation));
            break;
          }
        }
        if (entries >= entryBudget || calls >= SHARD_CALLS_PER_STEP) break;
      }
    }
    if (runRemainder(sql).remaining > 0) return { batches: [], failed, finished: false, progressed };
    return { ...(await this.#finish(run.id, now)), failed, finished: true, progressed };
  }

  /** Ends a run and announces the batches it made or added to. */
  async #finish(runId: number, now: string): Promise<{ batches: SettlementBatch[] }> {
    const sql = this.ctx.storage.sql;
    finishRun(sql, runId, now);
    const batches = readBatches(sql, readRun(sql, runId)?.touched ?? []);
    await this.#announce(runId, batches);
    return { batches };
  }

  /**
   * A newer run is due (a later cutoff, or settle now) while the current one is left only with
   * shards that fail: it ends as it stands, so one shard cannot hold the merchant's settlement back.
   * Nothing is lost: the failing shard keeps its handoff, whose pieces carry their own day, and the
   * next run records them in that day's batches when the shard answers again.
   */
  async #closeIfStuck(run: SettlementRunRow, end: string, now: string): Promise<SettlementRunRow | null> {
    const { remaining, waiting } = runRemainder(this.ctx.storage.sql);
    if (run.endAt >= end || remaining === 0 || remaining > waiting) return run;
    console.log(JSON.stringify({ level: 'warn', event: 'settlement_run_closed', run: run.id, waiting }));
    await this.#finish(run.id, now);
    return null;
  }

  /** Marks a piece's transactions settled in the search index: the calls made, or why it failed. */
  async #index(merchantId: string, shard: string, piece: { entries: HandoffPiece['entries']; batchDate: string; held: string[] }, settledAt: string): Promise<number | string> {
    try {
      return await indexSettlement(this.env, merchantId, shard, piece.entries, piece.batchDate, settledAt, piece.held);
    } catch (err) {
      return err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error';
    }
  }

  /** One shard call; a rejected call (the shard's object failed) is a failure like an answered one. */
  async #ask(shard: ShardIdentity, request: Parameters<ReturnType<Env['LEDGER_SHARD']['getByName']>['settle']>[1]) {
    try {
      return await this.env.LEDGER_SHARD.getByName(shard.name).settle(shard, request);
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  /** Announces a finished run's batches (settlement.completed); a failure is retried by the next tick. */
  async #announce(runId: number, batches: readonly SettlementBatch[]): Promise<void> {
    const meta = readSettlementMeta(this.ctx.storage.sql);
    if (!meta) return;
    try {
      if (batches.length > 0) await announceSettlement(this.env, meta.merchantId, batches, systemClock);
      markAnnounced(this.ctx.storage.sql, runId);
    } catch (err) {
      console.log(JSON.stringify({ level: 'error', event: 'settlement_announce_failed', error: err instanceof Error ? err.message : 'unknown error' }));
    }
  }

  async #announcePending(): Promise<void> {
    for (const run of unannouncedRuns(this.ctx.storage.sql)) await this.#announce(run.id, readBatches(this.ctx.storage.sql, run.touched));
  }

  /**
   * The next alarm: at once while a run has shards it can ask (its next step), at the earliest retry
   * of a failing shard, then the next cutoff while shards are indexed, else the oldest batch's end of
   * retention, else none.
   */
  async #arm(now: Date, retentionDays = 548, delayMs = 0): Promise<void> {
    const sql = this.ctx.storage.sql;
    if (currentRun(sql)) {
      const { remaining, waiting, nextRetry } = runRemainder(sql);
      const soonest = now.getTime() + delayMs;
      const at = remaining > waiting || nextRetry === null ? soonest : Math.max(soonest, Date.parse(nextRetry));
      await this.ctx.storage.setAlarm(at);
      return;
    }
    if (unannouncedRuns(sql).length > 0) {
      await this.ctx.storage.setAlarm(now.getTime() + TICK_RETRY_MS);
      return;
    }
    if (hasShards(sql)) {
      await this.ctx.storage.setAlarm(lastCutoff(now, this.#cutoff()).getTime() + DAY_MS);
      return;
    }
    const oldest = oldestBatchDate(sql);
    if (oldest === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Date.parse(`${oldest}T00:00:00.000Z`) + (retentionDays + 1) * DAY_MS);
  }

  async search(search: BatchSearch): Promise<{ batches: SettlementBatch[]; total: number }> {
    return searchBatches(this.ctx.storage.sql, search);
  }

  /** A batch with where the page [offset, offset + limit) of its transactions lies (services/settlement/batch-transactions.ts reads it). */
  async batch(id: string, limit: number, offset: number, maxPieces: number): Promise<{ batch: SettlementBatch; slices: BatchSlice[] } | null> {
    const batch = readBatches(this.ctx.storage.sql, [id])[0];
    return batch ? { batch, slices: batchSlices(this.ctx.storage.sql, id, limit, offset, maxPieces) } : null;
  }

  /** The index, for tests and operators (the first 1,000 names). */
  async indexedShards(): Promise<string[]> {
    return listShards(this.ctx.storage.sql, 1_000);
  }

  override async alarm(): Promise<void> {
    const days = Number(this.env.TRANSACTION_RETENTION_DAYS);
    try {
      await this.runDue(new Date().toISOString(), Number.isFinite(days) && days > 0 ? days : 548);
    } catch (err) {
      // Thrown, the platform retries an alarm DURABLE_OBJECTS.alarmRetries times and then drops it:
      // the run would stall until something registers again. Armed here, it is tried again.
      console.log(JSON.stringify({ level: 'error', event: 'settlement_tick_failed', retries: DURABLE_OBJECTS.alarmRetries, error: err instanceof Error ? err.message : 'unknown error' }));
      await this.ctx.storage.setAlarm(Date.now() + TICK_RETRY_MS);
    }
  }
}

