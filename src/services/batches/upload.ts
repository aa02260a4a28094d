/**
 * Batch upload: the file is streamed into R2 while its structure is checked (docs/batch.md);
 * an accepted file becomes a batch through the lifecycle.
 */
import type { Caller, Env } from '../../env';
import { maskCardNumbersIn } from '../../lib/card-number';
import { randomId, toHex } from '../../lib/crypto';
import { derivedHmacKey } from '../../lib/derived-keys';
import { CsvScanner, problemMessage } from '../../lib/batch-csv';
import { ContentNormalizer } from '../../lib/content-normalizer';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { UploadedBatch } from '../../schemas/filebatch-response';
import type { ChunkMessage } from '../../schemas/queue';
import { INPUT_COLUMNS } from '../../schemas/transaction-columns';
import { deleteUpload, R2UploadWriter, uploadKey } from '../../storage/batch-files';
import { findBatchByUploadFingerprint, findBatchByUploadKey, findFingerprintHolder, releaseUploadKey, type BatchRow } from '../../storage/batches';
import { batchLimits } from './limits';
import { GatedRowTap } from '../../lib/row-tap';
import { NamedOnce } from './file-checks';
import { chunkMessages, createBatch, lifecycleDeps, startBatch } from './lifecycle';
import { PendingUploadRecord } from './pending-uploads';
import { TRANSACTION_ID_COLUMN } from './lifecycle-rows';

/** Rows longer than this are a structural error: no valid row comes near it (49 short columns). */
export const MAX_ROW_BYTES = 64 * 1024;

const KNOWN_COLUMNS: ReadonlySet<string> = new Set([...INPUT_COLUMNS, TRANSACTION_ID_COLUMN]);

/**
 * The batch file's header rules: known, non-duplicate names; transaction_type; amount or
 * base_amount, or transaction_id (a file of voids has no amount).
 */
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
  if (!seen.has('amount') && !seen.has('base_amount') && !seen.has(TRANSACTION_ID_COLUMN)) return 'the header needs an amount or base_amount column';
  return null;
}

export type { UploadedBatch };

/** `replayed`: the upload repeated an earlier one under its Idempotency-Key; that batch is answered again. */
export type UploadOutcome =
  | { ok: true; batch: UploadedBatch; messages: ChunkMessage[]; replayed: boolean }
  | { ok: false; reason: 'invalid_file' | 'too_large' | 'duplicate_file' | 'key_reused'; msg: string };

export interface UploadSource {
  fileName: string;
  bytes: AsyncIterable<Uint8Array>;
}

/** What an upload may say about repeats: its Idempotency-Key, and whether the same file again is meant. */
export interface UploadOptions {
  idempotencyKey?: string | undefined;
  allowDuplicate?: boolean | undefined;
}

/** An upload's key answers its batch, and the same bytes are refused, for this long. */
export const UPLOAD_REPEAT_WINDOW_MS = 24 * 60 * 60 * 1_000;

/** The answer an upload gave: what a replay under its Idempotency-Key answers again. */
function uploadedBatch(row: BatchRow): UploadedBatch {
  return { id: row.id, file_name: row.file_name, status: 'pending', num_lines: row.num_lines, created_at: row.created_at, updated_at: row.created_at };
}

/** The file's SHA-256, keyed (HMAC under a key derived from CARD_DATA_KEY): the file holds card numbers. */
async function uploadFingerprint(env: Env, sha256: ArrayBuffer): Promise<string> {
  const key = await derivedHmacKey(env.CARD_DATA_KEY, 'binbatch upload fingerprint v1');
  return toHex(new Uint8Array(await crypto.subtle.sign('HMAC', key, sha256)));
}

/**
 * An earlier upload this one repeats, decided once the file is read: under the same key, its batch
 * again (same file) or a 409 (another file); without one, or with a new key, the same bytes as an
 * upload of the last 24 hours are a 409 naming that batch unless `allowDuplicate`. Null: go on.
 * This read spares the common repeat the rest of the upload; what holds under concurrent uploads is
 * the claim the batch row is written with (`createBatch`).
 */
async function repeatOf(
  env: Env,
  caller: Caller,
  fingerprint: string,
  options: UploadOptions,
  since: string,
): Promise<Extract<UploadOutcome, { ok: false }> | { ok: true; batch: UploadedBatch; messages: []; replayed: true } | null> {
  if (options.idempotencyKey !== undefined) {
    const earlier = await findBatchByUploadKey(env.DB, caller.merchantId, options.idempotencyKey, since);
    if (earlier) return keyedRepeat(earlier, fingerprint);
  }
  if (options.allowDuplicate) return null;
  const same = await findBatchByUploadFingerprint(env.DB, caller.merchantId, fingerprint, since);
  if (!same) return null;
  // A concurrent upload under the same key may have made its batch between the two reads: this
  // upload repeats it (the same key, the same file), it is no duplicate of another upload.
  if (options.idempotencyKey !== undefined && same.upload_idempotency_key === options.idempotencyKey) return keyedRepeat(same, fingerprint);
  return duplicateOf(same.id);
}

function duplicateOf(batchId: string): Extract<UploadOutcome, { ok: false }> {
  return {
    ok: false,
    reason: 'duplicate_file',
    msg: `this file was already uploaded in the last 24 hours as batch ${batchId}; to charge its rows again, upload it with ?allow_duplicate=true`,
  };
}

function keyedRepeat(earlier: BatchRow, fingerprint: string): Extract<UploadOutcome, { ok: false }> | { ok: true; batch: UploadedBatch; messages: []; replayed: true } {
  if (earlier.upload_sha256 === fingerprint) return { ok: true, batch: uploadedBatch(earlier), messages: [], replayed: true };
  return {
    ok: false,
    reason: 'key_reused',
    msg: `idempotency-key: already used in the last 24 hours for another file (batch ${earlier.id})`,
  };
}

/**
 * Streams the file into R2 while checking its structure. On any problem the R2 upload is aborted
 * and nothing is kept. On success the batch exists (D1 row + Durable Object, status `pending`)
 * and `messages` are its chunk messages, not sent (`acceptUpload` starts the batch, whose object
 * then sends them a window at a time; tests deliver them themselves).
 */
export async function uploadBatch(
  env: Env,
  caller: Caller,
  source: UploadSource,
  ipAddress: string | null,
  clock: Clock,
  options: UploadOptions = {},
): Promise<UploadOutcome> {
  const limits = batchLimits(env);
  const id = randomId(20, 'bat_');
  const scanner = new CsvScanner({ chunkRows: limits.chunkRows, maxRowBytes: MAX_ROW_BYTES, checkHeader });
  // Known before the first byte is stored: a process that dies mid-upload leaves this record, whose
  // alarm aborts what was written (durable-objects/pending-upload.ts).
  const pending = new PendingUploadRecord(env, id, clock);
  await pending.begin(uploadKey(id));
  const writer = new R2UploadWriter(env.FILES, uploadKey(id), undefined, pending.multipartCreated);
  // The file's SHA-256, computed as it streams (the bytes are never held whole), over its content:
  // without a BOM, with LF line endings, without its final line ending (lib/content-normalizer.ts).
  const normalizer = new ContentNormalizer();
  // Rows are read field by field only in files that name transactions (a sale file streams as bytes).
  const named = new NamedOnce(limits.chunkRows);
  const tap = new GatedRowTap((columns) => columns.includes(TRANSACTION_ID_COLUMN), (row) => named.check(row));
  const digest = new crypto.DigestStream('SHA-256');
  const digestWriter = digest.getWriter();
  // A refused file leaves the digest unfinished; its promise then rejects, and nobody else awaits it.
  digest.digest.catch(() => {});
  let size = 0;
  let failure: UploadOutcome | null = null;
  try {
    for await (const bytes of source.bytes) {
      const normalized = normalizer.push(bytes);
      if (normalized.length > 0) await digestWriter.write(normalized);
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
      const rowProblem = tap.push(bytes, scanner.columns);
      if (rowProblem) {
        failure = { ok: false, reason: 'invalid_file', msg: rowProblem };
        break;
      }
      if (scanner.rows > limits.maxRows) {
        failure = { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
        break;
      }
      await writer.write(bytes);
      await pending.active();
    }
  } catch (err) {
    await Promise.all([writer.abort(), digestWriter.abort().catch(() => {})]);
    await pending.end();
    throw err;
  }
  let scan = failure ? null : scanner.finish();
  const lastRowProblem = scan?.ok ? tap.finish() : null;
  if (lastRowProblem) {
    failure = { ok: false, reason: 'invalid_file', msg: lastRowProblem };
    scan = null;
  }
  // The last row may end without "\n" and only be counted by finish().
  if (scan?.ok && scan.rows > limits.maxRows) {
    failure = { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
    scan = null;
  }
  if (failure || !scan || !scan.ok) {
    await Promise.all([writer.abort(), digestWriter.abort().catch(() => {})]);
    await pending.end();
    return failure ?? { ok: false, reason: 'invalid_file', msg: scan && !scan.ok ? problemMessage(scan) : 'invalid file' };
  }
  const rest = normalizer.finish();
  if (rest.length > 0) await digestWriter.write(rest);
  await digestWriter.close();
  const fingerprint = await uploadFingerprint(env, await digest.digest);
  const since = isoTimestamp(new Date(clock().getTime() - UPLOAD_REPEAT_WINDOW_MS));
  const repeat = await repeatOf(env, caller, fingerprint, options, since);
  if (repeat) {
    await writer.abort();
    await pending.end();
    return repeat;
  }
  await writer.finish();
  await pending.active(true);
  if (options.idempotencyKey !== undefined) await releaseUploadKey(env.DB, caller.merchantId, options.idempotencyKey, since);

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
    upload_sha256: fingerprint,
    upload_idempotency_key: options.idempotencyKey ?? null,
  };
  const claim = { merchantId: caller.merchantId, fingerprint, lapsedAtOrBefore: since, takeOver: options.allowDuplicate === true };
  const keyWinner = () =>
    options.idempotencyKey === undefined ? Promise.resolve(null) : findBatchByUploadKey(env.DB, caller.merchantId, options.idempotencyKey, since);
  // Twice at most: a claim that lapsed or was taken over between this upload's refusal and its read is gone.
  for (let attempt = 1; ; attempt++) {
    let created: boolean;
    try {
      created = await createBatch(lifecycleDeps(env), row, scan.chunks, claim);
    } catch (err) {
      // Another upload under the same key made its batch first (the unique index): this one is a
      // repeat of it, and its stored file goes.
      const winner = await keyWinner();
      if (!winner) throw err;
      await deleteUpload(env.FILES, id);
      await pending.end();
      return keyedRepeat(winner, fingerprint);
    }
    if (created) {
      await pending.end();
      break;
    }
    // Another upload of the same bytes made its batch first (its fingerprint claim stood): under the
    // same key this one repeats it, without it is the 409 a later upload would get.
    const winner = await keyWinner();
    const holder = winner ? null : await findFingerprintHolder(env.DB, caller.merchantId, fingerprint);
    if (winner || holder !== null) {
      await deleteUpload(env.FILES, id);
      await pending.end();
      return winner ? keyedRepeat(winner, fingerprint) : duplicateOf(holder ?? '');
    }
    if (attempt >= 2) {
      await deleteUpload(env.FILES, id);
      await pending.end();
      throw new Error('the duplicate window of this file changed hands twice while it was uploaded');
    }
  }
  return { ok: true, batch: uploadedBatch(row), messages: chunkMessages(id, scan.chunks), replayed: false };
}

/**
 * POST /api/filebatch as one step: the file is stored and checked (`uploadBatch`), and the batch's
 * start is handed to `schedule` (the request's waitUntil), so its first chunk messages go out after
 * the answer. The stall watchdog starts it if that work is lost.
 */
export async function acceptUpload(
  env: Env,
  caller: Caller,
  source: UploadSource,
  ipAddress: string | null,
  clock: Clock,
  schedule: (work: Promise<unknown>) => void,
  options: UploadOptions = {},
): Promise<Exclude<UploadOutcome, { ok: true }> | { ok: true; batch: UploadedBatch; replayed: boolean }> {
  const outcome = await uploadBatch(env, caller, source, ipAddress, clock, options);
  if (!outcome.ok) return outcome;
  if (!outcome.replayed) schedule(startBatch(lifecycleDeps(env), outcome.batch.id));
  return { ok: true, batch: outcome.batch, replayed: outcome.replayed };
}

