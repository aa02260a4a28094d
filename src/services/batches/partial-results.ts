/**
 * The partial download of a failed batch (`GET /api/filebatch/{id}/download?partial=true`): the
 * result CSV with exactly one line per data row, in file order, so that every row charged before
 * the batch failed is reported.
 *
 * - A chunk that finished has its result part: its lines are streamed as they are.
 * - A chunk that did not finish has none. Its rows are looked up in the batch's ledger shard by
 *   their keys `{batch}:{line}` (a row charged before the failure has its record there), and every
 *   other row gets a line with `response` `error` saying it was not processed. The uploaded file is
 *   not needed: it was deleted when the batch failed.
 *
 * A batch the merchant cancelled (or left paused too long) says so: its rows that never ran read
 * "not processed: the batch was cancelled; nothing was charged".
 *
 * A row without a record was never charged, because a row is claimed (recorded) before it is
 * charged; claims the failed chunk left open are settled with the processor first. While some
 * are too fresh to settle (their holder may still be running), or chunks that were running when the
 * batch failed have not landed yet (a cancel: the batch's object counts them as they land), the
 * download answers "retry later": the download and `processed_lines` then agree.
 *
 * Subrequests (one HTTP invocation): the batch row, the object, the claims' settlement (one call to
 * the shard, one to the processor per day), the parts listing, one R2 read per finished chunk and
 * one ledger read per chunk that ran without finishing (at most the window, BATCH_CHUNKS_IN_FLIGHT)
 * and, for one with capture, void or refund rows, its manifest and one read per ledger shard its
 * rows name (a D1 read more per row naming a batch row's transaction, at most 500 a chunk);
 * a chunk never sent is written without any. For the largest file (1,000 chunks) about 1,010, under
 * Workers Paid's 10,000 per invocation (half: 5,000; docs/limits.md, "Platform limits").
 */
import type { Caller, Env } from '../../env';
import { concatenatedStream } from '../../lib/concatenated-stream';
import { systemClock, type Clock } from '../../lib/time';
import { listResultParts } from '../../storage/batch-files';
import { findMerchantBatch, type BatchRow } from '../../storage/batches';
import { settleBatchClaims } from '../transactions/claims';
import { Ledger } from '../transactions/ledger';
import { notProcessedRecord } from '../transactions/records';
import { resultLine, rowIdempotencyKey } from './chunks';
import { currentTransactions } from '../search/operation-changes';
import { getOperationManifest, OPERATION_UNFINISHED_TEXT } from './operation-manifest';
import { batchState, openDownload, resultHeader, resultPart, resultsExpired, type DownloadOutcome } from './results';
import { wasCancelled, type ChunkLines } from './state';

/** How soon to ask again while the chunks running at a cancel land (they take seconds). */
const LANDING_RETRY_SECONDS = 5;

/** What a row of a cancelled batch that never ran says (a batch that failed says it failed). */
export const CANCELLED_NOT_PROCESSED_TEXT = 'not processed: the batch was cancelled; nothing was charged';

export type PartialDownloadOutcome =
  /** A completed batch: its whole results, as without `partial`. */
  | DownloadOutcome
  | { ok: true; fileName: string; body: ReadableStream<Uint8Array>; partial: true }
  /** The batch is still running: there is nothing partial about it yet. */
  | { ok: false; reason: 'not_ended' }
  /** Some rows' claims are still fresh: their outcome is not known yet. */
  | { ok: false; reason: 'settling'; retryAfterSeconds: number };

/** A failed batch's results as far as they go; a completed batch's whole results. */
export async function openPartialDownload(env: Env, caller: Caller, id: string, clock: Clock): Promise<PartialDownloadOutcome> {
  const row = await findMerchantBatch(env.DB, caller.merchantId, id);
  if (!row) return { ok: false, reason: 'not_found' };
  const progress = env.BATCH_PROGRESS.getByName(id);
  const live = await batchState(env, row);
  if (live?.status === 'completed') return openDownload(env, caller.merchantId, id, clock);
  if (live?.status !== 'failed') return { ok: false, reason: row.results_deleted_at !== null ? 'expired' : 'not_ended' };
  if (resultsExpired(env, row, live.updatedAt, clock)) return { ok: false, reason: 'expired' };

  const view = await progress.partialView();
  if (!view.settled) return { ok: false, reason: 'settling', retryAfterSeconds: LANDING_RETRY_SECONDS };
  const claims = await settleBatchClaims(env, caller, { id, createdAt: row.created_at }, clock);
  if (claims.open > 0) return { ok: false, reason: 'settling', retryAfterSeconds: claims.retryAfterSeconds };
  const parts = await listResultParts(env.FILES, id);
  return { ok: true, fileName: row.file_name, body: partialStream(env, caller, row, view.chunks, parts), partial: true };
}

function partialStream(
  env: Env,
  caller: Caller,
  batch: BatchRow,
  chunks: readonly ChunkLines[],
  parts: ReadonlySet<number>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = -1; // -1: the header; then indexes into `chunks`
  return concatenatedStream(async () => {
    if (next === -1) {
      next = 0;
      return resultHeader();
    }
    const chunk = chunks[next++];
    if (!chunk) return null;
    if (parts.has(chunk.chunk)) return resultPart(env.FILES, batch.id, chunk.chunk);
    return encoder.encode(await unfinishedChunkLines(env, caller, batch, chunk));
  });
}

/** The lines of a chunk that did not finish: each row's record if it has one, else "not processed". */
async function unfinishedChunkLines(env: Env, caller: Caller, batch: BatchRow, chunk: ChunkLines): Promise<string> {
  const keys = Array.from({ length: chunk.rows }, (_, i) => rowIdempotencyKey(batch.id, chunk.firstLine + i));
  const context = { source: 'batch' as const, ipAddress: null, batchId: batch.id, batchCreatedAt: batch.created_at, chunkFirstLine: chunk.firstLine };
  // A chunk never sent charged nothing: no ledger read for it.
  const found = chunk.sent ? await new Ledger(env, caller.merchantId, context, new Date()).find(keys) : new Map<string, never>();
  const records = new Map([...found].map(([key, stored]) => [key, stored.record]));
  // Capture, void and refund rows are recorded in the shard of the transaction they act on: the
  // chunk's manifest names it, and the line shows it as it is now.
  const operations = chunk.sent ? await getOperationManifest(env.FILES, batch.id, chunk.chunk) : [];
  if (operations.length > 0) {
    const current = await currentTransactions(env, caller, operations.map((entry) => entry.transactionId), systemClock);
    for (const entry of operations) {
      const key = rowIdempotencyKey(batch.id, entry.line);
      const record = current.get(entry.transactionId)?.record;
      if (!records.has(key) && record) records.set(key, { ...record, idempotency_key: key, processor_response_text: OPERATION_UNFINISHED_TEXT });
    }
  }
  const cancelled = wasCancelled(batch.failure_reason);
  let lines = '';
  for (const key of keys) {
    const record = records.get(key) ?? notProcessed(key);
    lines += resultLine({ ok: true, record, replayed: true }, key);
  }
  return lines;

  function notProcessed(key: string) {
    const record = notProcessedRecord({ idempotencyKey: key, ipAddress: batch.ip_address, userName: caller.merchantName });
    return cancelled ? { ...record, processor_response_text: CANCELLED_NOT_PROCESSED_TEXT } : record;
  }
}
