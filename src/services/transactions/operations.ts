/**
 * Capture, void and refund of a recorded transaction (docs/transactions.md, "Lifecycle"). Claim
 * before the processor, as for a charge: the shard that holds the transaction checks its status and
 * the amount and records the operation under its key in one step, then the processor is asked once,
 * then its answer is applied. A key sent again gets its first answer; an operation left claimed by
 * a crashed attempt is settled by asking the processor what it did under its key.
 *
 * Keys: the client's Idempotency-Key scoped to the transaction and the operation (the same key may
 * capture one transaction and refund another); without one, a generated key (not retry-safe).
 */
import type { Caller, Env } from '../../env';
import { randomId, sha256Hex } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { OperationBegin, OperationCompleted, OperationKind, OperationRow, OperationResult } from '../../storage/ledger-shard';
import { CLAIM_TIMEOUT_SECONDS, processorAccounts } from './claims';
import { locateTransaction } from './engine';
import { authorizationExpiryDays, expiresBefore } from './lifecycle-rules';
import type { Shard } from './ledger';
import { merchantProcessors } from './processors/registry';
import type { ChargeResult, PaymentProcessor } from './processors/processor';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { OperationDetails } from './operation-details';

export interface OperationInput {
  transactionId: string;
  kind: OperationKind;
  /** Minor units; null: the default (all that is authorized, or all that is left to refund). */
  amount: number | null;
  idempotencyKey: string | undefined;
  ipAddress: string | null;
  /** FluidPay's optional capture / refund fields, applied with the answer. */
  details?: OperationDetails;
}

/** A transaction record as the API answers it: the result CSV's columns and what was refunded of it. */
export type TransactionView = TransactionRecord & { amount_refunded: number };

export type OperationOutcome =
  | { ok: true; status: 200 | 201; record: TransactionView; replayed: boolean }
  | {
      ok: false;
      reason: 'not_found' | 'idempotency_conflict' | 'in_progress' | 'wrong_state' | 'amount' | 'surcharge' | 'limit' | 'declined' | 'archived';
      message: string;
      replayed?: boolean;
    };

/** The record as the API answers it (amount_refunded is not a result CSV column). */
export function transactionView(record: TransactionRecord, amountRefunded: number): TransactionView {
  return { ...record, amount_refunded: amountRefunded };
}

type StoredAnswer = { status: 200 | 201; record: TransactionView } | { status: 402; message: string };

/**
 * An operation's outcome, and the transaction as the shard left it when this call completed the
 * operation (null for a replay, a refusal or a claim held elsewhere): what follows the operation
 * (the search index) takes it rather than reading the transaction again.
 */
export interface OperationRun {
  outcome: OperationOutcome;
  current: NonNullable<OperationCompleted['current']> | null;
}

/** Runs a capture, void or refund against the ledger (services/recorded.ts runs what follows it). */
export async function operate(env: Env, caller: Caller, input: OperationInput, clock: Clock): Promise<OperationRun> {
  const now = clock();
  const located = await locateTransaction(env, caller.merchantId, input.transactionId, now);
  if (!located.ok) {
    return nothingWritten(
      located.reason === 'archived'
        ? { ok: false, reason: 'archived', message: `transaction archived: ${located.archive}` }
        : { ok: false, reason: 'not_found', message: 'transaction not found' },
    );
  }
  const { shard, query } = located;
  const clientKey = input.idempotencyKey ?? randomId(24, 'auto_');
  const request = {
    transactionId: input.transactionId,
    query,
    kind: input.kind,
    key: `${input.transactionId}:${input.kind}:${clientKey}`,
    // FluidPay's details are part of the request (another set under the key is a conflict).
    requestHash: await sha256Hex(JSON.stringify(input.details ? { amount: input.amount, details: input.details } : { amount: input.amount })),
    amount: input.amount,
    ...(input.details?.surcharge ? { surcharge: input.details.surcharge } : {}),
    now: isoTimestamp(now),
    expiredBefore: expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS)),
    staleBefore: isoTimestamp(new Date(now.getTime() - CLAIM_TIMEOUT_SECONDS * 1000)),
  };
  const operation = new OperationCall(env, caller, shard, clientKey, input.ipAddress, request.expiredBefore, query, clock, input.details);
  let begun = await operation.begin(request);
  if (begun.outcome === 'abandoned') {
    // Its holder crashed: what the processor did under its key decides (never a second call).
    await operation.settleAbandoned(begun.operation, begun.record);
    begun = await operation.begin(request);
  }
  switch (begun.outcome) {
    case 'answered':
      if (begun.requestHash !== request.requestHash) {
        return nothingWritten({ ok: false, reason: 'idempotency_conflict', message: `Idempotency-Key was used for another ${input.kind} request of this transaction` });
      }
      return nothingWritten(fromAnswer(begun.answer, true));
    case 'not_found':
      return nothingWritten({ ok: false, reason: 'not_found', message: 'transaction not found' });
    case 'in_progress':
    case 'abandoned':
      return nothingWritten({ ok: false, reason: 'in_progress', message: `another operation on this transaction is in progress (since ${begun.outcome === 'in_progress' ? begun.since : begun.operation.createdAt}); ask again shortly` });
    case 'refused':
      return nothingWritten({ ok: false, reason: begun.reason, message: begun.message });
    case 'claimed': {
      const completed = await operation.run(begun.operation, begun.record);
      return { outcome: fromAnswer(completed.answer, false), current: completed.current ?? null };
    }
  }
}

/** An outcome this call wrote nothing for (a replay is answered from what an earlier call wrote). */
function nothingWritten(outcome: OperationOutcome): OperationRun {
  return { outcome, current: null };
}

/**
 * The stored answer, or its replay: a replay is 200 whatever the first answer's status was (a
 * refund's first is 201, it created a transaction; its replay creates nothing), as POST
 * /api/transaction answers its replays; a declined operation is 402 both times.
 */
function fromAnswer(answer: string, replayed: boolean): OperationOutcome {
  const parsed = JSON.parse(answer) as StoredAnswer;
  if (parsed.status === 402) return { ok: false, reason: 'declined', message: parsed.message, replayed };
  return { ok: true, status: replayed ? 200 : parsed.status, record: parsed.record, replayed };
}

/** One operation's calls to its shard and its processor. */
class OperationCall {
  constructor(
    readonly env: Env,
    readonly caller: Caller,
    readonly shard: Shard,
    readonly clientKey: string,
    readonly ipAddress: string | null,
    readonly expiredBefore: string,
    readonly query: { ids: string[]; exact: string[]; floor: string[] },
    readonly clock: Clock,
    readonly details?: OperationDetails,
  ) {}

  async begin(request: Parameters<Shard['stub']['beginOperation']>[1]): Promise<OperationBegin> {
    const begun = await this.shard.stub.beginOperation(this.shard.identity, request);
    if ('failed' in begun) throw new Error(`ledger shard write failed: ${begun.failed}`);
    return begun;
  }

  async #processor(record: TransactionRecord): Promise<PaymentProcessor> {
    const processors = await merchantProcessors(this.env.DB, this.caller.merchantId, this.clock);
    const processor = processorAccounts(this.env, processors, this.clock)(String(record.processor_id));
    if (!processor) throw new Error(`transaction ${String(record.id)} names an unknown processor`);
    return processor;
  }

  #operation(op: OperationRow, record: TransactionRecord) {
    return {
      amount: op.amount,
      transactionId: op.transactionId,
      paymentType: record.payment_type === 'ach' ? ('ach' as const) : ('card' as const),
      idempotencyKey: op.key,
      claimedAt: op.createdAt,
    };
  }

  /** Asks the processor once, then applies its answer. */
  async run(op: OperationRow, record: TransactionRecord): Promise<OperationCompleted> {
    const processor = await this.#processor(record);
    let result: ChargeResult | null;
    try {
      result = await processor[op.kind](this.#operation(op, record));
    } catch (err) {
      // It may or may not have been done: the processor's record says (as for a charge, claims.ts).
      result = await processor.lookup(op.key, op.createdAt).catch(() => null);
      if (result === null) {
        await this.shard.stub.releaseOperation(this.shard.identity, op.key);
        throw err;
      }
    }
    return this.#complete(op, result);
  }

  async settleAbandoned(op: OperationRow, record: TransactionRecord): Promise<void> {
    const processor = await this.#processor(record);
    const result = await processor.lookup(op.key, op.createdAt);
    if (result === null) {
      const released = await this.shard.stub.releaseOperation(this.shard.identity, op.key);
      if (released !== true) throw new Error(`ledger shard write failed: ${released.failed}`);
      return;
    }
    await this.#complete(op, result);
  }

  async #complete(op: OperationRow, result: OperationResult): Promise<OperationCompleted> {
    const done = await this.shard.stub.completeOperation(this.shard.identity, {
      key: op.key,
      query: this.query,
      result,
      now: isoTimestamp(this.clock()),
      expiredBefore: this.expiredBefore,
      // An abandoned operation settled here may be another request's: its own key, no address.
      idempotencyKey: op.key.slice(`${op.transactionId}:${op.kind}:`.length),
      ipAddress: op.key === `${op.transactionId}:${op.kind}:${this.clientKey}` ? this.ipAddress : null,
      // Only this request's own operation gets its FluidPay details.
      ...(this.details && op.key === `${op.transactionId}:${op.kind}:${this.clientKey}` ? { details: this.details } : {}),
    });
    if ('failed' in done) throw new Error(`ledger shard write failed: ${done.failed}`);
    return done;
  }
}
