/**
 * The SQLite tables of a batch's object (durable-objects/batch-progress.ts). The object creates and
 * versions them itself (`migrateProgressTables`, in its constructor).
 *
 *   state   one row: the batch's status, live counters, dispatch and pause flags, its end
 *   chunks  the chunk map: where each chunk's rows are in the file, and whether its message was
 *           sent, recorded (`done_at`), given up on, or ever sent
 *
 * Both are bounded by the file: one row, and at most 1,000 chunks (a 500,000-row file). The object
 * empties itself at its batch's retention deadline (`deleteAll`), which takes these tables too.
 */
import type { ChunkLocation, CsvChunk } from '../lib/batch-csv';
import type { BatchStatus } from './batches';

/** The batch's `state` row, as the object reads it. */
export interface ProgressState {
  batchId: string;
  status: BatchStatus;
  numLines: number;
  processedLines: number;
  numChunks: number;
  chunksDone: number;
  /** Set once the stall watchdog sent the chunks not recorded again (it does so once). */
  requeued: boolean;
  /** Set once `start` (or the watchdog) began sending chunk messages. */
  dispatching: boolean;
  paused: boolean;
  pausedAt: string | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  /** When the batch completed or failed. */
  endedAt: string | null;
  /** False while an ended batch waits for chunks that were running at its end; true otherwise. */
  settled: boolean;
}

/** Where a chunk's rows are in the file, by line (a partial download reports the rows of chunks without results). */
export interface ChunkLines {
  chunk: number;
  firstLine: number;
  rows: number;
  /** Its bytes in the uploaded file, when asked for: a row naming a line of another chunk reads that line there. */
  offset?: number;
  length?: number;
  /** Whether its message was ever sent: a chunk never sent charged nothing. */
  sent: boolean;
}

/** A new batch: its counts and chunk map. */
export interface BatchInit {
  batchId: string;
  numLines: number;
  chunks: CsvChunk[];
  createdAt: string;
}

type StateRow = {
  batch_id: string;
  status: BatchStatus;
  num_lines: number;
  processed_lines: number;
  num_chunks: number;
  chunks_done: number;
  requeued: number;
  dispatching: number;
  paused: number;
  paused_at: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
  settled: number;
};

type LocationRow = { chunk: number; byte_offset: number; byte_length: number; first_line: number };

/** A chunk sent, not recorded, and not given up on: its rows may still be charged and land. */
const IN_FLIGHT = 'sent_at IS NOT NULL AND done_at IS NULL AND given_up = 0';

function toProgressState(row: StateRow): ProgressState {
  return {
    batchId: row.batch_id,
    status: row.status,
    numLines: row.num_lines,
    processedLines: row.processed_lines,
    numChunks: row.num_chunks,
    chunksDone: row.chunks_done,
    requeued: row.requeued === 1,
    dispatching: row.dispatching === 1,
    paused: row.paused === 1,
    pausedAt: row.paused_at,
    failureReason: row.failure_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    endedAt: row.ended_at,
    settled: row.settled === 1,
  };
}

function toLocation(row: LocationRow): ChunkLocation {
  return { index: row.chunk, offset: row.byte_offset, length: row.byte_length, firstLine: row.first_line };
}

// ---- State ------------------------------------------------------------------------------------

/** The state row, or null when the batch was never initialised. */
export function readState(sql: SqlStorage): ProgressState | null {
  const row = sql.exec<StateRow>('SELECT * FROM state').toArray()[0];
  return row ? toProgressState(row) : null;
}

/** Writes the state row in `pending` and the chunk map (the caller runs it in one transaction). */
export function insertBatch(sql: SqlStorage, batch: BatchInit): void {
  sql.exec(
    `INSERT INTO state (singleton, batch_id, status, num_lines, num_chunks, created_at, updated_at)
     VALUES (1, ?, 'pending', ?, ?, ?, ?)`,
    batch.batchId,
    batch.numLines,
    batch.chunks.length,
    batch.createdAt,
    batch.createdAt,
  );
  for (const chunk of batch.chunks) {
    sql.exec(
      'INSERT INTO chunks (chunk, byte_offset, byte_length, first_line, rows) VALUES (?, ?, ?, ?, ?)',
      chunk.index,
      chunk.offset,
      chunk.length,
      chunk.firstLine,
      chunk.rows,
    );
  }
}

export function markDispatching(sql: SqlStorage): void {
  sql.exec('UPDATE state SET dispatching = 1');
}

/** The watchdog's one re-send: marked before it sends, so a second stall fails the batch. */
export function markRequeued(sql: SqlStorage): void {
  sql.exec('UPDATE state SET requeued = 1, dispatching = 1');
}

export function markPaused(sql: SqlStorage, at: string): void {
  sql.exec('UPDATE state SET paused = 1, paused_at = ?, updated_at = ?', at, at);
}

export function markResumed(sql: SqlStorage, at: string): void {
  sql.exec('UPDATE state SET paused = 0, paused_at = NULL, updated_at = ?', at);
}

/** Counts a recorded chunk's rows in a running batch. */
export function countChunk(sql: SqlStorage, rows: number, at: string): void {
  sql.exec('UPDATE state SET processed_lines = processed_lines + ?, chunks_done = chunks_done + 1, updated_at = ?', rows, at);
}

/** Counts the rows of a chunk that landed after the batch ended. */
export function countLateChunk(sql: SqlStorage, rows: number): void {
  // updated_at stays the end's: the batch's state did not change, only its count.
  sql.exec('UPDATE state SET processed_lines = processed_lines + ?, chunks_done = chunks_done + 1', rows);
}

/**
 * A change of status; `endedAt` is set when it ends the batch, `settled` false while the ended batch
 * waits for chunks in flight. The first failure reason written stays.
 */
export function writeTransition(
  sql: SqlStorage,
  change: { status: BatchStatus; at: string; reason: string | null; endedAt: string | null; settled: boolean },
): void {
  sql.exec(
    `UPDATE state SET status = ?, updated_at = ?, failure_reason = COALESCE(failure_reason, ?),
            ended_at = ?, settled = ?`,
    change.status,
    change.at,
    change.reason,
    change.endedAt,
    change.settled ? 1 : 0,
  );
}

/** The ended batch stops waiting: the chunks still in flight are given up on, and it is settled. */
export function markSettled(sql: SqlStorage): void {
  sql.exec(`UPDATE chunks SET given_up = 1 WHERE ${IN_FLIGHT}`);
  sql.exec('UPDATE state SET settled = 1');
}

// ---- Chunks -----------------------------------------------------------------------------------

/** Marks a chunk of a running batch recorded; its rows, or null when it was recorded before. */
export function markChunkDone(sql: SqlStorage, chunk: number, at: string): number | null {
  return sql.exec<{ rows: number }>('UPDATE chunks SET done_at = ? WHERE chunk = ? AND done_at IS NULL RETURNING rows', at, chunk).toArray()[0]?.rows ?? null;
}

/**
 * Marks a chunk recorded after the batch ended; its rows, or null when it was recorded before or
 * never sent (it charged nothing).
 */
export function markLateChunkDone(sql: SqlStorage, chunk: number, at: string): number | null {
  return (
    sql
      .exec<{ rows: number }>('UPDATE chunks SET done_at = ? WHERE chunk = ? AND done_at IS NULL AND (ever_sent = 1 OR sent_at IS NOT NULL) RETURNING rows', at, chunk)
      .toArray()[0]?.rows ?? null
  );
}

/** A chunk the dead-letter queue gave up on: not waited for, and (it was delivered) counted as sent. */
export function markChunkGivenUp(sql: SqlStorage, chunk: number): void {
  sql.exec('UPDATE chunks SET given_up = 1, ever_sent = 1 WHERE chunk = ? AND done_at IS NULL', chunk);
}

export function countInFlight(sql: SqlStorage): number {
  return sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM chunks WHERE ${IN_FLIGHT}`).one().n;
}

/** The next chunks never sent (or unmarked after a failed send), in order, at most `limit`. */
export function nextUnsentChunks(sql: SqlStorage, limit: number): ChunkLocation[] {
  return sql
    .exec<LocationRow>('SELECT chunk, byte_offset, byte_length, first_line FROM chunks WHERE sent_at IS NULL AND done_at IS NULL ORDER BY chunk LIMIT ?', limit)
    .toArray()
    .map(toLocation);
}

/** The chunks sent and not recorded (the watchdog sends them again: their messages may be lost). */
export function sentUnrecordedChunks(sql: SqlStorage): ChunkLocation[] {
  return sql
    .exec<LocationRow>('SELECT chunk, byte_offset, byte_length, first_line FROM chunks WHERE sent_at IS NOT NULL AND done_at IS NULL ORDER BY chunk')
    .toArray()
    .map(toLocation);
}

/** Marks the chunks `first`..`last` not sent yet as sent at `at` (and ever sent). */
export function markSent(sql: SqlStorage, first: number, last: number, at: string): void {
  sql.exec('UPDATE chunks SET sent_at = ?, ever_sent = 1 WHERE chunk BETWEEN ? AND ? AND sent_at IS NULL AND done_at IS NULL', at, first, last);
}

/** Undoes `markSent(first, last, at)` for the chunks still unrecorded; `ever_sent` stays. */
export function unmarkSent(sql: SqlStorage, first: number, last: number, at: string): void {
  sql.exec('UPDATE chunks SET sent_at = NULL WHERE chunk BETWEEN ? AND ? AND sent_at = ? AND done_at IS NULL', first, last, at);
}

/** The chunk map by lines, in chunk order, each saying whether it was ever sent (and with `bytes`, where it is in the file). */
export function listChunkLines(sql: SqlStorage, bytes = false): ChunkLines[] {
  return sql
    .exec<{ chunk: number; first_line: number; rows: number; byte_offset: number; byte_length: number; sent: number }>(
      'SELECT chunk, first_line, rows, byte_offset, byte_length, (ever_sent = 1 OR sent_at IS NOT NULL OR done_at IS NOT NULL) AS sent FROM chunks ORDER BY chunk',
    )
    .toArray()
    .map((row) => ({ chunk: row.chunk, firstLine: row.first_line, rows: row.rows, ...(bytes ? { offset: row.byte_offset, length: row.byte_length } : {}), sent: row.sent === 1 }));
}

// ---- Schema -----------------------------------------------------------------------------------

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

/** Creates the tables, or applies the steps not applied yet, in one transaction. */
export function migrateProgressTables(storage: DurableObjectStorage): void {
  const sql = storage.sql;
  sql.exec('CREATE TABLE IF NOT EXISTS schema_version (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), version INTEGER NOT NULL)');
  const applied = sql.exec<{ version: number }>('SELECT version FROM schema_version').toArray()[0]?.version ?? 0;
  if (applied >= SCHEMA_STEPS.length) return;
  storage.transactionSync(() => {
    for (const step of SCHEMA_STEPS.slice(applied)) step(sql);
    sql.exec('INSERT INTO schema_version (singleton, version) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET version = excluded.version', SCHEMA_STEPS.length);
  });
}
