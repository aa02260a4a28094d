/**
 * The API's single transactions (routes/transaction.ts): POST /api/transaction's request, in
 * either body, through the engine and announced to webhook endpoints; a capture, void or refund with
 * FluidPay's details checked against the record first. The route maps each outcome to HTTP.
 */
import type { Caller, Env } from '../env';
import { randomId } from '../lib/crypto';
import type { FieldError } from '../lib/field-errors';
import type { Clock } from '../lib/time';
import type { TransactionRecordView } from '../schemas/transaction-response';
import { completeFluidPayInput } from './fluidpay/completion';
import { recordView } from './fluidpay/record';
import { fluidPayFieldOf, type TransactionRequestBody } from './fluidpay/request';
import { processTransactions, runOperation } from './recorded';
import { getTransaction } from './transactions/engine';
import { checkDetails, detailsNeedRecord } from './transactions/operation-details';
import type { OperationInput, OperationOutcome } from './transactions/operations';
import { publishTransactionEvent, type TransactionEventDeps } from './webhooks/transaction-events';

export type CreateOutcome =
  | { ok: true; record: TransactionRecordView; replayed: boolean }
  | { ok: false; reason: 'invalid' | 'idempotency_conflict' | 'in_progress'; errors: FieldError[] };

/** What the request's headers say: its Idempotency-Key and the caller's address (CF-Connecting-IP). */
export interface SentHeaders {
  idempotencyKey: string | undefined;
  callerIp: string | null;
}

/** POST /api/transaction: one sale, authorize, verification or credit; announced when it is created, never on a replay. */
export async function createTransaction(env: Env, caller: Caller, request: TransactionRequestBody, sent: SentHeaders, clock: Clock): Promise<CreateOutcome> {
  if (request.idempotencyKey !== null && sent.idempotencyKey !== undefined && request.idempotencyKey !== sent.idempotencyKey) {
    return { ok: false, reason: 'invalid', errors: [{ field: 'idempotency_key', msg: 'differs from the Idempotency-Key header (send one of them)' }] };
  }
  const completed = await completeFluidPayInput(env, caller.merchantId, request, clock());
  if (!completed.ok) return { ok: false, reason: 'invalid', errors: completed.errors };
  const [outcome] = await processTransactions(
    env,
    caller,
    // Without a key, a generated one is recorded: the request is simply not retry-safe.
    [{ input: completed.input, idempotencyKey: request.idempotencyKey ?? sent.idempotencyKey ?? randomId(24, 'auto_') }],
    { source: 'api', ipAddress: request.ipAddress ?? sent.callerIp },
    clock,
  );
  if (!outcome) throw new Error('transaction engine answered no outcome');
  if (!outcome.ok) {
    // Errors name the fields the client sent: FluidPay's paths for its body.
    const errors = request.fluidPay ? outcome.errors.map((error) => ({ ...error, field: fluidPayFieldOf(error.field) })) : outcome.errors;
    return { ok: false, reason: outcome.reason === 'in_progress' || outcome.reason === 'idempotency_conflict' ? outcome.reason : 'invalid', errors };
  }
  const record = recordView(outcome.record, 0, caller.merchantId);
  if (!outcome.replayed) await announce({ db: env.DB, queue: env.TRANSACTION_EVENT_QUEUE }, caller.merchantId, record);
  return { ok: true, record, replayed: outcome.replayed };
}

/**
 * A capture, void or refund. FluidPay's amounts in its details are parts of what the operation
 * moves: checked against the record before the processor is asked.
 */
export async function operateOnTransaction(
  env: Env,
  caller: Caller,
  input: OperationInput,
  clock: Clock,
): Promise<OperationOutcome | { ok: false; reason: 'invalid'; errors: FieldError[] }> {
  if (input.details && detailsNeedRecord(input.details)) {
    const found = await getTransaction(env, caller.merchantId, input.transactionId, clock);
    if (found.ok) {
      const errors = checkDetails(input.kind, found.record, found.amountRefunded, input.amount, input.details);
      if (errors.length > 0) return { ok: false, reason: 'invalid', errors };
    }
  }
  return runOperation(env, caller, input, clock);
}

/**
 * FluidPay's transaction_create, for endpoints that subscribed (webhooks/transaction-events.ts),
 * sent after the ledger recorded the transaction and before the answer. The transaction stands
 * whatever happens here, so the answer does too: an event that could not be queued is logged
 * with its transaction id, and the endpoint's merchant finds the transaction by searching.
 */
async function announce(bindings: TransactionEventDeps, merchantId: string, record: TransactionRecordView): Promise<void> {
  const unsent = (reason: string) =>
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_not_queued', merchant_id: merchantId, transaction_id: record.id, reason }));
  try {
    const published = await publishTransactionEvent(bindings, merchantId, record);
    if ('refused' in published) unsent(`message of ${published.bytes} bytes over the budget`);
  } catch (err) {
    unsent(err instanceof Error ? err.message.slice(0, 200) : 'unknown');
  }
}
