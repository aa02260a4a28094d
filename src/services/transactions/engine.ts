/**
 * The transaction engine, shared by POST /api/transaction (one request) and the batch consumer
 * (a chunk of CSV rows): validate -> resolve the payment (card / ACH / vault) -> amounts ->
 * processor -> record. Work is shared across the requests of one call: one idempotency query,
 * one processor query, one bulk card-metadata call, one vault and surcharge lookup per distinct
 * value, and the new records written in one statement (a few for very large calls).
 *
 * Every problem with a request is a value (an `invalid` outcome with its result line); only
 * infrastructure failures (D1 down) throw, so that a batch chunk is retried as a whole.
 */
import type { Caller, Env } from '../../env';
import { requestFingerprint } from '../../lib/request-hash';
import { isoTimestamp, type Clock } from '../../lib/time';
import type {
  RowError,
  TransactionContext,
  TransactionOutcome,
  TransactionRecord,
  TransactionRequest,
} from '../../schemas/transaction-columns';
import {
  findTransaction,
  findTransactionsByIdempotencyKeys,
  insertTransactions,
  type StoredTransaction,
} from '../../storage/transactions';
import { transactionDepsFromEnv } from './deps';
import { Resolver, type Engine, type Prepared } from './payment-resolution';
import { merchantProcessors } from './processors/registry';
import { invalidRecord } from './records';
import { normaliseInput, validateTransaction, type ValidTransaction } from './validation';

export type { Engine } from './payment-resolution';

export async function processTransactions(
  env: Env,
  caller: Caller,
  requests: TransactionRequest[],
  context: TransactionContext,
  clock: Clock,
): Promise<TransactionOutcome[]> {
  return runTransactions({ env, caller, deps: transactionDepsFromEnv(env, caller), clock }, requests, context);
}

/** A merchant's transaction by id; null when unknown or another merchant's. */
export async function getTransaction(env: Env, merchantId: string, id: string): Promise<TransactionRecord | null> {
  return (await findTransaction(env.DB, merchantId, id))?.record ?? null;
}

/** `processTransactions` with its dependencies given (tests pass their own `deps`). */
export async function runTransactions(
  engine: Engine,
  requests: TransactionRequest[],
  context: TransactionContext,
): Promise<TransactionOutcome[]> {
  const { env, caller, clock } = engine;
  const now = clock();
  const createdAt = isoTimestamp(now);
  const prepared: Prepared[] = await Promise.all(
    requests.map(async (request) => {
      const input = normaliseInput(request.input);
      return { request, input, hash: await requestFingerprint(env.CARD_DATA_KEY, input) };
    }),
  );
  const outcomes = new Array<TransactionOutcome | undefined>(requests.length);
  const invalid = (p: Prepared, errors: RowError[]): TransactionOutcome => ({
    ok: false,
    reason: 'invalid',
    errors,
    record: invalidRecord(p.input, errors, {
      idempotencyKey: p.request.idempotencyKey,
      createdAt,
      context,
      userName: caller.merchantName,
    }),
  });
  const fromStored = (p: Prepared, stored: StoredTransaction): TransactionOutcome => {
    if (stored.requestHash === p.hash) return { ok: true, record: stored.record, replayed: true };
    const errors = [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }];
    // A batch row always gets a result line; only the API answers a bare conflict (409).
    if (context.source === 'batch') return invalid(p, errors);
    return { ok: false, reason: 'idempotency_conflict', errors, record: null };
  };

  // 1. Requests already recorded under their key are answered from D1, never charged again.
  const keys = [...new Set(prepared.map((p) => p.request.idempotencyKey))];
  const recorded = new Map(
    (await findTransactionsByIdempotencyKeys(env.DB, caller.merchantId, keys)).map((s) => [
      String(s.record.idempotency_key),
      s,
    ]),
  );
  const valid: { index: number; tx: ValidTransaction }[] = [];
  prepared.forEach((p, index) => {
    const stored = recorded.get(p.request.idempotencyKey);
    if (stored) {
      outcomes[index] = fromStored(p, stored);
      return;
    }
    // 2. Field validation, no I/O.
    const result = validateTransaction(p.input, now);
    if (result.ok) valid.push({ index, tx: result.value });
    else outcomes[index] = invalid(p, result.errors);
  });

  if (valid.length > 0) {
    // 3. Payment resolution, amounts and the processor, with lookups shared across requests.
    const processors = await merchantProcessors(env.DB, caller.merchantId, clock);
    const resolver = new Resolver(engine, processors, now, { createdAt, context });
    const resolutions = await resolver.resolveAll(
      valid.map(({ index, tx }) => ({ tx, prepared: prepared[index] as Prepared })),
    );

    // 4. One write for every new record; a key taken meanwhile by a concurrent run is answered from D1.
    const toInsert: StoredTransaction[] = [];
    resolutions.forEach((resolution, i) => {
      const { index } = valid[i] as { index: number };
      if (resolution.ok) toInsert.push(resolution.stored);
      else outcomes[index] = invalid(prepared[index] as Prepared, resolution.errors);
    });
    const inserted = await insertTransactions(env.DB, toInsert);
    const lost = toInsert.filter((s) => !inserted.has(String(s.record.id)));
    const winners = new Map(
      (
        await findTransactionsByIdempotencyKeys(
          env.DB,
          caller.merchantId,
          lost.map((s) => String(s.record.idempotency_key)),
        )
      ).map((s) => [String(s.record.idempotency_key), s]),
    );
    resolutions.forEach((resolution, i) => {
      if (!resolution.ok) return;
      const { index } = valid[i] as { index: number };
      const p = prepared[index] as Prepared;
      if (inserted.has(String(resolution.stored.record.id))) {
        outcomes[index] = { ok: true, record: resolution.stored.record, replayed: false };
        return;
      }
      const winner = winners.get(p.request.idempotencyKey);
      outcomes[index] = winner
        ? fromStored(p, winner)
        : invalid(p, [{ field: 'Idempotency-Key', msg: 'could not be recorded; retry the request' }]);
    });
  }

  return outcomes.map((outcome) => {
    if (!outcome) throw new Error('transaction engine left a request without an outcome');
    return outcome;
  });
}
