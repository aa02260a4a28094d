/**
 * Captures, voids and refunds in a ledger shard (docs/transactions.md, "Lifecycle"): each claimed
 * under its key before its processor is asked, then completed with the processor's answer. One
 * operation at a time per transaction, and every step here is synchronous between its checks and
 * its writes. A settlement run (also inside the shard) leaves out a transaction whose operation is
 * claimed and not answered (settlement.ts), so an operation's answer is never applied over a
 * settlement, and an operation is never claimed on a transaction a run has settled.
 */
import {
  answerFromStored,
  answerToStore,
  claimedTransaction,
  deleteOperation,
  findOperations,
  operationCountsOf,
  operationTargets,
  writeOperationCounts,
  MAX_OPERATIONS_PER_TRANSACTION,
  operationKeyRange,
  readMeta,
  surchargeRefunded,
  upgradeShardTables,
  type OperationBegin,
  type OperationCompleted,
  type OperationCompletion,
  type OperationRequest,
  type ShardIdentity,
} from '../../storage/ledger-shard';
import { packResultColumns, type TransactionRecord } from '../../schemas/transaction-columns';
import { applyOperation, checkOperation } from '../../services/transactions/lifecycle-rules';
import { pageRecords, type PageRecord, type ShardContext } from './reading';
import { OperationStep } from './operation-step';
import { withOperationDetails } from '../../services/transactions/operation-details';
// The receipt outbox's hooks live in services/receipts, so this file holds one call each.
import { operationReceipt } from '../../services/receipts/facts';
import { armReceipts } from '../../services/receipts/shard';

/**
 * Claims a capture, void or refund of one transaction (docs/transactions.md, "Lifecycle"): in one
 * synchronous step, the key's earlier answer, or the transaction's status and amount checked as they
 * are now (its page's settlement mark read in the same step) and the operation recorded as claimed,
 * before its processor is asked. One operation at a time per transaction: another one finds it
 * claimed and is told to ask again; a settlement run leaves it out until it is answered. A shard that
 * was never written holds no transaction: nothing is created for an id that names it.
 */
export async function beginOperation(shard: ShardContext, identity: ShardIdentity, request: OperationRequest): Promise<OperationBegin> {
  const [begun] = await beginOperations(shard, identity, [request]);
  if (!begun) throw new Error('a claim answered nothing');
  return begun;
}

/**
 * Many claims in one synchronous step and one write transaction (a batch chunk's rows): every page
 * read first (pages are written once; each read once for all), then what the checks read, a few
 * statements for the whole group (operation-step.ts), then each claim exactly as `beginOperation`
 * makes it, each seeing the claims before it, then the claims written together.
 */
export async function beginOperations(shard: ShardContext, identity: ShardIdentity, requests: readonly OperationRequest[]): Promise<OperationBegin[]> {
  const sql = shard.sql;
  if (!readMeta(sql)) return requests.map(() => ({ outcome: 'not_found' }) satisfies OperationBegin);
  upgradeShardTables(sql);
  // Reading a page may await (gzip): done first; what it is now, the checks and the claims below do not await.
  const found = await pageRecords(sql, identity, requests.map((request) => ({ id: request.transactionId, query: request.query })), shard.pages);
  return shard.storage.transactionSync(() => {
    const ids = requests.map((request) => request.transactionId);
    const step = new OperationStep(sql, identity.merchantId, { keys: requests.map((request) => request.key), ids, found, claims: true });
    const begun = requests.map((request, i) => claimOperationNow(sql, step, request, found[i] ?? null));
    step.flush();
    return begun;
  });
}

/** The checks and the claim of one operation, without awaiting, in the step's write transaction. */
function claimOperationNow(sql: SqlStorage, step: OperationStep, request: OperationRequest, found: PageRecord | null): OperationBegin {
  // A transaction's operations are found by their keys' range (operationKeyRange): a key of another form would be missed.
  if (!request.key.startsWith(operationKeyRange(request.transactionId)[0])) throw new Error("an operation's key must begin with its transaction's id and a colon");
  const earlier = step.operation(request.key);
  if (earlier?.answer != null) return { outcome: 'answered', answer: answerFromStored(earlier.answer, found?.stored.record ?? null), requestHash: earlier.requestHash } satisfies OperationBegin;
  const now = step.current(request.transactionId, found, request.expiredBefore);
  if (!now || now.stored.record.status === 'processing') return { outcome: 'not_found' } satisfies OperationBegin;
  const pending = step.pendingOf(request.transactionId);
  if (pending) {
    return pending.createdAt < request.staleBefore
      ? ({ outcome: 'abandoned', operation: pending, record: claimedTransaction(now.stored.record) } satisfies OperationBegin)
      : ({ outcome: 'in_progress', since: pending.createdAt } satisfies OperationBegin);
  }
  const counts = step.countsOf(request.transactionId);
  if (counts.operations >= MAX_OPERATIONS_PER_TRANSACTION) {
    const message = `transaction has had ${MAX_OPERATIONS_PER_TRANSACTION} captures, voids and refunds, the most one transaction may have`;
    return { outcome: 'refused', reason: 'limit', message } satisfies OperationBegin;
  }
  const check = checkOperation(request.kind, now.stored.record, now.amountRefunded, request.amount);
  if (!check.ok) return { outcome: 'refused', reason: check.reason, message: check.message } satisfies OperationBegin;
  // A claim step writes no answers: the refunds answered so far are as SQLite holds them.
  const surchargeProblem = refundSurchargeProblem(sql, request, now.stored.record);
  if (surchargeProblem) return { outcome: 'refused', reason: 'surcharge', message: surchargeProblem } satisfies OperationBegin;
  const operation = {
    key: request.key,
    transactionId: request.transactionId,
    kind: request.kind,
    requestHash: request.requestHash,
    amount: check.amount,
    refundId: request.kind === 'refund' ? refundTransactionId(request.transactionId, counts.refunds + 1) : null,
    createdAt: request.now,
    answer: null,
  };
  step.claim(operation, counts);
  return { outcome: 'claimed', operation, record: claimedTransaction(now.stored.record) } satisfies OperationBegin;
}

/**
 * Applies a claimed operation's processor answer: the transaction's new state, the refund it made,
 * and the answer kept under the key; answers that answer (JSON). An operation answered already
 * keeps its first answer. Everything that awaits (registering in the settlement index, reading the
 * page) comes first; the record is then read as it is now and written in one synchronous step.
 */
export async function completeOperation(
  shard: ShardContext,
  identity: ShardIdentity,
  completion: OperationCompletion,
  indexed: (now: string) => Promise<void>,
): Promise<OperationCompleted> {
  const [completed] = await completeOperations(shard, identity, [completion], indexed);
  if (!completed) throw new Error('an answer answered nothing');
  return completed;
}

/**
 * Many claimed operations' answers in one synchronous step and one write transaction (a batch
 * chunk's rows): the settlement index and every page first, then what the answers read, a few
 * statements for the whole group, then each answer exactly as `completeOperation` applies it, each
 * seeing the states the ones before it wrote, written together, then the receipts they queued armed once.
 */
export async function completeOperations(
  shard: ShardContext,
  identity: ShardIdentity,
  completions: readonly OperationCompletion[],
  indexed: (now: string) => Promise<void>,
): Promise<OperationCompleted[]> {
  upgradeShardTables(shard.sql);
  const sql = shard.sql;
  const keys = completions.map((completion) => completion.key);
  // What each claim acts on, as the caller says (checked in the step) or read (its row is read whole
  // again in the step below, after the awaits); one the caller names is taken as still open.
  const claims = completions.every((completion) => completion.claimed) ? null : operationTargets(sql, keys);
  const wants: { id: string; query: OperationCompletion['query'] }[] = [];
  let money: string | null = null;
  for (const completion of completions) {
    const claimed = completion.claimed ? { ...completion.claimed, open: true } : claims?.get(completion.key);
    if (!claimed) throw new Error('no such operation was claimed');
    // Money awaiting settlement is about to be written (a capture, a refund): the shard is in its
    // merchant's settlement index first, so no run can miss it.
    if (claimed.open && completion.result.response === 'approved' && claimed.kind !== 'void') money ??= completion.now;
    wants.push({ id: claimed.transactionId, query: completion.query });
  }
  if (money !== null) await indexed(money);
  // Every page is read, an operation answered already too: its answer is kept against its page record (operation-answers.ts).
  const foundOf: (PageRecord | null)[] = await pageRecords(sql, identity, wants, shard.pages);
  const answered = shard.storage.transactionSync(() => {
    const step = new OperationStep(sql, identity.merchantId, { keys, ids: wants.map((want) => want.id), found: foundOf, claims: false });
    const done = completions.map((completion, i) => answerOperationNow(step, completion, foundOf[i] ?? null));
    step.flush();
    return done;
  });
  const receipts = answered.flatMap((a) => (a.receipt ? [a.receipt] : []));
  await armReceipts(shard.storage, receipts.length > 0 ? [{ page: null, entries: receipts }] : []);
  return answered.map(({ answer, current, currentIsAnswer, packed }) =>
    packed ? { answer, packed } : current ? { answer, current } : currentIsAnswer ? { answer, currentIsAnswer } : { answer },
  );
}

/** One claimed operation's answer applied, without awaiting, in the step's write transaction. */
function answerOperationNow(
  step: OperationStep,
  completion: OperationCompletion,
  found: PageRecord | null,
): OperationCompleted & { receipt: ReturnType<typeof operationReceipt> } {
  const claimed = step.operation(completion.key);
  if (!claimed) throw new Error('no such operation was claimed');
  const named = completion.claimed;
  if (named && (named.transactionId !== claimed.transactionId || named.kind !== claimed.kind)) throw new Error('an answer named another operation than the one claimed under its key');
  // Another call may have answered this operation while this one awaited.
  if (claimed.answer !== null) return { answer: answerFromStored(claimed.answer, found?.stored.record ?? null), receipt: null };
  const approved = completion.result.response === 'approved';
  const now = step.current(claimed.transactionId, found, completion.expiredBefore);
  if (!now) throw new Error('the transaction of a claimed operation is gone');
  const lifecycle = applyOperation(claimed.kind, now.stored.record, now.amountRefunded, claimed.amount, completion.result, {
    now: completion.now,
    refundId: claimed.refundId,
    idempotencyKey: completion.idempotencyKey,
    ipAddress: completion.ipAddress,
  });
  // FluidPay's capture and refund fields, applied to what is written.
  const applied = { ...lifecycle, ...withOperationDetails(claimed.kind, lifecycle, completion.details, approved) };
  // An approved refund or void of a transaction with email_receipt sends one, queued in the same write below.
  const receipt = approved ? operationReceipt(claimed.kind, now.stored, { refund: applied.refund, amount: claimed.amount, authCode: completion.result.authCode, at: completion.now }) : null;
  const made =
    claimed.kind === 'refund' || approved
      ? { status: claimed.kind === 'refund' ? 201 : 200, record: view(claimed.kind === 'refund' ? applied.refund : applied.original, claimed.kind === 'refund' ? 0 : applied.amountRefunded) }
      : { status: 402, message: `${claimed.kind} declined by the processor: ${completion.result.processorResponseText}` };
  // An approved capture or void asked for packed: its JSON is made only if what is kept needs it.
  const packed = completion.packed && approved && claimed.kind !== 'refund' ? { record: JSON.stringify(packResultColumns(applied.original)), amountRefunded: applied.amountRefunded } : null;
  let json: string | null = null;
  const answer = () => (json ??= JSON.stringify(made));
  // Kept as what differs from the page record when that rebuilds it exactly (operation-answers.ts).
  const stored = answerToStore(answer, found?.stored.record ?? null, made);
  // An approved capture's or void's answer is kept in the block its claim is in, once a transaction
  // (operation-blocks.ts): the state written below names it, and no row is written for it.
  const kept = approved && claimed.kind !== 'refund' && !now.blockOp ? step.keepInBlock(completion.key, stored) : null;
  if (approved) {
    step.writeState(
      {
        stored: { ...now.stored, record: applied.original },
        original: true,
        amountRefunded: applied.amountRefunded,
        unsettled: applied.unsettled,
        capturedAt: applied.original.captured_at === null ? null : String(applied.original.captured_at),
        settledOn: now.settledOn,
        ...(packed ? { resultJson: packed.record } : {}),
        ...(kept ? { blockOp: kept } : {}),
      },
      completion.now,
    );
  }
  if (applied.refund) {
    step.writeState(
      {
        stored: { ...now.stored, record: applied.refund, requestHash: '', batchId: null, line: null },
        original: false,
        amountRefunded: 0,
        unsettled: approved,
        capturedAt: approved ? completion.now : null,
        settledOn: null,
      },
      completion.now,
    );
  }
  if (!kept) step.answer(completion.key, stored);
  if (receipt) step.queueReceipt(receipt);
  if (packed) return { answer: '', packed, receipt };
  // The transaction as written (as it was, when the processor declined): what the search index takes
  // next. An approved capture's or void's answer is exactly that record, so the caller reads it
  // there; a declined one changes nothing to index, so it is not sent.
  if (claimed.kind !== 'refund') return { answer: answer(), receipt, ...(approved ? { currentIsAnswer: true as const } : {}) };
  const current = approved ? { record: applied.original, amountRefunded: applied.amountRefunded } : { record: now.stored.record, amountRefunded: now.amountRefunded };
  return { answer: answer(), receipt, current };
}

/**
 * A refund returns at most the surcharge that was charged, in total across its refunds: checked in
 * the claim's synchronous step, against the refunds answered so far (one operation at a time per
 * transaction, so none is in flight). The message, or null when the refund's surcharge fits.
 */
function refundSurchargeProblem(sql: SqlStorage, request: OperationRequest, record: TransactionRecord): string | null {
  if (request.kind !== 'refund' || !request.surcharge) return null;
  const charged = Number(record.service_fee ?? 0);
  const returned = surchargeRefunded(sql, request.transactionId);
  if (returned + request.surcharge <= charged) return null;
  return `surcharge: must be at most the surcharge not yet refunded (${Math.max(charged - returned, 0)} of the ${charged} charged; earlier refunds returned ${returned})`;
}

/** Drops a claimed operation its processor never received (the key may be sent again). */
export function releaseOperation(shard: ShardContext, key: string): true {
  upgradeShardTables(shard.sql);
  if (!readMeta(shard.sql)) return true;
  // A claim stays counted once released (its refund number is not given again): a transaction
  // counted by its rows (fewer than COUNTS_ROW_FROM) gets its counts row first, this claim in it.
  const claimed = findOperations(shard.sql, [key]).get(key);
  if (claimed && claimed.answer === null) {
    const counts = operationCountsOf(shard.sql, [claimed.transactionId]).get(claimed.transactionId);
    if (counts && !counts.stored) writeOperationCounts(shard.sql, new Map([[claimed.transactionId, counts]]));
  }
  deleteOperation(shard.sql, key);
  return true;
}

/** A refund's id: the original's (so it names the same shard) and its number among the original's refunds. */
export function refundTransactionId(originalId: string, n: number): string {
  return `txn_r${originalId.slice(4)}x${n}`;
}

function view(record: TransactionRecord | null, amountRefunded: number): Record<string, unknown> {
  return { ...record, amount_refunded: amountRefunded };
}
