/**
 * Batch upload: the file is streamed into R2 while its structure is checked (docs/batch.md);
 * an accepted file becomes a batch through the lifecycle.
 */
import type { Caller, Env } from '../../env';
import { maskCardNumbersIn } from '../../lib/card-number';
import { randomId } from '../../lib/crypto';
import { CsvScanner, problemMessage } from '../../lib/batch-csv';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { UploadedBatch } from '../../schemas/filebatch-response';
import type { ChunkMessage } from '../../schemas/queue';
import { INPUT_COLUMNS } from '../../schemas/transaction-columns';
import { R2UploadWriter, uploadKey } from '../../storage/batch-files';
import type { BatchRow } from '../../storage/batches';
import { batchLimits } from './limits';
import { chunkMessages, createBatch, lifecycleDeps, startBatch } from './lifecycle';

/** Rows longer than this are a structural error: no valid row comes near it (49 short columns). */
export const MAX_ROW_BYTES = 64 * 1024;

const KNOWN_COLUMNS: ReadonlySet<string> = new Set(INPUT_COLUMNS);

/** The batch file's header rules: known, non-duplicate names; transaction_type; amount or base_amount. */
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

export type { UploadedBatch };

export type UploadOutcome =
  | { ok: true; batch: UploadedBatch; messages: ChunkMessage[] }
  | { ok: false; reason: 'invalid_file' | 'too_large'; msg: string };

export interface UploadSource {
  fileName: string;
  bytes: AsyncIterable<Uint8Array>;
}

/**
 * Streams the file into R2 while checking its structure. On any problem the R2 upload is aborted
 * and nothing is kept. On success the batch exists (D1 row + Durable Object, status `pending`)
 * and `messages` are its chunk messages, not sent yet (`acceptUpload` sends them).
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
  await createBatch(lifecycleDeps(env), row, scan.chunks);
  return {
    ok: true,
    batch: { id, file_name: row.file_name, status: 'pending', num_lines: row.num_lines, created_at: now, updated_at: now },
    messages: chunkMessages(id, scan.chunks),
  };
}

/**
 * POST /api/filebatch as one step: the file is stored and checked (`uploadBatch`), and its chunk
 * messages are handed to `schedule` (the request's waitUntil), so they go out after the answer.
 * The stall watchdog re-sends them if that work is lost.
 */
export async function acceptUpload(
  env: Env,
  caller: Caller,
  source: UploadSource,
  ipAddress: string | null,
  clock: Clock,
  schedule: (work: Promise<unknown>) => void,
): Promise<Exclude<UploadOutcome, { ok: true }> | { ok: true; batch: UploadedBatch }> {
  const outcome = await uploadBatch(env, caller, source, ipAddress, clock);
  if (!outcome.ok) return outcome;
  schedule(startBatch(lifecycleDeps(env), outcome.batch.id, outcome.messages));
  return { ok: true, batch: outcome.batch };
}

