/**
 * One object per batch (`env.BATCH_PROGRESS.getByName(batchId)`): the batch's state machine and
 * live counters in SQLite, the set of chunks sent and done, windowed dispatch, pause, and the
 * stall watchdog (an alarm).
 *
 *   pending ──start──> queued ──first recordChunk──> processing ──last chunk──> completed
 *      └──── fail (dead letter, stall, missing file), cancel, paused too long ────> failed
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
  type ChunkLines,
  type ChunkRecorded,
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
};

export class BatchProgress extends DurableObject<Env> {
  readonly #lifecycle: LifecycleDeps;
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
   * Ends the batch `failed` with `reason` at once: nothing more is sent. Chunks already sent may
   * still run (their rows appear in the partial download) but are no longer counted.
   */
  async cancel(reason: string): Promise<BatchControlOutcome | null> {
    const state = this.#state();
    if (!state) return null;
    if (hasEnded(state.status)) return { ok: false, reason: 'ended', batch: toSnapshot(state) };
    return { ok: true, batch: await this.#transition('failed', reason) };
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
    if (hasEnded(state.status)) {
      await this.#afterEnd(state);
      return { counted: false, batch: toSnapshot(state) };
    }
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

  /** Ends the batch as failed with a reason (the first reason wins). No effect once ended; null if never initialised. */
  async fail(reason: string): Promise<BatchSnapshot | null> {
    const state = this.#state();
    if (!state) return null;
    if (hasEnded(state.status)) {
      await this.#afterEnd(state);
      return toSnapshot(state);
    }
    return this.#transition('failed', reason);
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
    await this.ctx.storage.deleteAll();
  }

  /** The chunk map by lines, in chunk order (what a partial download needs). */
  async chunkLines(): Promise<ChunkLines[]> {
    return this.ctx.storage.sql
      .exec<{ chunk: number; first_line: number; rows: number }>('SELECT chunk, first_line, rows FROM chunks ORDER BY chunk')
      .toArray()
      .map((row) => ({ chunk: row.chunk, firstLine: row.first_line, rows: row.rows }));
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
    if (!state || hasEnded(state.status)) return;
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
   * Fills the window: sends the next chunks not sent yet until BATCH_CHUNKS_IN_FLIGHT are sent and
   * not recorded. Nothing while paused, ended or not started. The chunks are marked sent before the
   * send (no other call can pick them meanwhile) and unmarked if it fails. Answers how many it sent.
   */
  async #dispatch(): Promise<number> {
    const state = this.#requireState();
    if (state.dispatching === 0 || state.paused === 1 || hasEnded(state.status)) return 0;
    const sql = this.ctx.storage.sql;
    const inFlight = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM chunks WHERE sent_at IS NOT NULL AND done_at IS NULL').one().n;
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
    sql.exec('UPDATE chunks SET sent_at = ? WHERE chunk BETWEEN ? AND ? AND sent_at IS NULL AND done_at IS NULL', now, first, last);
    try {
      await sendChunkMessages(this.#lifecycle, chunkMessages(state.batch_id, next));
    } catch (err) {
      sql.exec('UPDATE chunks SET sent_at = NULL WHERE chunk BETWEEN ? AND ? AND sent_at = ? AND done_at IS NULL', first, last, now);
      throw err;
    }
    return next.length;
  }

  async #transition(status: BatchStatus, reason: string | null): Promise<BatchSnapshot> {
    const current = this.#requireState();
    // An ended batch stays ended, whatever a late call asks for.
    if (hasEnded(current.status)) return toSnapshot(current);
    const now = isoTimestamp(new Date());
    this.ctx.storage.sql.exec(
      'UPDATE state SET status = ?, updated_at = ?, failure_reason = COALESCE(failure_reason, ?)',
      status,
      now,
      reason,
    );
    const state = this.#requireState();
    this.#feed.publish(toSnapshot(state));
    if (hasEnded(status)) {
      await this.ctx.storage.deleteAlarm();
      await this.#afterEnd(state);
    } else {
      await batchTransitioned(this.#lifecycle, toSnapshot(state));
    }
    return toSnapshot(state);
  }

  /** Tells the lifecycle; for an ended batch that is safe to repeat (D1 mirror, upload deleted, batch event). */
  async #afterEnd(state: StateRow): Promise<void> {
    await batchTransitioned(this.#lifecycle, toSnapshot(state));
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

  #state(): StateRow | null {
    return this.ctx.storage.sql.exec<StateRow>('SELECT * FROM state').toArray()[0] ?? null;
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
