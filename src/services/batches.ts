/**
 * Batch files: upload (streamed into R2 while its structure is checked), queueing, status,
 * listing, download and retention. DESIGN.md "Batch pipeline"; the chunk work is in batch-chunks.ts.
 */
import type { BatchSnapshot } from '../durable-objects/batch-progress';
import type { Caller, Env } from '../env';
import { maskCardNumbersIn } from '../lib/card-number';
import { randomId } from '../lib/crypto';
import { CsvScanner, problemMessage, toCsvLine } from '../lib/csv';
import { isoTimestamp, type Clock } from '../lib/time';
import type { ChunkMessage } from '../schemas/queue';
import { INPUT_COLUMNS, RESULT_COLUMNS } from '../schemas/transaction';
import { deleteResultParts, getResultPart, R2UploadWriter, uploadKey } from '../storage/batch-files';
import {
  findMerchantBatch,
  insertBatchStatement,
  listBatchesEndedBefore,
  listMerchantBatches,
  markResultsDeleted,
  type BatchRow,
  type BatchStatus,
} from '../storage/batches';

/** Rows longer than this are a structural error: no valid row comes near it (49 short columns). */
export const MAX_ROW_BYTES = 64 * 1024;

const KNOWN_COLUMNS: ReadonlySet<string> = new Set(INPUT_COLUMNS);

export interface BatchLimits {
  chunkRows: number;
  maxBytes: number;
  maxRows: number;
  retentionDays: number;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const number = Number(value);
  return Number.isInteger(number) && number > 0 ? number : fallback;
}

export function batchLimits(env: Env): BatchLimits {
  return {
    chunkRows: positiveInt(env.BATCH_CHUNK_ROWS, 500),
    maxBytes: positiveInt(env.BATCH_MAX_BYTES, 100 * 1024 * 1024),
    maxRows: positiveInt(env.BATCH_MAX_ROWS, 500_000),
    retentionDays: positiveInt(env.BATCH_RETENTION_DAYS, 10),
  };
}

/** SPEC.md's header rules: known, non-duplicate names; transaction_type; amount or base_amount. */
export function checkHeader(columns: string[]): string | null {
  const seen = new Set<string>();
  for (const [index, name] of columns.entries()) {
    if (name === '') return `column ${index + 1} has an empty name`;
    // The name is quoted back in the 400: a card number pasted into the header is masked.
    if (!KNOWN_COLUMNS.has(name)) return `unknown column "${maskCardNumbersIn(name)}"`;
    if (seen.has(name)) return `duplicate column "${name}"`;
    seen.add(name);
  }
  if (!seen.has('transaction_type')) return 'the header has no transaction_type column';
  if (!seen.has('amount') && !seen.has('base_amount')) return 'the header needs an amount or base_amount column';
  return null;
}

/** The batch record as the upload answers it (SPEC.md: inside `data`). */
export interface UploadedBatch {
  id: string;
  file_name: string;
  status: 'pending';
  num_lines: number;
  created_at: string;
  updated_at: string;
}

/** The batch record as the status operation answers it (SPEC.md), plus the reason of a failure. */
export interface BatchRecord {
  id: string;
  user_id: string;
  file_name: string;
  status: BatchStatus;
  num_lines: number;
  processed_lines: number;
  created_at: string;
  updated_at: string;
  failure_reason?: string;
}

export type UploadOutcome =
  | { ok: true; batch: UploadedBatch; messages: ChunkMessage[] }
  | { ok: false; reason: 'invalid_file' | 'too_large'; msg: string };

export interface UploadSource {
  fileName: string;
  bytes: AsyncIterable<Uint8Array>;
}

/**
 * Streams the file into R2 while checking its structure. On any problem the R2 upload is aborted
 * and nothing is kept. On success the batch exists (D1 row + Durable Object, status `pending`);
 * the caller then sends `messages` with `enqueueBatch`, after answering the client.
 */
export async function uploadBatch(
  env: Env,
  caller: Caller,
  source: UploadSource,
  ipAddress: string | null,
  clock: Clock,
): Promise<UploadOutcome> {
  const limits = batchLimits(env);
  const id = randomId(20, 'bat_');
  const scanner = new CsvScanner({ chunkRows: limits.chunkRows, maxRowBytes: MAX_ROW_BYTES, checkHeader });
  const writer = new R2UploadWriter(env.FILES, uploadKey(id));
  let size = 0;
  let failure: UploadOutcome | null = null;
  try {
    for await (const bytes of source.bytes) {
      size += bytes.length;
      if (size > limits.maxBytes) {
        failure = { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxBytes} bytes` };
        break;
      }
      const problem = scanner.push(bytes);
      if (problem) {
        failure = { ok: false, reason: 'invalid_file', msg: problemMessage(problem) };
        break;
      }
      if (scanner.rows > limits.maxRows) {
        failure = { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
        break;
      }
      await writer.write(bytes);
    }
  } catch (err) {
    await writer.abort();
    throw err;
  }
  let scan = failure ? null : scanner.finish();
  // The last row may end without "\n" and only be counted by finish().
  if (scan?.ok && scan.rows > limits.maxRows) {
    failure = { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
    scan = null;
  }
  if (failure || !scan || !scan.ok) {
    await writer.abort();
    return failure ?? { ok: false, reason: 'invalid_file', msg: scan && !scan.ok ? problemMessage(scan) : 'invalid file' };
  }
  await writer.finish();

  const now = isoTimestamp(clock());
  const row: BatchRow = {
    id,
    merchant_id: caller.merchantId,
    key_id: caller.keyId,
    file_name: source.fileName,
    status: 'pending',
    num_lines: scan.rows,
    num_chunks: scan.chunks.length,
    processed_lines: 0,
    columns: scan.columns,
    ip_address: ipAddress,
    failure_reason: null,
    created_at: now,
    updated_at: now,
    ended_at: null,
    results_deleted_at: null,
  };
  await insertBatchStatement(env.DB, row).run();
  await env.BATCH_PROGRESS.getByName(id).init({ batchId: id, numLines: scan.rows, chunks: scan.chunks, createdAt: now });
  return {
    ok: true,
    batch: { id, file_name: row.file_name, status: 'pending', num_lines: row.num_lines, created_at: now, updated_at: now },
    messages: scan.chunks.map((chunk) => ({
      batchId: id,
      chunk: chunk.index,
      offset: chunk.offset,
      length: chunk.length,
      firstLine: chunk.firstLine,
    })),
  };
}

/** Sends one message per chunk (at most 100 per sendBatch), then moves the batch to `queued`. */
export async function enqueueBatch(env: Env, batchId: string, messages: ChunkMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 100) {
    await env.BATCH_QUEUE.sendBatch(messages.slice(i, i + 100).map((body) => ({ body, contentType: 'json' as const })));
  }
  await env.BATCH_PROGRESS.getByName(batchId).markQueued();
}

function toRecord(row: BatchRow, live: BatchSnapshot | null): BatchRecord {
  const status = live?.status ?? row.status;
  const record: BatchRecord = {
    id: row.id,
    user_id: row.merchant_id,
    file_name: row.file_name,
    status,
    num_lines: row.num_lines,
    processed_lines: live?.processedLines ?? row.processed_lines,
    created_at: row.created_at,
    updated_at: live?.updatedAt ?? row.updated_at,
  };
  const reason = live?.failureReason ?? row.failure_reason;
  if (status === 'failed' && reason) record.failure_reason = reason;
  return record;
}

/** The live record of a merchant's batch; null for an unknown id or another merchant's batch. */
export async function getBatch(env: Env, merchantId: string, id: string): Promise<BatchRecord | null> {
  const row = await findMerchantBatch(env.DB, merchantId, id);
  if (!row) return null;
  return toRecord(row, await env.BATCH_PROGRESS.getByName(id).snapshot());
}

/** A page of the merchant's batches, newest first. Only batches still running ask their object. */
export async function listBatches(
  env: Env,
  merchantId: string,
  page: { limit: number; offset: number },
): Promise<{ batches: BatchRecord[]; total: number }> {
  const { batches, total } = await listMerchantBatches(env.DB, merchantId, page.limit, page.offset);
  const records = await Promise.all(
    batches.map(async (row) =>
      row.status === 'completed' || row.status === 'failed'
        ? toRecord(row, null)
        : toRecord(row, await env.BATCH_PROGRESS.getByName(row.id).snapshot()),
    ),
  );
  return { batches: records, total };
}

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
  const live = await env.BATCH_PROGRESS.getByName(id).snapshot();
  if (live?.status !== 'completed') return { ok: false, reason: 'not_completed' };
  const retentionMs = batchLimits(env).retentionDays * 86_400_000;
  const endedAt = Date.parse(row.ended_at ?? live.updatedAt);
  if (row.results_deleted_at !== null || clock().getTime() - endedAt > retentionMs) return { ok: false, reason: 'expired' };
  return { ok: true, fileName: row.file_name, body: resultStream(env.FILES, id, live.numChunks) };
}

function resultStream(bucket: R2Bucket, batchId: string, numChunks: number): ReadableStream<Uint8Array> {
  const header = new TextEncoder().encode(toCsvLine(RESULT_COLUMNS));
  let next = -1; // -1: the header; then chunk indexes
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (reader) {
          const { done, value } = await reader.read();
          if (!done) {
            controller.enqueue(value);
            return;
          }
          reader = null;
        }
        if (next === -1) {
          next = 0;
          controller.enqueue(header);
          return;
        }
        if (next >= numChunks) {
          controller.close();
          return;
        }
        const part = await getResultPart(bucket, batchId, next);
        if (!part) {
          controller.error(new Error(`result part ${next} of batch ${batchId} is missing`));
          return;
        }
        next++;
        reader = part.body.getReader();
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}

/**
 * Retention: deletes the result parts of batches that ended more than BATCH_RETENTION_DAYS ago
 * (completed ones stop being downloadable: "batch results expired"; failed ones may have left
 * partial parts). Their records stay, so status still answers. Returns how many batches it swept.
 */
export async function deleteExpiredResults(env: Env, clock: Clock): Promise<number> {
  const now = clock();
  const cutoff = isoTimestamp(new Date(now.getTime() - batchLimits(env).retentionDays * 86_400_000));
  let swept = 0;
  for (;;) {
    const ids = await listBatchesEndedBefore(env.DB, cutoff, 50);
    if (ids.length === 0) return swept;
    for (const id of ids) await deleteResultParts(env.FILES, id);
    await markResultsDeleted(env.DB, ids, isoTimestamp(now));
    swept += ids.length;
  }
}
