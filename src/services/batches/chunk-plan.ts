/**
 * How one chunk's rows run (docs/batch.md, "The order rows of one file act in"). Sale, authorize and
 * credit rows first, through the engine in one call; then capture, void and refund rows, each
 * through the API's operation. A lifecycle row naming `line:N` acts on the transaction line N made:
 * line N is run first, by this chunk, under its own key (`{batch id}:{N}`, the key its own chunk
 * uses, so whichever chunk runs it first charges it and the other gets that answer), whichever
 * chunk it is in. So every run of a file acts the same way, however its chunks interleave.
 */
import type { Caller, Env } from '../../env';
import { parseChunkRows, type CsvRow } from '../../lib/batch-csv';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { InputColumn, TransactionContext, TransactionInput, TransactionOutcome, TransactionRequest } from '../../schemas/transaction-columns';
import { readUploadRange } from '../../storage/batch-files';
import type { BatchRow } from '../../storage/batches';
import { processTransactions } from '../recorded';
import { putOperationManifest } from './operation-manifest';
import { invalidRecord } from '../transactions/records';
import { normaliseInput } from '../transactions/validation';
import {
  checkLifecycleRow,
  FIRST_PASS_TRANSACTION_ID_ERROR,
  lifecycleKind,
  runLifecycleRows,
  TRANSACTION_ID_COLUMN,
  type LifecycleRequest,
} from './lifecycle-rows';

/** A batch row's idempotency key: the line of the file, in the batch's own ledger shard. */
export function rowIdempotencyKey(batchId: string, line: number): string {
  return `${batchId}:${line}`;
}

/** A data row as the engine and the lifecycle rows read it: its fields by column, and the transaction it names. */
export interface ParsedRow {
  line: number;
  input: TransactionInput;
  transactionId: string | undefined;
}

/** Header names → field values; an empty field is an absent value. */
export function toParsedRow(columns: readonly string[], row: CsvRow): ParsedRow {
  const input: TransactionInput = {};
  let transactionId: string | undefined;
  for (const [index, column] of columns.entries()) {
    const value = row.fields[index];
    if (value === undefined || value === '') continue;
    if (column === TRANSACTION_ID_COLUMN) transactionId = value;
    else input[column as InputColumn] = value;
  }
  return { line: row.line, input, transactionId };
}

/** Runs a chunk's rows; its outcomes in row order. */
export async function runChunkRows(
  env: Env,
  caller: Caller,
  batch: BatchRow,
  rows: readonly ParsedRow[],
  context: TransactionContext & { batchId: string; chunkFirstLine: number },
  chunk: number,
  clock: Clock,
): Promise<TransactionOutcome[]> {
  const outcomes = new Array<TransactionOutcome | undefined>(rows.length);
  const charges: { index: number; request: TransactionRequest }[] = [];
  const lifecycle: { index: number; request: LifecycleRequest }[] = [];
  for (const [index, row] of rows.entries()) {
    const idempotencyKey = rowIdempotencyKey(context.batchId, row.line);
    const kind = lifecycleKind(row.input.transaction_type);
    if (kind !== null) {
      lifecycle.push({ index, request: { line: row.line, idempotencyKey, input: row.input, row: checkLifecycleRow(kind, row.transactionId, row.input, row.line) } });
    } else if (row.transactionId !== undefined) {
      outcomes[index] = firstPassRefusal(row, idempotencyKey, context, caller, clock);
    } else charges.push({ index, request: { input: row.input, idempotencyKey, line: row.line } });
  }
  const charged = charges.length > 0 ? await processTransactions(env, caller, charges.map((c) => c.request), context, clock) : [];
  charges.forEach(({ index }, i) => (outcomes[index] = charged[i]));
  if (charged.some((o) => !o.ok && o.reason === 'in_progress')) return finish(outcomes, rows.length);

  // The transactions earlier rows made, for the rows naming them: this chunk's own, then the others'.
  const made = new Map<number, { id: string } | { refused: string }>();
  const byLine = new Map(rows.map((row, index) => [row.line, index]));
  const elsewhere = new Set<number>();
  for (const { request } of lifecycle) {
    if (!request.row.ok || request.row.reference.kind !== 'line') continue;
    const line = request.row.reference.line;
    const index = byLine.get(line);
    if (index === undefined) elsewhere.add(line);
    else made.set(line, madeBy(rows[index] as ParsedRow, outcomes[index]));
  }
  if (elsewhere.size > 0) {
    const found = await runRowsOfOtherChunks(env, caller, batch, [...elsewhere], context, clock);
    if (found === 'in_progress') return finish(outcomes, rows.length);
    for (const [line, value] of found) made.set(line, value);
  }
  if (lifecycle.length > 0) {
    const entries = lifecycle.flatMap(({ request: { row, line } }) => {
      if (!row.ok) return [];
      const target = row.reference.kind === 'id' ? { id: row.reference.id } : made.get(row.reference.line);
      return target && 'id' in target ? [{ line, kind: row.kind, transactionId: target.id }] : [];
    });
    if (entries.length > 0) await putOperationManifest(env.FILES, batch.id, chunk, entries);
    const operated = await runLifecycleRows(env, caller, lifecycle.map((l) => l.request), made, context, clock);
    lifecycle.forEach(({ index }, i) => (outcomes[index] = operated[i]));
  }
  return finish(outcomes, rows.length);
}

/** What line N made, for a row naming `line:N`: its transaction, or why there is none to name. */
function madeBy(row: ParsedRow, outcome: TransactionOutcome | undefined): { id: string } | { refused: string } {
  if (lifecycleKind(row.input.transaction_type) !== null) return { refused: `line ${row.line} is a ${row.input.transaction_type?.trim().toLowerCase()} row; name a sale, authorize or credit row` };
  if (outcome?.ok && outcome.record.id !== null) return { id: String(outcome.record.id) };
  if (outcome && !outcome.ok && outcome.reason === 'invalid') return { refused: `its row was refused (${String(outcome.record.processor_response_text)})` };
  return { refused: 'its row was refused' };
}

/**
 * Runs the rows of earlier chunks that this chunk's lifecycle rows name, as their own chunk runs
 * them (the same key, input and ledger page), and answers what each made; 'in_progress' when one is
 * held by another attempt (the chunk is tried again later). Subrequests: one object call for the
 * chunk map, one R2 read per chunk named, one engine call per chunk named.
 */
async function runRowsOfOtherChunks(
  env: Env,
  caller: Caller,
  batch: BatchRow,
  lines: readonly number[],
  context: TransactionContext & { batchId: string },
  clock: Clock,
): Promise<Map<number, { id: string } | { refused: string }> | 'in_progress'> {
  const { chunks } = await env.BATCH_PROGRESS.getByName(batch.id).partialView(true);
  const made = new Map<number, { id: string } | { refused: string }>();
  const wanted = new Set(lines);
  for (const chunk of chunks) {
    const inChunk = lines.filter((line) => line >= chunk.firstLine && line < chunk.firstLine + chunk.rows);
    if (inChunk.length === 0 || chunk.offset === undefined || chunk.length === undefined) continue;
    const text = await readUploadRange(env.FILES, batch.id, chunk.offset, chunk.length);
    if (text === null) throw new Error('the uploaded file is missing from storage');
    const rows = parseChunkRows(text, chunk.firstLine)
      .filter((row) => wanted.has(row.line))
      .map((row) => toParsedRow(batch.columns, row));
    const charges = rows.filter((row) => lifecycleKind(row.input.transaction_type) === null && row.transactionId === undefined);
    const outcomes = charges.length === 0
      ? []
      : await processTransactions(
          env,
          caller,
          charges.map((row) => ({ input: row.input, idempotencyKey: rowIdempotencyKey(batch.id, row.line), line: row.line })),
          { ...context, chunkFirstLine: chunk.firstLine },
          clock,
        );
    if (outcomes.some((o) => !o.ok && o.reason === 'in_progress')) return 'in_progress';
    for (const row of rows) {
      const at = charges.indexOf(row);
      made.set(row.line, at === -1 && row.transactionId !== undefined && lifecycleKind(row.input.transaction_type) === null
        ? { refused: 'its row was refused (transaction_id on a sale, authorize or credit row)' }
        : madeBy(row, outcomes[at]));
    }
  }
  return made;
}

/** A sale, authorize or credit row that names a transaction: refused, nothing run. */
function firstPassRefusal(row: ParsedRow, idempotencyKey: string, context: TransactionContext, caller: Caller, clock: Clock): TransactionOutcome {
  const errors = [FIRST_PASS_TRANSACTION_ID_ERROR];
  const record = invalidRecord(normaliseInput(row.input), errors, { idempotencyKey, createdAt: isoTimestamp(clock()), context, userName: caller.merchantName });
  return { ok: false, reason: 'invalid', errors, record };
}

function finish(outcomes: (TransactionOutcome | undefined)[], count: number): TransactionOutcome[] {
  const done = outcomes.filter((o): o is TransactionOutcome => o !== undefined);
  if (done.length === count) return done;
  // A row left without an outcome: another attempt holds a claim this chunk needed; it is tried again.
  return [{ ok: false, reason: 'in_progress', errors: [], record: null, takeoverInSeconds: 1 }];
}
