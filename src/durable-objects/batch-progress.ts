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
 * Windowed dispatch: `start` sends the first BATCH_CHUNKS_IN_FLIGHT chunk messages and each chunk
 * recorded sends the next, so a batch never has more than that many in the queue shared by every
 * merchant, and a batch uploaded later waits behind at most a window of each running batch, not
 * behind whole files. While paused (`paused`, beside the status) nothing is sent; chunks already
 * sent finish and are recorded.
 *
 * Side effects are not done here: after each transition the object tells the batch lifecycle
 * (services/batches/lifecycle.ts), which mirrors it into D1 and, when the batch ends, deletes the
 * uploaded file. Those effects are idempotent and re-run when a caller repeats a call on an ended
 * batch, so a failure after the SQLite commit heals.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { isoTimestamp } from '../lib/time';
import {
  batchExpired,
  batchTransitioned,
  chunkMessages,
  lifecycleDeps,
  sendChunkMessages,
  type LifecycleDeps,
} from '../services/batches/lifecycle';
import { batchLimits } from '../services/batches/limits';
import {
  cancelledAfterPause,
  hasEnded,
  type BatchControlOutcome,
  type BatchInit,
  type BatchSnapshot,
  type BatchStatus,
  type ChunkRecorded,
  type PartialView,
} from '../services/batches/state';
import { ProgressFeed } from './progress-feed';

/** A chunk the object could not record; the message is the failure's, for the caller's log. */
export interface ChunkNotRecorded {
  failed: string;
}

type StateRow = {
  batch_id: string;
  status: BatchStatus;
  num_lines: number;
  processed_lines: number;
  num_chunks: number;
  chunks_done: number;
  requeued: number;
  /** 1 once `start` (or the watchdog) began sending chunk messages. */
  dispatching: number;
  paused: number;
  paused_at: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
  /** When the batch completed or failed. */
  ended_at: string | null;
  /** 0 while an ended batch waits for chunks that were running at its end; 1 otherwise. */
  settled: number;
};

/** A chunk sent, not recorded, and not given up on: its rows may still be charged and land. */
const IN_FLIGHT = 'sent_at IS NOT NULL AND done_at IS NULL AND given_up = 0';

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
    migrate(ctx.storage);
  }

  /** Creates the batch in `pending` with its chunk map; a repeated call answers the existing state. */
  async init(input: BatchInit): Promise<BatchSnapshot> {
    const existing = this.#state();
    if (existing) return toSnapshot(existing);
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sql.exec(
        `INSERT INTO state (singleton, batch_id, status, num_lines, num_chunks, created_at, updated_at)
         VALUES (1, ?, 'pending', ?, ?, ?, ?)`,
        input.batchId,
        input.numLines,
        input.chunks.length,
        input.createdAt,
        input.createdAt,
      );
      for (const chunk of input.chunks) {
        sql.exec(
          'INSERT INTO chunks (chunk, byte_offset, byte_length, first_line, rows) VALUES (?, ?, ?, ?, ?)',
          chunk.index,
          chunk.offset,
          chunk.length,
          chunk.firstLine,
          chunk.rows,
        );
      }
    });
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
    if (state.dispatching === 0) {
      this.ctx.storage.sql.exec('UPDATE state SET dispatching = 1');
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
    if (state.paused === 1) return { ok: true, batch: toSnapshot(state) };
    const now = isoTimestamp(new Date());
    this.ctx.storage.sql.exec('UPDATE state SET paused = 1, paused_at = ?, updated_at = ?', now, now);
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
    if (state.paused === 0) return { ok: true, batch: toSnapshot(state) };
    this.ctx.storage.sql.exec('UPDATE state SET paused = 0, paused_at = NULL, updated_at = ?', isoTimestamp(new Date()));
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
    const marked = this.ctx.storage.sql
      .exec<{ rows: number }>('UPDATE chunks SET done_at = ? WHERE chunk = ? AND done_at IS NULL RETURNING rows', now, chunk)
      .toArray()[0];
    if (!marked) {
      // A redelivery: the window may still miss what an earlier, failed send of this chunk's call left out.
      await this.#dispatch();
      return { counted: false, batch: toSnapshot(state) };
    }
    this.ctx.storage.sql.exec(
      'UPDATE state SET processed_lines = processed_lines + ?, chunks_done = chunks_done + 1, updated_at = ?',
      marked.rows,
      now,
    );
    const updated = this.#requireState();
    if (updated.chunks_done === updated.num_chunks) {
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
    if (this.#requireState().paused === 0) await this.#armWatchdog();
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
    if (chunk !== undefined) this.ctx.storage.sql.exec('UPDATE chunks SET given_up = 1, ever_sent = 1 WHERE chunk = ? AND done_at IS NULL', chunk);
    if (hasEnded(state.status)) {
      if (state.settled === 0 && this.#inFlight() === 0) return this.#settle();
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
   * RPC limit (32 MiB).
   */
  async partialView(): Promise<PartialView> {
    const state = this.#state();
    if (!state) return { settled: true, chunks: [] };
    const chunks = this.ctx.storage.sql
      .exec<{ chunk: number; first_line: number; rows: number; sent: number }>(
        'SELECT chunk, first_line, rows, (ever_sent = 1 OR sent_at IS NOT NULL OR done_at IS NOT NULL) AS sent FROM chunks ORDER BY chunk',
      )
      .toArray()
      .map((row) => ({ chunk: row.chunk, firstLine: row.first_line, rows: row.rows, sent: row.sent === 1 }));
    return { settled: state.settled === 1, chunks };
  }

  /** The state now and at each change (one JSON snapshot per line), ending after the final one; null if never initialised. */
  async watch(): Promise<ReadableStream<Uint8Array> | null> {
    const state = this.#state();
    return state ? this.#feed.open(toSnapshot(state)) : null;
  }

  /**
   * The stall watchdog: every bit of progress pushes the alarm back, so when it fires the batch has
   * made none for BATCH_STALL_MINUTES. The first time, the chunks sent but not recorded are sent
   * again (their messages may have been lost) and the window is filled (or started, if the upload's
   * start was lost); the second time, the batch fails. While paused the alarm is the pause limit
   * instead: a batch still paused BATCH_RETENTION_DAYS after it was paused is cancelled.
   */
  override async alarm(): Promise<void> {
    const state = this.#state();
    if (!state) return;
    if (hasEnded(state.status)) return this.#endedAlarm(state);
    if (state.paused === 1) {
      const days = this.#pauseLimitDays();
      const limit = Date.parse(state.paused_at ?? state.updated_at) + days * 86_400_000;
      if (Date.now() < limit) await this.ctx.storage.setAlarm(limit);
      else await this.#transition('failed', cancelledAfterPause(days));
      return;
    }
    if (state.requeued === 0) {
      this.ctx.storage.sql.exec('UPDATE state SET requeued = 1, dispatching = 1');
      const lost = this.ctx.storage.sql
        .exec<{ chunk: number; byte_offset: number; byte_length: number; first_line: number }>(
          'SELECT chunk, byte_offset, byte_length, first_line FROM chunks WHERE sent_at IS NOT NULL AND done_at IS NULL ORDER BY chunk',
        )
        .toArray()
        .map(toLocation);
      await sendChunkMessages(this.#lifecycle, chunkMessages(state.batch_id, lost));
      const sent = await this.#dispatch();
      console.warn(JSON.stringify({ level: 'warn', event: 'batch_stalled_requeued', batch_id: state.batch_id, chunks: lost.length + sent }));
      if (state.status === 'pending') await this.#transition('queued', null);
      await this.#armWatchdog();
      return;
    }
    const minutes = this.#stallMinutes();
    await this.#transition('failed', `no progress for ${minutes} minutes, even after re-enqueueing the missing chunks`);
  }

  /**
   * The alarm of an ended batch: if it still waits for chunks that were running at its end, they
   * had BATCH_STALL_MINUTES to land, and the batch settles without them; once settled, at its
   * retention deadline, its result parts go and the object empties itself (D1 keeps the record).
   * A failure throws: the alarm is retried (6 times), and what it leaves, the hourly job sweeps.
   */
  async #endedAlarm(state: StateRow): Promise<void> {
    if (state.settled === 0) {
      await this.#settle();
      return;
    }
    const deadline = this.#retentionDeadline(state);
    if (Date.now() < deadline) {
      await this.ctx.storage.setAlarm(deadline);
      return;
    }
    await batchExpired(this.#lifecycle, state.batch_id, isoTimestamp(new Date()));
    await this.#empty();
  }

  /**
   * A chunk that lands after the batch ended (it was running at the end): its rows were charged, so
   * they are counted (once, as any chunk); the last of them settles the batch. A chunk recorded
   * before, or never sent, counts nothing.
   */
  async #recordAfterEnd(state: StateRow, chunk: number): Promise<ChunkRecorded> {
    const now = isoTimestamp(new Date());
    const marked = this.ctx.storage.sql
      .exec<{ rows: number }>('UPDATE chunks SET done_at = ? WHERE chunk = ? AND done_at IS NULL AND (ever_sent = 1 OR sent_at IS NOT NULL) RETURNING rows', now, chunk)
      .toArray()[0];
    if (!marked) {
      await this.#afterEnd(state);
      return { counted: false, batch: toSnapshot(state) };
    }
    // updated_at stays the end's: the batch's state did not change, only its count.
    this.ctx.storage.sql.exec('UPDATE state SET processed_lines = processed_lines + ?, chunks_done = chunks_done + 1', marked.rows);
    const counted = this.#requireState();
    if (counted.settled === 0 && this.#inFlight() === 0) return { counted: true, batch: await this.#settle() };
    await this.#afterEnd(counted);
    return { counted: true, batch: toSnapshot(counted) };
  }

  /** The ended batch stops waiting: chunks still running are given up on; the effects of its end run; its retention alarm is set. */
  async #settle(): Promise<BatchSnapshot> {
    this.ctx.storage.sql.exec(`UPDATE chunks SET given_up = 1 WHERE ${IN_FLIGHT}`);
    this.ctx.storage.sql.exec('UPDATE state SET settled = 1');
    const state = this.#requireState();
    await this.ctx.storage.setAlarm(this.#retentionDeadline(state));
    await this.#afterEnd(state);
    return toSnapshot(state);
  }

  #inFlight(): number {
    return this.ctx.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM chunks WHERE ${IN_FLIGHT}`).one().n;
  }

  #retentionDeadline(state: StateRow): number {
    return Date.parse(state.ended_at ?? state.updated_at) + batchLimits(this.env).retentionDays * 86_400_000;
  }

  /**
   * Fills the window: sends the next chunks not sent yet until BATCH_CHUNKS_IN_FLIGHT are sent and
   * not recorded. Nothing while paused, ended or not started. The chunks are marked sent before the
   * send (no other call can pick them meanwhile) and unmarked if it fails. Answers how many it sent.
   */
  async #dispatch(): Promise<number> {
    const state = this.#requireState();
    if (state.dispatching === 0 || state.paused === 1 || hasEnded(state.status)) return 0;
    const sql = this.ctx.storage.sql;
    const inFlight = this.#inFlight();
    const room = batchLimits(this.env).chunksInFlight - inFlight;
    if (room <= 0) return 0;
    const next = sql
      .exec<{ chunk: number; byte_offset: number; byte_length: number; first_line: number }>(
        'SELECT chunk, byte_offset, byte_length, first_line FROM chunks WHERE sent_at IS NULL AND done_at IS NULL ORDER BY chunk LIMIT ?',
        room,
      )
      .toArray()
      .map(toLocation);
    if (next.length === 0) return 0;
    const now = isoTimestamp(new Date());
    const first = next[0]?.index ?? 0;
    const last = next[next.length - 1]?.index ?? 0;
    sql.exec('UPDATE chunks SET sent_at = ?, ever_sent = 1 WHERE chunk BETWEEN ? AND ? AND sent_at IS NULL AND done_at IS NULL', now, first, last);
    try {
      await sendChunkMessages(this.#lifecycle, chunkMessages(state.batch_id, next));
    } catch (err) {
      // Unmarked so the window sends them again; `ever_sent` stays (a failed send may still have
      // reached the queue: a partial download must look their rows up).
      sql.exec('UPDATE chunks SET sent_at = NULL WHERE chunk BETWEEN ? AND ? AND sent_at = ? AND done_at IS NULL', first, last, now);
      throw err;
    }
    return next.length;
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
    const waiting = ending && options.waitForInFlight === true && this.#inFlight() > 0;
    this.ctx.storage.sql.exec(
      `UPDATE state SET status = ?, updated_at = ?, failure_reason = COALESCE(failure_reason, ?),
              ended_at = ?, settled = ?`,
      status,
      now,
      reason,
      ending ? now : null,
      waiting ? 0 : 1,
    );
    const state = this.#requireState();
    this.#feed.publish(toSnapshot(state));
    if (!ending) {
      await batchTransitioned(this.#lifecycle, toSnapshot(state));
      return toSnapshot(state);
    }
    if (!waiting) return this.#settle();
    // The chunks running now get BATCH_STALL_MINUTES to land (then the alarm settles without them).
    await this.ctx.storage.setAlarm(Date.now() + this.#stallMinutes() * 60_000);
    await this.#afterEnd(state);
    return toSnapshot(state);
  }

  /** Tells the lifecycle; for an ended batch that is safe to repeat (D1 mirror; once settled, upload deleted and batch event). */
  async #afterEnd(state: StateRow): Promise<void> {
    await batchTransitioned(this.#lifecycle, toSnapshot(state), state.settled === 1);
  }

  async #armWatchdog(): Promise<void> {
    await this.ctx.storage.setAlarm(Date.now() + this.#stallMinutes() * 60_000);
  }

  /** A batch paused this long is cancelled: its uploaded file (card numbers) is not kept longer than its results. */
  #pauseLimitDays(): number {
    return batchLimits(this.env).retentionDays;
  }

  #stallMinutes(): number {
    const minutes = Number(this.env.BATCH_STALL_MINUTES);
    return Number.isFinite(minutes) && minutes > 0 ? minutes : 10;
  }

  /**
   * The state, or null when never initialised or emptied: `deleteAll` takes the tables too, and this
   * instance does not make them again (a new one does, in its constructor).
   */
  #state(): StateRow | null {
    if (this.#emptied) return null;
    return this.ctx.storage.sql.exec<StateRow>('SELECT * FROM state').toArray()[0] ?? null;
  }

  /** Empties the object (retention): its storage, its alarm, and this instance's view of them. */
  async #empty(): Promise<void> {
    await this.ctx.storage.deleteAll();
    this.#emptied = true;
  }

  #requireState(): StateRow {
    const state = this.#state();
    if (!state) throw new Error('batch progress used before init');
    return state;
  }
}

function toSnapshot(state: StateRow): BatchSnapshot {
  return {
    batchId: state.batch_id,
    status: state.status,
    numLines: state.num_lines,
    processedLines: state.processed_lines,
    numChunks: state.num_chunks,
    chunksDone: state.chunks_done,
    paused: state.paused === 1 && !hasEnded(state.status),
    failureReason: state.failure_reason,
    createdAt: state.created_at,
    updatedAt: state.updated_at,
  };
}

function toLocation(row: { chunk: number; byte_offset: number; byte_length: number; first_line: number }) {
  return { index: row.chunk, offset: row.byte_offset, length: row.byte_length, firstLine: row.first_line };
}

/**
 * The object's tables, versioned: `schema_version` holds the last step applied, and each step runs
 * once, in order. Objects made before the versioning have the first step's tables without a version.
 */
const SCHEMA_STEPS: ((sql: SqlStorage) => void)[] = [
  (sql) =>
    sql.exec(`
      CREATE TABLE IF NOT EXISTS state (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        batch_id TEXT NOT NULL,
        status TEXT NOT NULL,
        num_lines INTEGER NOT NULL,
        processed_lines INTEGER NOT NULL DEFAULT 0,
        num_chunks INTEGER NOT NULL,
        chunks_done INTEGER NOT NULL DEFAULT 0,
        requeued INTEGER NOT NULL DEFAULT 0,
        failure_reason TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS chunks (
        chunk INTEGER PRIMARY KEY,
        byte_offset INTEGER NOT NULL,
        byte_length INTEGER NOT NULL,
        first_line INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        done_at TEXT
      );
    `),
  // Windowed dispatch and pause. A batch started before them had every chunk message sent at upload.
  (sql) =>
    sql.exec(`
      ALTER TABLE state ADD COLUMN dispatching INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE state ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE state ADD COLUMN paused_at TEXT;
      ALTER TABLE chunks ADD COLUMN sent_at TEXT;
      UPDATE chunks SET sent_at = (SELECT created_at FROM state) WHERE EXISTS (SELECT 1 FROM state WHERE status != 'pending');
      UPDATE state SET dispatching = 1 WHERE status != 'pending';
    `),
  // Counting the chunks that land after a cancel, and retention by the object's own alarm. Batches
  // that ended before this step have no retention alarm: the hourly job sweeps them.
  (sql) =>
    sql.exec(`
      ALTER TABLE state ADD COLUMN ended_at TEXT;
      ALTER TABLE state ADD COLUMN settled INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE chunks ADD COLUMN given_up INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE chunks ADD COLUMN ever_sent INTEGER NOT NULL DEFAULT 0;
      UPDATE chunks SET ever_sent = 1 WHERE sent_at IS NOT NULL OR done_at IS NOT NULL;
      UPDATE state SET ended_at = updated_at WHERE status IN ('completed', 'failed');
    `),
];

function migrate(storage: DurableObjectStorage): void {
  const sql = storage.sql;
  sql.exec('CREATE TABLE IF NOT EXISTS schema_version (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), version INTEGER NOT NULL)');
  const applied = sql.exec<{ version: number }>('SELECT version FROM schema_version').toArray()[0]?.version ?? 0;
  if (applied >= SCHEMA_STEPS.length) return;
  storage.transactionSync(() => {
    for (const step of SCHEMA_STEPS.slice(applied)) step(sql);
    sql.exec('INSERT INTO schema_version (singleton, version) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET version = excluded.version', SCHEMA_STEPS.length);
  });
}
