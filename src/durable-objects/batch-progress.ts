/**
 * One object per batch (`env.BATCH_PROGRESS.getByName(batchId)`): the batch's state machine and
 * live counters in SQLite, the set of chunks sent and done, windowed dispatch, pause, the stall
 * watchdog and, once the batch has ended, its retention (one alarm for each, in turn).
 *
 *   pending ──start──> queued ──first recordChunk──> processing ──last chunk──> completed
 *      └──── fail (dead letter, stall, missing file), cancel, paused too long ────> failed
 *
 * After the end: a batch that failed while chunks were running (a cancel) is not `settled` until
 * they have landed (or BATCH_STALL_MINUTES have passed): their rows are charged, so they are counted
 * in `processed_lines` as they land, and the uploaded file and the batch event wait for them
 * (services/batches/lifecycle.ts). Then its retention alarm: at `ended_at` + BATCH_RETENTION_DAYS
 * the object deletes its result parts and empties itself, whatever the number of batches that end
 * that day (each object is its own invocation; the hourly job only catches what an alarm missed).
 *
 * Windowed dispatch (durable-objects/chunk-window.ts): at most BATCH_CHUNKS_IN_FLIGHT chunk messages
 * of a batch are out at once. While paused (`paused`, beside the status) nothing is sent; chunks
 * already sent finish and are recorded.
 *
 * Side effects are not done here: after each transition the object tells the batch lifecycle
 * (services/batches/lifecycle.ts), which mirrors it into D1 and, when the batch ends, deletes the
 * uploaded file. Those effects are idempotent and re-run when a caller repeats a call on an ended
 * batch, so a failure after the SQLite commit heals.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { isoTimestamp } from '../lib/time';
import { batchExpired, batchTransitioned, lifecycleDeps, type LifecycleDeps } from '../services/batches/lifecycle';
import { batchLimits, STALL_GIVE_UP_HOURS } from '../services/batches/limits';
import {
  cancelledAfterPause,
  hasEnded,
  toSnapshot,
  type BatchControlOutcome,
  type BatchInit,
  type BatchSnapshot,
  type BatchStatus,
  type ChunkNotRecorded,
  type ChunkRecorded,
  type PartialView,
} from '../services/batches/state';
import {
  countChunk,
  countInFlight,
  countLateChunk,
  insertBatch,
  listChunkLines,
  markChunkDone,
  markChunkGivenUp,
  markDispatching,
  markLateChunkDone,
  markPaused,
  markRequeued,
  markResumed,
  markSettled,
  migrateProgressTables,
  readState,
  writeTransition,
  type ProgressState,
} from '../storage/batch-progress';
import { fillWindow, resendUnrecorded } from './chunk-window';
import { ProgressFeed } from './progress-feed';

export class BatchProgress extends DurableObject<Env> {
  readonly #lifecycle: LifecycleDeps;
  /** Set once this instance emptied its storage (its tables are gone until a new instance migrates). */
  #emptied = false;
  /** Open progress streams (GET /api/filebatch/{id}/events): at most 4 states a second each. */
  readonly #feed = new ProgressFeed<BatchSnapshot>({
    minIntervalMs: 250,
    heartbeatMs: 15_000,
    isFinal: (batch) => hasEnded(batch.status),
    encode: (batch) => JSON.stringify(batch),
  });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#lifecycle = lifecycleDeps(env);
    migrateProgressTables(ctx.storage);
  }

  /** Creates the batch in `pending` with its chunk map; a repeated call answers the existing state. */
  async init(input: BatchInit): Promise<BatchSnapshot> {
    const existing = this.#state();
    if (existing) return toSnapshot(existing);
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => insertBatch(sql, input));
    await this.#armWatchdog();
    return toSnapshot(this.#requireState());
  }

  /**
   * Starts sending the batch's chunk messages (the first window; each chunk recorded sends the
   * next) and moves `pending` → `queued`. Repeating it changes nothing.
   */
  async start(): Promise<BatchSnapshot> {
    const state = this.#requireState();
    if (hasEnded(state.status)) {
      await this.#afterEnd(state);
      return toSnapshot(state);
    }
    if (!state.dispatching) {
      markDispatching(this.ctx.storage.sql);
      await this.#dispatch();
    }
    const now = this.#requireState();
    return now.status === 'pending' ? this.#transition('queued', null) : toSnapshot(now);
  }

  /**
   * Stops sending chunk messages; chunks already sent finish and are recorded. The stall watchdog
   * stands down: a paused batch is not stalled, but one paused for BATCH_RETENTION_DAYS is
   * cancelled (the alarm is set for then). Pausing a paused batch changes nothing.
   */
  async pause(): Promise<BatchControlOutcome | null> {
    const state = this.#state();
    if (!state) return null;
    if (hasEnded(state.status)) return { ok: false, reason: 'ended', batch: toSnapshot(state) };
    if (state.paused) return { ok: true, batch: toSnapshot(state) };
    const now = isoTimestamp(new Date());
    markPaused(this.ctx.storage.sql, now);
    const paused = this.#requireState();
    this.#feed.publish(toSnapshot(paused));
    await this.ctx.storage.setAlarm(Date.parse(now) + this.#pauseLimitDays() * 86_400_000);
    return { ok: true, batch: toSnapshot(paused) };
  }

  /** Sends chunk messages again, up to the window, and re-arms the stall watchdog. Resuming a running batch changes nothing. */
  async resume(): Promise<BatchControlOutcome | null> {
    const state = this.#state();
    if (!state) return null;
    if (hasEnded(state.status)) return { ok: false, reason: 'ended', batch: toSnapshot(state) };
    if (!state.paused) return { ok: true, batch: toSnapshot(state) };
    markResumed(this.ctx.storage.sql, isoTimestamp(new Date()));
    const resumed = this.#requireState();
    this.#feed.publish(toSnapshot(resumed));
    await this.#dispatch();
    await this.#armWatchdog();
    return { ok: true, batch: toSnapshot(this.#requireState()) };
  }

  /**
   * Ends the batch `failed` with `reason` at once: nothing more is sent. Chunks already sent run to
   * their end and are counted as they land; the batch settles then (see the header).
   */
  async cancel(reason: string): Promise<BatchControlOutcome | null> {
    const state = this.#state();
    if (!state) return null;
    if (hasEnded(state.status)) return { ok: false, reason: 'ended', batch: toSnapshot(state) };
    return { ok: true, batch: await this.#transition('failed', reason, { waitForInFlight: true }) };
  }

  /**
   * Records a chunk's rows as processed, once however often it is delivered. The first chunk moves
   * the batch to `processing`, the last one to `completed`. Never rejects: when the object's
   * storage (or a side effect) fails, the answer says so and the caller retries the message. A
   * rejected RPC would also surface as an uncaught exception of the object itself, beside the
   * caller's error, for a failure the caller already handles.
   */
  async recordChunk(chunk: number): Promise<ChunkRecorded | ChunkNotRecorded> {
    try {
      return await this.#recordChunk(chunk);
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  async #recordChunk(chunk: number): Promise<ChunkRecorded> {
    const state = this.#requireState();
    if (hasEnded(state.status)) return this.#recordAfterEnd(state, chunk);
    const now = isoTimestamp(new Date());
    const rows = markChunkDone(this.ctx.storage.sql, chunk, now);
    if (rows === null) {
      // A redelivery: the window may still miss what an earlier, failed send of this chunk's call left out.
      await this.#dispatch();
      return { counted: false, batch: toSnapshot(state) };
    }
    countChunk(this.ctx.storage.sql, rows, now);
    const updated = this.#requireState();
    if (updated.chunksDone === updated.numChunks) {
      return { counted: true, batch: await this.#transition('completed', null) };
    }
    // The state change comes before any await: another chunk's call may run at an await and
    // complete the batch, and a status read before it must not be written back after it.
    if (updated.status === 'processing') this.#feed.publish(toSnapshot(updated));
    // The next chunks go out beside the transition (a failure of either is the call's failure).
    const [batch] = await Promise.all([
      updated.status !== 'processing' ? this.#transition('processing', null) : toSnapshot(updated),
      this.#dispatch(),
    ]);
    if (!this.#requireState().paused) await this.#armWatchdog();
    return { counted: true, batch };
  }

  /**
   * Ends the batch as failed with a reason (the first reason wins); null if never initialised.
   * `chunk`: the chunk the dead-letter queue gave up on (it will not land: not waited for); the
   * other chunks running then are. Without it (the uploaded file is gone) nothing is waited for.
   */
  async fail(reason: string, chunk?: number): Promise<BatchSnapshot | null> {
    const state = this.#state();
    if (!state) return null;
    // A dead-lettered chunk was delivered, whatever this object marked: its rows are looked up in a partial download.
    if (chunk !== undefined) markChunkGivenUp(this.ctx.storage.sql, chunk);
    if (hasEnded(state.status)) {
      if (!state.settled && countInFlight(this.ctx.storage.sql) === 0) return this.#settle();
      await this.#afterEnd(state);
      return toSnapshot(state);
    }
    return this.#transition('failed', reason, { waitForInFlight: chunk !== undefined });
  }

  /** The live state, or null when no batch was initialised under this name. */
  async snapshot(): Promise<BatchSnapshot | null> {
    const state = this.#state();
    return state ? toSnapshot(state) : null;
  }

  /**
   * Empties the object (state, chunk map, alarm): its batch's results have passed retention, and D1
   * keeps the batch's record. An object woken again afterwards answers as never initialised.
   */
  async destroy(): Promise<void> {
    await this.#empty();
  }

  /**
   * What a partial download needs: whether the batch has settled (no chunk it may still count is
   * running), and the chunk map by lines in chunk order, each chunk saying whether it was ever sent
   * (one never sent charged nothing: its rows need no lookup). At most 1,000 chunks (a 500,000-row
   * file): about 76 KB (measured: test/integration/invocation-limits.test.ts), far under half the
   * RPC limit (32 MiB). With `bytes`, each chunk's place in the file too (a row naming a line of another chunk reads it).
   */
  async partialView(bytes = false): Promise<PartialView> {
    const state = this.#state();
    if (!state) return { settled: true, chunks: [] };
    return { settled: state.settled, chunks: listChunkLines(this.ctx.storage.sql, bytes) };
  }

  /** The state now and at each change (one JSON snapshot per line), ending after the final one; null if never initialised. */
  async watch(): Promise<ReadableStream<Uint8Array> | null> {
    const state = this.#state();
    return state ? this.#feed.open(toSnapshot(state)) : null;
  }

  /**
   * The stall watchdog: every bit of progress pushes the alarm back, so when it fires the batch has
   * made none for BATCH_STALL_MINUTES. Each time, the chunks sent but not recorded are sent again
   * (their messages may have died with a process) and the window is filled (or started, if the
   * upload's start was lost); after STALL_GIVE_UP_HOURS with no progress, the batch fails. While paused the alarm is the pause limit
   * instead: a batch still paused BATCH_RETENTION_DAYS after it was paused is cancelled.
   */
  override async alarm(): Promise<void> {
    const state = this.#state();
    if (!state) return;
    if (hasEnded(state.status)) return this.#endedAlarm(state);
    if (state.paused) {
      const days = this.#pauseLimitDays();
      const limit = Date.parse(state.pausedAt ?? state.updatedAt) + days * 86_400_000;
      if (Date.now() < limit) await this.ctx.storage.setAlarm(limit);
      else await this.#transition('failed', cancelledAfterPause(days));
      return;
    }
    if (Date.now() < Date.parse(state.updatedAt) + STALL_GIVE_UP_HOURS * 3_600_000) {
      markRequeued(this.ctx.storage.sql);
      const resent = await resendUnrecorded(this.ctx.storage.sql, this.#lifecycle, state.batchId);
      const sent = await this.#dispatch();
      console.warn(JSON.stringify({ level: 'warn', event: 'batch_stalled_requeued', batch_id: state.batchId, chunks: resent + sent }));
      if (state.status === 'pending') await this.#transition('queued', null);
      await this.#armWatchdog();
      return;
    }
    const minutes = batchLimits(this.env).stallMinutes;
    await this.#transition('failed', `no progress for ${STALL_GIVE_UP_HOURS} hours, though the chunks not recorded were re-sent every ${minutes} minutes`);
  }

  /**
   * The alarm of an ended batch: if it still waits for chunks that were running at its end, they
   * had BATCH_STALL_MINUTES to land, and the batch settles without them; once settled, at its
   * retention deadline, its result parts go and the object empties itself (D1 keeps the record).
   * A failure throws: the alarm is retried (6 times), and what it leaves, the hourly job sweeps.
   */
  async #endedAlarm(state: ProgressState): Promise<void> {
    if (!state.settled) {
      await this.#settle();
      return;
    }
    const deadline = this.#retentionDeadline(state);
    if (Date.now() < deadline) {
      await this.ctx.storage.setAlarm(deadline);
      return;
    }
    await batchExpired(this.#lifecycle, state.batchId, isoTimestamp(new Date()));
    await this.#empty();
  }

  /**
   * A chunk that lands after the batch ended (it was running at the end): its rows were charged, so
   * they are counted (once, as any chunk); the last of them settles the batch. A chunk recorded
   * before, or never sent, counts nothing.
   */
  async #recordAfterEnd(state: ProgressState, chunk: number): Promise<ChunkRecorded> {
    const now = isoTimestamp(new Date());
    const rows = markLateChunkDone(this.ctx.storage.sql, chunk, now);
    if (rows === null) {
      await this.#afterEnd(state);
      return { counted: false, batch: toSnapshot(state) };
    }
    countLateChunk(this.ctx.storage.sql, rows);
    const counted = this.#requireState();
    if (!counted.settled && countInFlight(this.ctx.storage.sql) === 0) return { counted: true, batch: await this.#settle() };
    await this.#afterEnd(counted);
    return { counted: true, batch: toSnapshot(counted) };
  }

  /** The ended batch stops waiting: chunks still running are given up on; the effects of its end run; its retention alarm is set. */
  async #settle(): Promise<BatchSnapshot> {
    markSettled(this.ctx.storage.sql);
    const state = this.#requireState();
    await this.ctx.storage.setAlarm(this.#retentionDeadline(state));
    await this.#afterEnd(state);
    return toSnapshot(state);
  }

  #retentionDeadline(state: ProgressState): number {
    return Date.parse(state.endedAt ?? state.updatedAt) + batchLimits(this.env).retentionDays * 86_400_000;
  }

  /** Fills the window (see chunk-window.ts); nothing while paused, ended or not started. Answers how many it sent. */
  async #dispatch(): Promise<number> {
    const state = this.#requireState();
    if (!state.dispatching || state.paused || hasEnded(state.status)) return 0;
    return fillWindow(this.ctx.storage.sql, this.#lifecycle, state.batchId, batchLimits(this.env).chunksInFlight);
  }

  /**
   * `waitForInFlight`: an ending that lets the chunks already running land and be counted (a
   * cancel, a dead-lettered chunk beside others); other endings settle at once (nothing more will
   * land: the file is gone, or nothing moved for BATCH_STALL_MINUTES).
   */
  async #transition(status: BatchStatus, reason: string | null, options: { waitForInFlight?: boolean } = {}): Promise<BatchSnapshot> {
    const current = this.#requireState();
    // An ended batch stays ended, whatever a late call asks for.
    if (hasEnded(current.status)) return toSnapshot(current);
    const now = isoTimestamp(new Date());
    const ending = hasEnded(status);
    const waiting = ending && options.waitForInFlight === true && countInFlight(this.ctx.storage.sql) > 0;
    writeTransition(this.ctx.storage.sql, { status, at: now, reason, endedAt: ending ? now : null, settled: !waiting });
    const state = this.#requireState();
    this.#feed.publish(toSnapshot(state));
    if (!ending) {
      await batchTransitioned(this.#lifecycle, toSnapshot(state));
      return toSnapshot(state);
    }
    if (!waiting) return this.#settle();
    // The chunks running now get BATCH_STALL_MINUTES to land (then the alarm settles without them).
    await this.ctx.storage.setAlarm(Date.now() + batchLimits(this.env).stallMinutes * 60_000);
    await this.#afterEnd(state);
    return toSnapshot(state);
  }

  /** Tells the lifecycle; for an ended batch that is safe to repeat (D1 mirror; once settled, upload deleted and batch event). */
  async #afterEnd(state: ProgressState): Promise<void> {
    await batchTransitioned(this.#lifecycle, toSnapshot(state), state.settled);
  }

  async #armWatchdog(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + batchLimits(this.env).stallMinutes * 60_000);
  }

  /** A batch paused this long is cancelled: its uploaded file (card numbers) is not kept longer than its results. */
  #pauseLimitDays(): number {
    return batchLimits(this.env).retentionDays;
  }

  /**
   * The state, or null when never initialised or emptied: `deleteAll` takes the tables too, and this
   * instance does not make them again (a new one does, in its constructor).
   */
  #state(): ProgressState | null {
    if (this.#emptied) return null;
    return readState(this.ctx.storage.sql);
  }

  /** Empties the object (retention): its storage, its alarm, and this instance's view of them. */
  async #empty(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.#emptied = true;
  }

  #requireState(): ProgressState {
    const state = this.#state();
    if (!state) throw new Error('batch progress used before init');
    return state;
  }
}
