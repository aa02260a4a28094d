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
import { operationCurrent, type ClaimedTransaction, type OperationBegin, type OperationCompleted, type OperationCompletion, type OperationKind, type OperationRequest, type OperationRow, type OperationResult } from '../../storage/ledger-shard';
import { CLAIM_TIMEOUT_SECONDS, processorAccounts } from './claims';
import { locateMany } from './locate-many';
import { authorizationExpiryDays, expiresBefore } from './lifecycle-rules';
import type { Shard } from './ledger';
import { merchantProcessors } from './processors/registry';
import type { PaymentProcessor } from './processors/processor';
import { unpackResultColumns, type TransactionRecord } from '../../schemas/transaction-columns';
import type { OperationDetails } from './operation-details';
import type { ProcessorRecord } from '../../storage/processors';

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
 * (the search index) takes it rather than reading the transaction again; with `packed`, its result
 * columns as the shard sent them (JSON of packResultColumns), which the search stores as they are.
 */
export interface OperationRun {
  outcome: OperationOutcome;
  current: (NonNullable<OperationCompleted['current']> & { packed?: string }) | null;
}

/** Runs a capture, void or refund against the ledger (services/recorded.ts runs what follows it). */
export async function operate(env: Env, caller: Caller, input: OperationInput, clock: Clock): Promise<OperationRun> {
  const [run] = await operateMany(env, caller, [input], clock);
  if (!run) throw new Error('an operation answered no outcome');
  return run;
}

/**
 * Operations on many transactions (a batch file's capture, void and refund rows), each exactly as
 * `runOperation` runs one, with the round trips shared: one claim call and one answer call per
 * ledger shard holding any of them, and one processor call per acquirer day for all of them (the
 * sandbox coalesces the calls of one turn). Not indexed for search: the caller indexes the outcomes
 * (services/search/operation-changes.ts, grouped too). The transactions must be distinct.
 */
export async function operateMany(
  env: Env,
  caller: Caller,
  inputs: readonly OperationInput[],
  clock: Clock,
  options: {
    /** The merchant's processors when the caller has them (a batch reads them once, not per chunk). */
    processors?: readonly ProcessorRecord[];
    /**
     * Approved captures and voids answered packed (OperationCompletion): the outcome's record has
     * the result columns and amount_refunded, in that order (a batch's result line and search
     * index), rather than the API answer's JSON as made.
     */
    packedAnswers?: boolean;
  } = {},
): Promise<OperationRun[]> {
  const { processors, packedAnswers = false } = options;
  const now = clock();
  const outcomes = new Array<OperationRun | undefined>(inputs.length);
  const shared = new SharedProcessors(env, caller, clock, processors);
  const groups = new Map<string, { shard: Shard; items: { index: number; call: OperationCall; request: OperationRequest }[] }>();
  const locations = await locateMany(env, caller.merchantId, inputs.map((input) => input.transactionId), now);
  // A file's rows mostly send the same body (`{"amount":null}`): each distinct one hashed once.
  const hashes = new RequestHashes();
  // The call's times, the same for every operation of it.
  const times = {
    now: isoTimestamp(now),
    expiredBefore: expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS)),
    staleBefore: isoTimestamp(new Date(now.getTime() - CLAIM_TIMEOUT_SECONDS * 1000)),
  };
  for (const [index, input] of inputs.entries()) {
    const located = locations[index];
    if (!located) throw new Error('a transaction was not located');
    if (!located.ok) {
      outcomes[index] = nothingWritten(
        located.reason === 'archived'
          ? { ok: false, reason: 'archived', message: `transaction archived: ${located.archive}` }
          : { ok: false, reason: 'not_found', message: 'transaction not found' },
      );
      continue;
    }
    const { shard, query } = located;
    const clientKey = input.idempotencyKey ?? randomId(24, 'auto_');
    const request: OperationRequest = {
      transactionId: input.transactionId,
      query,
      kind: input.kind,
      key: `${input.transactionId}:${input.kind}:${clientKey}`,
      // FluidPay's capture and refund details are part of the request (another set under the key is a conflict).
      requestHash: await hashes.of(JSON.stringify(input.details ? { amount: input.amount, details: input.details } : { amount: input.amount })),
      amount: input.amount,
      ...(input.details?.surcharge ? { surcharge: input.details.surcharge } : {}),
      ...times,
    };
    const call = new OperationCall(env, caller, shard, clientKey, input.ipAddress, request.expiredBefore, query, clock, shared, input.details);
    const group = groups.get(shard.identity.name) ?? { shard, items: [] };
    group.items.push({ index, call, request });
    groups.set(shard.identity.name, group);
  }
  await Promise.all(
    [...groups.values()].map(async ({ shard, items }) => {
      const begun = await shard.stub.beginOperations(shard.identity, items.map((item) => item.request));
      if ('failed' in begun) throw new Error(`ledger shard write failed: ${begun.failed}`);
      const claimed: { index: number; call: OperationCall; op: OperationRow; result: Promise<OperationResult | null> }[] = [];
      await Promise.all(
        items.map(async ({ index, call, request }, i) => {
          let answer = begun[i];
          if (!answer) throw new Error('a ledger shard answered fewer operations than it was sent');
          if (answer.outcome === 'abandoned') {
            // Its holder crashed: what the processor did under its key decides (never a second call).
            await call.settleAbandoned(answer.operation, answer.record);
            answer = await call.begin(request);
          }
          if (answer.outcome === 'claimed') claimed.push({ index, call, op: answer.operation, result: call.ask(answer.operation, answer.record) });
          else outcomes[index] = nothingWritten(unclaimed(answer, request, inputs[index]?.kind ?? request.kind));
        }),
      );
      // Every claim of the shard asked (the calls coalesce), then answered in one call.
      const results = await Promise.all(claimed.map((c) => c.result));
      const completions = claimed.flatMap((c, i) => (results[i] ? [{ c, result: results[i] }] : []));
      if (completions.length === 0) return;
      const answers = await shard.stub.completeOperations(
        shard.identity,
        completions.map(({ c, result }) => ({ ...c.call.completion(c.op, result), ...(packedAnswers ? { packed: true as const } : {}) })),
      );
      if ('failed' in answers) throw new Error(`ledger shard write failed: ${answers.failed}`);
      completions.forEach(({ c }, i) => {
        const answer = answers[i] ?? { answer: '' };
        if (answer.packed) {
          const { amountRefunded } = answer.packed;
          // One object: the answer's record, and the transaction the search indexes (from `packed`, its columns only).
          const record = Object.assign(unpackResultColumns(JSON.parse(answer.packed.record) as unknown[]), { amount_refunded: amountRefunded });
          const outcome: OperationOutcome = { ok: true, status: 200, record, replayed: false };
          outcomes[c.index] = { outcome, current: { record, amountRefunded, packed: answer.packed.record } };
          return;
        }
        const outcome = fromAnswer(answer.answer, false);
        outcomes[c.index] = { outcome, current: operationCurrent(answer, outcome.ok ? outcome.record : null) };
      });
    }),
  );
  return outcomes.map((outcome) => {
    if (!outcome) throw new Error('an operation was left without an outcome');
    return outcome;
  });
}

/** An outcome this call wrote nothing for (a replay is answered from what an earlier call wrote). */
function nothingWritten(outcome: OperationOutcome): OperationRun {
  return { outcome, current: null };
}

/** The outcome of an operation that was not claimed by this call. */
function unclaimed(begun: Exclude<OperationBegin, { outcome: 'claimed' }>, request: OperationRequest, kind: OperationKind): OperationOutcome {
  switch (begun.outcome) {
    case 'answered':
      if (begun.requestHash !== request.requestHash) {
        return { ok: false, reason: 'idempotency_conflict', message: `Idempotency-Key was used for another ${kind} request of this transaction` };
      }
      return fromAnswer(begun.answer, true);
    case 'not_found':
      return { ok: false, reason: 'not_found', message: 'transaction not found' };
    case 'in_progress':
    case 'abandoned':
      return { ok: false, reason: 'in_progress', message: `another operation on this transaction is in progress (since ${begun.outcome === 'in_progress' ? begun.since : begun.operation.createdAt}); ask again shortly` };
    case 'refused':
      return { ok: false, reason: begun.reason, message: begun.message };
  }
}

/** Request fingerprints of one call, each distinct body hashed once (at most one per input). */
class RequestHashes {
  readonly #known = new Map<string, Promise<string>>();
  of(body: string): Promise<string> {
    let hash = this.#known.get(body);
    if (!hash) {
      hash = sha256Hex(body);
      this.#known.set(body, hash);
    }
    return hash;
  }
}

/** The merchant's processor accounts, read once for all the operations of a call (their calls then coalesce). */
class SharedProcessors {
  #accounts: Promise<ReturnType<typeof processorAccounts>> | null = null;
  constructor(
    readonly env: Env,
    readonly caller: Caller,
    readonly clock: Clock,
    readonly known?: readonly ProcessorRecord[],
  ) {}

  accounts(): Promise<ReturnType<typeof processorAccounts>> {
    return (this.#accounts ??= (this.known ? Promise.resolve(this.known) : merchantProcessors(this.env.DB, this.caller.merchantId, this.clock)).then((list) =>
      processorAccounts(this.env, list, this.clock),
    ));
  }
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
    readonly processors: SharedProcessors,
    readonly details?: OperationDetails,
  ) {}

  async begin(request: OperationRequest): Promise<OperationBegin> {
    const begun = await this.shard.stub.beginOperation(this.shard.identity, request);
    if ('failed' in begun) throw new Error(`ledger shard write failed: ${begun.failed}`);
    return begun;
  }

  async #processor(record: ClaimedTransaction): Promise<PaymentProcessor> {
    const processor = (await this.processors.accounts())(String(record.processor_id));
    if (!processor) throw new Error(`transaction ${String(record.id)} names an unknown processor`);
    return processor;
  }

  #operation(op: OperationRow, record: ClaimedTransaction) {
    return {
      amount: op.amount,
      transactionId: op.transactionId,
      paymentType: record.payment_type === 'ach' ? ('ach' as const) : ('card' as const),
      idempotencyKey: op.key,
      claimedAt: op.createdAt,
    };
  }

  /**
   * Asks the processor once. Null when its answer did not come back and its record says it never
   * received the operation: the claim is released (the row or request may be sent again); an
   * answer that did not come back and cannot be looked up either throws, the claim kept.
   */
  async ask(op: OperationRow, record: ClaimedTransaction): Promise<OperationResult | null> {
    const processor = await this.#processor(record);
    try {
      return await processor[op.kind](this.#operation(op, record));
    } catch (err) {
      // It may or may not have been done: the processor's record says (as for a charge, claims.ts).
      const found = await processor.lookup(op.key, op.createdAt).catch(() => null);
      if (found !== null) return found;
      await this.shard.stub.releaseOperation(this.shard.identity, op.key);
      throw err;
    }
  }

  async settleAbandoned(op: OperationRow, record: ClaimedTransaction): Promise<void> {
    const processor = await this.#processor(record);
    const result = await processor.lookup(op.key, op.createdAt);
    if (result === null) {
      const released = await this.shard.stub.releaseOperation(this.shard.identity, op.key);
      if (released !== true) throw new Error(`ledger shard write failed: ${released.failed}`);
      return;
    }
    await this.#complete(op, result);
  }

  /** The answer to write for a claimed operation (an abandoned one settled here may be another request's: its own key, no address). */
  completion(op: OperationRow, result: OperationResult): OperationCompletion {
    const own = op.key === `${op.transactionId}:${op.kind}:${this.clientKey}`;
    return {
      key: op.key,
      query: this.query,
      result,
      now: isoTimestamp(this.clock()),
      expiredBefore: this.expiredBefore,
      idempotencyKey: op.key.slice(`${op.transactionId}:${op.kind}:`.length),
      ipAddress: own ? this.ipAddress : null,
      // Only this request's own operation gets its FluidPay details.
      ...(this.details && own ? { details: this.details } : {}),
      claimed: { transactionId: op.transactionId, kind: op.kind },
    };
  }

  async #complete(op: OperationRow, result: OperationResult): Promise<string> {
    const done = await this.shard.stub.completeOperation(this.shard.identity, this.completion(op, result));
    if ('failed' in done) throw new Error(`ledger shard write failed: ${done.failed}`);
    return done.answer;
  }
}
