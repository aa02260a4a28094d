/**
 * Batch results: the streamed download of a completed batch, and their deletion after retention.
 */
import type { Env } from '../../env';
import { toCsvLine } from '../../lib/batch-csv';
import { concatenatedStream } from '../../lib/concatenated-stream';
import { isoTimestamp, type Clock } from '../../lib/time';
import { RESULT_COLUMNS } from '../../schemas/transaction-columns';
import { deleteResultParts, getResultPart } from '../../storage/batch-files';
import { findMerchantBatch, listBatchesEndedBefore, markResultsDeleted, type BatchRow } from '../../storage/batches';
import { batchLimits } from './limits';
import { hasEnded, type BatchStatus } from './state';

export type DownloadOutcome =
  | { ok: true; fileName: string; body: ReadableStream<Uint8Array> }
  | { ok: false; reason: 'not_found' | 'not_completed' | 'expired' };

/**
 * The result CSV of a completed batch: the header row, then each chunk's result part in chunk
 * order, pulled from R2 one part at a time as the client reads (never assembled in memory).
 */
export async function openDownload(env: Env, merchantId: string, id: string, clock: Clock): Promise<DownloadOutcome> {
  const row = await findMerchantBatch(env.DB, merchantId, id);
  if (!row) return { ok: false, reason: 'not_found' };
  const live = await batchState(env, row);
  if (live?.status !== 'completed') return { ok: false, reason: row.results_deleted_at !== null ? 'expired' : 'not_completed' };
  if (resultsExpired(env, row, live.updatedAt, clock)) return { ok: false, reason: 'expired' };
  return { ok: true, fileName: row.file_name, body: resultStream(env.FILES, id, row.num_chunks) };
}

/**
 * A batch's status and last change. Once it has ended, the D1 mirror is final (an ended state never
 * changes, and the object writes the mirror after its own transition) and the object is not woken:
 * it is deleted with the results. While it runs, the object's live state.
 */
export async function batchState(env: Env, row: BatchRow): Promise<{ status: BatchStatus; updatedAt: string } | null> {
  if (hasEnded(row.status)) return { status: row.status, updatedAt: row.updated_at };
  const live = await env.BATCH_PROGRESS.getByName(row.id).snapshot();
  return live ? { status: live.status, updatedAt: live.updatedAt } : null;
}

/** Whether an ended batch's results are past retention (or already swept): the cutoff is exact. */
export function resultsExpired(env: Env, row: BatchRow, updatedAt: string, clock: Clock): boolean {
  const retentionMs = batchLimits(env).retentionDays * 86_400_000;
  const endedAt = Date.parse(row.ended_at ?? updatedAt);
  return row.results_deleted_at !== null || clock().getTime() - endedAt > retentionMs;
}

function resultStream(bucket: R2Bucket, batchId: string, numChunks: number): ReadableStream<Uint8Array> {
  let next = -1; // -1: the header; then chunk indexes
  return concatenatedStream(async () => {
    if (next === -1) {
      next = 0;
      return resultHeader();
    }
    return next < numChunks ? resultPart(bucket, batchId, next++) : null;
  });
}

/** The result file's header line, as bytes. */
export function resultHeader(): Uint8Array {
  return new TextEncoder().encode(toCsvLine(RESULT_COLUMNS));
}

/** A chunk's result part as written by its consumer; a missing part is an error (the download breaks off). */
export async function resultPart(bucket: R2Bucket, batchId: string, chunk: number): Promise<ReadableStream<Uint8Array>> {
  const part = await getResultPart(bucket, batchId, chunk);
  if (!part) throw new Error(`result part ${chunk} of batch ${batchId} is missing`);
  return part.body;
}

/** Batches swept per page at most. */
const SWEEP_PAGE = 50;

/**
 * Retention, as a sweep: deletes the result parts and the Durable Object of batches that ended
 * more than BATCH_RETENTION_DAYS ago and still have them (completed ones stop being downloadable at
 * the deadline itself: "batch results expired"; failed ones may have left partial parts). Their D1
 * records stay, so status still answers. Returns how many batches it swept.
 *
 * Each batch's object does this itself at its deadline (durable-objects/batch-progress.ts), so the
 * sweep finds only the batches whose alarm did not run (ended before objects had one, or an alarm
 * that failed all its retries), and those whose alarm is a few minutes from running (both deleting
 * is harmless).
 *
 * A run makes at most about `maxStatements` D1 statements, R2 calls and object calls (each counts
 * against the invocation's limits): a page costs its listing, an UPDATE, and three calls per batch
 * (its result parts listed and deleted, its object emptied). Whatever is left waits for the next
 * run (`finished: false`); the listing finds it again, as only swept batches are marked.
 */
export async function deleteExpiredResults(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ swept: number; finished: boolean }> {
  const now = clock();
  const cutoff = isoTimestamp(new Date(now.getTime() - batchLimits(env).retentionDays * 86_400_000));
  let swept = 0;
  let statements = 0;
  for (;;) {
    const pageSize = Math.min(SWEEP_PAGE, Math.floor((maxStatements - statements - 2) / 3));
    if (pageSize < 1) return { swept, finished: false };
    const ids = await listBatchesEndedBefore(env.DB, cutoff, pageSize);
    statements++;
    if (ids.length === 0) return { swept, finished: true };
    for (const id of ids) {
      statements += await deleteResultParts(env.FILES, id);
      // The batch's object (state, chunk map) goes with its results; D1 keeps the record.
      await env.BATCH_PROGRESS.getByName(id).destroy();
      statements++;
    }
    await markResultsDeleted(env.DB, ids, isoTimestamp(now));
    statements++;
    swept += ids.length;
    if (ids.length < pageSize) return { swept, finished: true };
  }
}
