/**
 * One object per batch (`env.BATCH_PROGRESS.getByName(batchId)`): the batch's state machine and
 * live counters in SQLite, the set of chunks done, and the stall watchdog (an alarm).
 *
 *   pending ──markQueued──> queued ──first recordChunk──> processing ──last chunk──> completed
 *      └────────────── fail (dead letter, stall, missing file) ─────────────────> failed
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
import {
  hasEnded,
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
    ctx.storage.sql.exec(`
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
    `);
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

  /** pending → queued, once every chunk message has been sent. No effect in any other state. */
  async markQueued(): Promise<BatchSnapshot> {
    const state = this.#requireState();
    if (state.status !== 'pending') return toSnapshot(state);
    return this.#transition('queued', null);
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
    if (!marked) return { counted: false, batch: toSnapshot(state) };
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
    const batch = updated.status !== 'processing' ? this.#transition('processing', null) : Promise.resolve(toSnapshot(updated));
    await this.#armWatchdog();
    return { counted: true, batch: await batch };
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
   * made none for BATCH_STALL_MINUTES. The first time, the chunks not yet done are sent again (their
   * messages may have been lost, or never sent); the second time, the batch fails.
   */
  override async alarm(): Promise<void> {
    const state = this.#state();
    if (!state || hasEnded(state.status)) return;
    if (state.requeued === 0) {
      this.ctx.storage.sql.exec('UPDATE state SET requeued = 1');
      const missing = this.ctx.storage.sql
        .exec<{ chunk: number; byte_offset: number; byte_length: number; first_line: number }>(
          'SELECT chunk, byte_offset, byte_length, first_line FROM chunks WHERE done_at IS NULL ORDER BY chunk',
        )
        .toArray()
        .map((row) => ({ index: row.chunk, offset: row.byte_offset, length: row.byte_length, firstLine: row.first_line }));
      const messages = chunkMessages(state.batch_id, missing);
      await sendChunkMessages(this.#lifecycle, messages);
      console.warn(JSON.stringify({ level: 'warn', event: 'batch_stalled_requeued', batch_id: state.batch_id, chunks: messages.length }));
      if (state.status === 'pending') await this.#transition('queued', null);
      await this.#armWatchdog();
      return;
    }
    const minutes = this.#stallMinutes();
    await this.#transition('failed', `no progress for ${minutes} minutes, even after re-enqueueing the missing chunks`);
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
    failureReason: state.failure_reason,
    createdAt: state.created_at,
    updatedAt: state.updated_at,
  };
}
