/**
 * Capture, void and refund rows of a batch file (docs/batch.md, "Capture, void and refund rows").
 * A row names the transaction it acts on in `transaction_id`: an id this service answered, or
 * `line:N` for the transaction made by an earlier sale / authorize / credit row of the same file.
 * Each row goes through the API's own operation (services/transactions/operations.ts,
 * `runOperation`): the same states, amounts left, bound on operations, settlement ordering,
 * receipts and search indexing. Its key is the row's (`{batch id}:{line}`), so a redelivered chunk
 * gets each operation's first answer and never asks the processor twice.
 */
import type { Caller, Env } from '../../env';
import { describeFieldErrors } from '../../lib/field-errors';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { RowError, TransactionContext, TransactionInput, TransactionOutcome, TransactionRecord } from '../../schemas/transaction-columns';
import type { OperationKind } from '../../storage/ledger-shard';
import { indexOperations } from '../search/operation-changes';
import { operateMany, type OperationInput, type OperationOutcome } from '../transactions/operations';
import { invalidRecord } from '../transactions/records';
import { parseAmount } from '../transactions/validation';

/** The `transaction_type` values that act on a transaction named in `transaction_id`. */
export const LIFECYCLE_TYPES = ['capture', 'void', 'refund'] as const;

/** The column a lifecycle row names its transaction in (a batch column only: the API names it in the path). */
export const TRANSACTION_ID_COLUMN = 'transaction_id';

/** Ids this service gives (`txn_` and letters, digits, underscores), or a line of the same file. */
const TRANSACTION_ID_PATTERN = /^txn_[a-z0-9_]{1,80}$/;
const LINE_REFERENCE_PATTERN = /^line:([0-9]{1,7})$/;

/** A row's kind from its `transaction_type` (trimmed, any case); null for sale / authorize / credit and anything else. */
export function lifecycleKind(type: string | undefined): OperationKind | null {
  const lower = type?.trim().toLowerCase();
  return LIFECYCLE_TYPES.find((kind) => kind === lower) ?? null;
}

export type TransactionReference = { kind: 'id'; id: string } | { kind: 'line'; line: number };

/** A lifecycle row, checked: what it acts on and how much (null: the default), or its field errors. */
export type LifecycleRow =
  | { ok: true; kind: OperationKind; reference: TransactionReference; amount: number | null }
  | { ok: false; kind: OperationKind; errors: RowError[] };

/**
 * The checks a lifecycle row passes before any transaction is read (the upload's validate-only
 * answer makes the same ones): `transaction_id` present and of a form this service gives, or a
 * line before this one; `amount` optional for a capture or refund, absent for a void.
 */
export function checkLifecycleRow(kind: OperationKind, transactionId: string | undefined, input: TransactionInput, line: number): LifecycleRow {
  const errors: RowError[] = [];
  let reference: TransactionReference | null = null;
  const named = transactionId?.trim() ?? '';
  const lineRef = LINE_REFERENCE_PATTERN.exec(named);
  if (named === '') errors.push({ field: TRANSACTION_ID_COLUMN, msg: `is required for a ${kind} row` });
  else if (lineRef) {
    const target = Number(lineRef[1]);
    if (target < 2 || target >= line) errors.push({ field: TRANSACTION_ID_COLUMN, msg: `line:${target} must name an earlier data row of this file (line 2 to ${line - 1})` });
    else reference = { kind: 'line', line: target };
  } else if (!TRANSACTION_ID_PATTERN.test(named)) {
    errors.push({ field: TRANSACTION_ID_COLUMN, msg: 'must be a transaction id this service answered (txn_…) or line:N' });
  } else reference = { kind: 'id', id: named };
  let amount: number | null = null;
  const amountText = input.amount?.trim();
  if (amountText) {
    if (kind === 'void') errors.push({ field: 'amount', msg: 'must be empty for a void (a void releases the whole transaction)' });
    else {
      const parsed = parseAmount(amountText);
      if (!parsed.ok) errors.push({ field: 'amount', msg: parsed.msg });
      else if (parsed.value === 0) errors.push({ field: 'amount', msg: 'must be more than 0 (leave it empty for the whole amount left)' });
      else amount = parsed.value;
    }
  }
  if (input.base_amount?.trim()) errors.push({ field: 'base_amount', msg: `must be empty for a ${kind} row (its amount is in amount)` });
  if (errors.length > 0 || reference === null) return { ok: false, kind, errors };
  return { ok: true, kind, reference, amount };
}

/** The row error a sale, authorize or credit row gets for naming a transaction. */
export const FIRST_PASS_TRANSACTION_ID_ERROR: RowError = {
  field: TRANSACTION_ID_COLUMN,
  msg: 'only capture, void and refund rows name a transaction; leave it empty for sale, authorize and credit',
};

/** One lifecycle row of a chunk, ready to run. */
export interface LifecycleRequest {
  line: number;
  idempotencyKey: string;
  input: TransactionInput;
  row: LifecycleRow;
}

/** A lifecycle row's outcome, shaped as the engine's so the chunk writes every line the same way. */
export type LifecycleOutcome = TransactionOutcome;

/**
 * Runs a chunk's lifecycle rows through the API's operations, together (they act on distinct
 * transactions: the upload refuses a file naming one twice). `made`: the transaction each earlier
 * row of the file made, by line (the referenced rows, run first by the chunk), or the reason it
 * made none.
 */
export async function runLifecycleRows(
  env: Env,
  caller: Caller,
  requests: readonly LifecycleRequest[],
  made: ReadonlyMap<number, { id: string } | { refused: string }>,
  context: TransactionContext,
  clock: Clock,
): Promise<LifecycleOutcome[]> {
  const createdAt = isoTimestamp(clock());
  const refused = (request: LifecycleRequest, errors: RowError[], transactionId: string | null, response: 'error' | 'declined' = 'error'): LifecycleOutcome => ({
    ok: false,
    reason: 'invalid',
    errors,
    record: lifecycleErrorRecord(request, errors, transactionId, { createdAt, context, userName: caller.merchantName, response }),
  });
  const outcomes = new Array<LifecycleOutcome | undefined>(requests.length);
  const toRun: { index: number; request: LifecycleRequest; input: OperationInput }[] = [];
  for (const [index, request] of requests.entries()) {
    const { row } = request;
    if (!row.ok) {
      outcomes[index] = refused(request, row.errors, null);
      continue;
    }
    let transactionId: string;
    if (row.reference.kind === 'line') {
      const target = made.get(row.reference.line);
      if (!target) throw new Error(`line ${row.reference.line} was not run before the row naming it`);
      if ('refused' in target) {
        outcomes[index] = refused(request, [{ field: TRANSACTION_ID_COLUMN, msg: `line:${row.reference.line} made no transaction: ${target.refused}` }], null);
        continue;
      }
      transactionId = target.id;
    } else transactionId = row.reference.id;
    toRun.push({ index, request, input: { transactionId, kind: row.kind, amount: row.amount, idempotencyKey: request.idempotencyKey, ipAddress: context.ipAddress } });
  }
  // The API's operations, their round trips shared (one claim and one answer call per ledger shard).
  const runs = await operateMany(env, caller, toRun.map((r) => r.input), clock, { processors: context.processors, packedAnswers: true });
  // Indexed for search before the chunk's results are written, as the API indexes before it answers,
  // with each transaction as its shard's answer left it.
  await indexOperations(
    env,
    caller,
    runs.map(({ outcome, current }, i) => ({ transactionId: toRun[i]?.input.transactionId ?? '', answered: outcome.ok ? outcome.record : null, current })),
    clock,
  );
  runs.forEach(({ outcome }, i) => {
    const run = toRun[i];
    if (run) outcomes[run.index] = fromOperation(run.request, run.input.transactionId, outcome, refused);
  });
  return outcomes.map((outcome) => {
    if (!outcome) throw new Error('a lifecycle row was left without an outcome');
    return outcome;
  });
}

function fromOperation(
  request: LifecycleRequest,
  transactionId: string,
  outcome: OperationOutcome,
  refused: (request: LifecycleRequest, errors: RowError[], transactionId: string | null, response?: 'error' | 'declined') => LifecycleOutcome,
): LifecycleOutcome {
  if (outcome.ok) {
    // The API's answer (a capture's or void's: the transaction as it is now; a refund's: the refund),
    // with the row's own key so each result line names its line. One copy: the result line reads the
    // result columns by name, and amount_refunded (the API's, not a column) is left beside them.
    return { ok: true, record: { ...outcome.record, idempotency_key: request.idempotencyKey }, replayed: outcome.replayed };
  }
  switch (outcome.reason) {
    case 'in_progress':
      // Another operation on the transaction is with its processor (an API call, most likely): the
      // chunk is tried again shortly, and this row then meets the state that operation left.
      return { ok: false, reason: 'in_progress', takeoverInSeconds: 1, errors: [{ field: TRANSACTION_ID_COLUMN, msg: outcome.message }], record: null };
    case 'declined':
      return refused(request, [{ field: TRANSACTION_ID_COLUMN, msg: outcome.message }], transactionId, 'declined');
    case 'amount':
      return refused(request, [{ field: 'amount', msg: outcome.message }], transactionId);
    case 'not_found':
      return refused(request, [{ field: TRANSACTION_ID_COLUMN, msg: 'no transaction of this merchant has this id' }], null);
    default:
      return refused(request, [{ field: TRANSACTION_ID_COLUMN, msg: outcome.message }], transactionId);
  }
}

/**
 * A refused lifecycle row's result line: the row's kind as `type`, the transaction it named as
 * `referenced_transaction_id` (only when it is a transaction of the merchant: an unknown id is not
 * echoed), the amount asked for, and the reason.
 */
function lifecycleErrorRecord(
  request: LifecycleRequest,
  errors: RowError[],
  transactionId: string | null,
  meta: { createdAt: string; context: TransactionContext; userName: string; response: 'error' | 'declined' },
): TransactionRecord {
  const { amount: _amount, ...rest } = request.input;
  const record = invalidRecord(rest, errors, { idempotencyKey: request.idempotencyKey, createdAt: meta.createdAt, context: meta.context, userName: meta.userName });
  const amount = request.row.ok ? request.row.amount : null;
  return {
    ...record,
    type: request.row.kind,
    amount,
    referenced_transaction_id: transactionId,
    response: meta.response,
    processor_response_text: describeFieldErrors(errors),
  };
}
