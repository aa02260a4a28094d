/**
 * The work of one chunk message: read its rows from the uploaded file (an R2 range read), run them
 * (sale, authorize and credit rows through the transaction engine in one call, then capture, void
 * and refund rows through the API's operations: chunk-plan.ts), store the result part, and record
 * the chunk in the batch's Durable Object. Safe to repeat: each row's idempotency key is `{batchId}:{line}`, so a row
 * recorded by an earlier attempt comes back `replayed`, never charged twice; the result part is
 * overwritten with the same lines; and the object counts a chunk once. Rows claimed by another
 * attempt still running (a second delivery of the chunk) leave the chunk to be tried again later.
 */
import type { Env } from '../../env';
import { parseChunkRows, toCsvLine } from '../../lib/batch-csv';
import { describeFieldErrors } from '../../lib/field-errors';
import type { Clock } from '../../lib/time';
import type { ChunkMessage } from '../../schemas/queue';
import { NUMERIC_RESULT_COLUMNS, RESULT_COLUMNS, type TransactionOutcome, type TransactionRecord } from '../../schemas/transaction-columns';
import { putResultPart, readUploadRange } from '../../storage/batch-files';
import { batchContext } from './batch-context';
import { rowIdempotencyKey, runChunkRows, toParsedRow } from './chunk-plan';
import { failBatch, lifecycleDeps } from './lifecycle';
import { hasEnded } from './state';

export type ChunkOutcome =
  | { ok: true; counted: boolean }
  /** Nothing to do: no such batch, or it has ended (its uploaded file is gone). */
  | { ok: false; reason: 'unknown_batch' | 'batch_ended' }
  /** Another attempt holds some rows' claims: nothing written; ask again after `retryAfterSeconds`. */
  | { ok: false; reason: 'rows_in_flight'; retryAfterSeconds: number };

export { rowIdempotencyKey };

export async function processChunk(env: Env, message: ChunkMessage, clock: Clock): Promise<ChunkOutcome> {
  // The batch row, its caller and processors: once per batch per isolate (batch-context.ts).
  const found = await batchContext(env, message.batchId, clock);
  if (!found) return { ok: false, reason: 'unknown_batch' };
  const { batch, caller, processors } = found;
  const progress = env.BATCH_PROGRESS.getByName(batch.id);

  const text = await readUploadRange(env.FILES, batch.id, message.offset, message.length);
  if (text === null) {
    // The file is deleted when the batch ends; if it vanished while running, the batch cannot finish.
    const live = await progress.snapshot();
    if (live && hasEnded(live.status)) return { ok: false, reason: 'batch_ended' };
    await failBatch(lifecycleDeps(env), batch.id, 'the uploaded file is missing from storage');
    return { ok: false, reason: 'batch_ended' };
  }

  const rows = parseChunkRows(text, message.firstLine).map((row) => toParsedRow(batch.columns, row));
  const context = { source: 'batch' as const, ipAddress: batch.ip_address, batchId: batch.id, batchCreatedAt: batch.created_at, chunkFirstLine: message.firstLine, processors };
  const outcomes = await runChunkRows(env, caller, batch, rows, context, message.chunk, clock);
  const waits = outcomes.flatMap((o) => (!o.ok && o.reason === 'in_progress' ? [o.takeoverInSeconds] : []));
  if (waits.length > 0) return { ok: false, reason: 'rows_in_flight', retryAfterSeconds: Math.max(...waits) };
  if (outcomes.length !== rows.length) {
    throw new Error(`engine answered ${outcomes.length} outcomes for ${rows.length} rows`);
  }
  let csv = '';
  for (const [index, outcome] of outcomes.entries()) csv += resultLine(outcome, rowIdempotencyKey(batch.id, rows[index]?.line ?? 0));
  await putResultPart(env.FILES, batch.id, message.chunk, csv);
  const recorded = await progress.recordChunk(message.chunk);
  // Thrown here, in the consumer, so the message is retried with backoff like any other failure.
  if ('failed' in recorded) throw new Error(`chunk ${message.chunk} could not be recorded: ${recorded.failed}`);
  return { ok: true, counted: recorded.counted };
}

/** Which result columns are numeric, in column order: what `toCsvLine` leaves as numbers. */
const NUMERIC = RESULT_COLUMNS.map((column) => NUMERIC_RESULT_COLUMNS.has(column));

/** A row's line in the result file (the partial download of a failed batch writes its own with it too). */
export function resultLine(outcome: TransactionOutcome, idempotencyKey: string): string {
  const record: TransactionRecord | null = outcome.record;
  if (record) return toCsvLine(RESULT_COLUMNS.map((column) => record[column]), NUMERIC);
  // Only the API's idempotency conflict has no record; a batch row still gets exactly one line.
  return toCsvLine(
    RESULT_COLUMNS.map((column) =>
      column === 'idempotency_key'
        ? idempotencyKey
        : column === 'response'
          ? 'error'
          : column === 'processor_response_text'
            ? outcome.ok
              ? ''
              : describeFieldErrors(outcome.errors)
            : null,
    ),
    NUMERIC,
  );
}
