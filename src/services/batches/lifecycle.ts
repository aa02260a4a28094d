/**
 * The one place a batch changes state in the world outside its Durable Object. The object keeps
 * the state machine and the counters; everything a transition does elsewhere happens here:
 *
 *   createBatch        D1 row (holding its file's duplicate window), then the object (status `pending`)
 *   startBatch         the object starts sending its chunk messages (a window at a time) → `queued`
 *   sendChunkMessages  the only sender to BATCH_QUEUE, called by the object: its window as it
 *                      moves, and the stall watchdog's re-send
 *   batchTransitioned  called by the object after each transition it commits: the D1 mirror and,
 *                      once the batch has ended and the chunks still running then have landed
 *                      (`settled`), the uploaded file deleted (it holds card numbers) and the batch
 *                      event published to the merchant's webhook endpoints
 *   failBatch          the dead-letter consumer and a chunk whose file vanished end the batch
 *   batchExpired       the object's retention alarm: the result parts deleted, the D1 row marked
 *
 * The object calls `batchTransitioned` again for an ended batch whenever a late call reaches it,
 * so every effect here must be idempotent: a failure after the object's commit heals on the next call.
 */
import type { Env } from '../../env';
import type { ChunkLocation, CsvChunk } from '../../lib/batch-csv';
import type { ChunkMessage } from '../../schemas/queue';
import { deleteResultParts, deleteUpload } from '../../storage/batch-files';
import {
  deleteUnstartedBatch,
  insertBatchHoldingFingerprint,
  markResultsDeleted,
  updateBatchState,
  type BatchRow,
  type FingerprintClaim,
} from '../../storage/batches';
import { eventDeps, publishBatchEnded, type EventDeps } from '../webhooks/events';
import { hasEnded, type BatchSnapshot } from './state';

/** Queues accept at most 100 messages per sendBatch call. */
const SEND_BATCH_MAX = 100;

/** The bindings a batch's transitions touch. */
export interface LifecycleDeps {
  db: D1Database;
  files: R2Bucket;
  queue: Queue<ChunkMessage>;
  progress: Env['BATCH_PROGRESS'];
  events: EventDeps;
}

export function lifecycleDeps(env: Env): LifecycleDeps {
  return { db: env.DB, files: env.FILES, queue: env.BATCH_QUEUE, progress: env.BATCH_PROGRESS, events: eventDeps(env) };
}

export function chunkMessages(batchId: string, chunks: readonly ChunkLocation[]): ChunkMessage[] {
  return chunks.map((chunk) => ({
    batchId,
    chunk: chunk.index,
    offset: chunk.offset,
    length: chunk.length,
    firstLine: chunk.firstLine,
  }));
}

/**
 * The batch exists: its D1 row (ownership, listing) and its object (state, chunk map). The row is
 * written only if it can hold its file's duplicate window (storage/batches.ts,
 * insertBatchHoldingFingerprint): false when another upload of the same bytes holds it, and nothing
 * was made. If the object cannot be made, the row and its claim are taken back (the upload answers
 * 500 and may be sent again) and the error is thrown.
 */
export async function createBatch(deps: LifecycleDeps, row: BatchRow, chunks: CsvChunk[], claim: FingerprintClaim): Promise<boolean> {
  if (!(await insertBatchHoldingFingerprint(deps.db, row, claim))) return false;
  try {
    await deps.progress.getByName(row.id).init({ batchId: row.id, numLines: row.num_lines, chunks, createdAt: row.created_at });
  } catch (err) {
    try {
      await deleteUnstartedBatch(deps.db, row);
    } catch {
      // The row stays pending without an object (it never runs); the init's error is the one to report.
    }
    throw err;
  }
  return true;
}

export async function sendChunkMessages(deps: LifecycleDeps, messages: readonly ChunkMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += SEND_BATCH_MAX) {
    await deps.queue.sendBatch(messages.slice(i, i + SEND_BATCH_MAX).map((body) => ({ body, contentType: 'json' as const })));
  }
}

/** The batch's object sends its first window of chunk messages and moves to `queued`. */
export async function startBatch(deps: LifecycleDeps, batchId: string): Promise<void> {
  await deps.progress.getByName(batchId).start();
}

/**
 * A batch that ended while chunks were running (a cancel, a chunk dead-lettered beside others) is
 * not `settled` until they have landed: its uploaded file stays for them (they read their rows
 * from it), and its event waits so that it carries the final `processed_lines`.
 */
export async function batchTransitioned(deps: LifecycleDeps, batch: BatchSnapshot, settled = true): Promise<void> {
  const ended = hasEnded(batch.status);
  if (ended && settled) await deleteUpload(deps.files, batch.batchId);
  await updateBatchState(deps.db, batch.batchId, {
    status: batch.status,
    processedLines: batch.processedLines,
    updatedAt: batch.updatedAt,
    endedAt: ended ? batch.updatedAt : null,
    failureReason: batch.failureReason,
  });
  // Once per transition however often this runs: the event is recorded under (batch, type).
  if (ended && settled) await publishBatchEnded(deps.events, batch);
}

/**
 * Ends the batch as failed (the first reason wins); null when no such batch was ever created.
 * `chunk`: the chunk that failed (the dead-letter queue gave up on it): it will not land, so the
 * batch does not wait for it.
 */
export function failBatch(deps: LifecycleDeps, batchId: string, reason: string, chunk?: number): Promise<BatchSnapshot | null> {
  return deps.progress.getByName(batchId).fail(reason, chunk);
}

/**
 * A batch past its retention: its result parts deleted and its D1 row marked (status still
 * answers; the download says expired). Safe to repeat. Subrequests: a listing and a delete per
 * 1,000 parts (a batch has at most 1,000) and one D1 statement.
 */
export async function batchExpired(deps: LifecycleDeps, batchId: string, at: string): Promise<void> {
  await deleteResultParts(deps.files, batchId);
  await markResultsDeleted(deps.db, [batchId], at);
}
