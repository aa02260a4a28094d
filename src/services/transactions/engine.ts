/**
 * The transaction engine, shared by POST /api/transaction (one request) and the batch consumer
 * (a chunk of CSV rows): validate -> resolve the payment (card / ACH / vault) -> amounts ->
 * claim the idempotency key -> processor -> record. Work is shared across the requests of one
 * call: one idempotency query, one processor query, one bulk card-metadata call, one vault and
 * surcharge lookup per distinct value, the claims written in one statement and their answers in
 * one more (a few for very large calls).
 *
 * Every problem with a request is a value (an `invalid` outcome with its result line; an
 * `in_progress` one when another attempt holds the key); only infrastructure failures (D1 down,
 * a processor call that failed) throw, so that a batch chunk is retried as a whole.
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
import type { ProcessorRecord } from '../../storage/processors';
import {
  findTransaction,
  findTransactionsByIdempotencyKeys,
  insertTransactions,
  type StoredTransaction,
} from '../../storage/transactions';
import {
  chargeClaims,
  isClaim,
  processorAccounts,
  settleClaims,
  takeoverInSeconds,
  type HeldClaim,
  type ProcessorAccounts,
} from './claims';
import { transactionDepsFromEnv } from './deps';
import { idempotencyCutoff } from './idempotency';
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

/** A merchant's transaction by id; null when unknown, another merchant's, or still a claim (no outcome yet). */
export async function getTransaction(env: Env, merchantId: string, id: string): Promise<TransactionRecord | null> {
  const stored = await findTransaction(env.DB, merchantId, id);
  return stored && !isClaim(stored) ? stored.record : null;
}

/** The merchant's records under `keys`, by key; with `expiredBefore`, API keys past the idempotency window are freed first. */
async function findByKeys(
  db: D1Database,
  merchantId: string,
  keys: string[],
  expiredBefore?: string,
): Promise<Map<string, StoredTransaction>> {
  const found = await findTransactionsByIdempotencyKeys(db, merchantId, keys, expiredBefore);
  return new Map(found.map((stored) => [String(stored.record.idempotency_key), stored]));
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
    // Past the idempotency window the hash is swept (''); a batch row's key still names one line of
    // one file, so a late redelivery of its chunk replays it. (API keys past the window are freed.)
    const sweptRowOfThisBatch =
      stored.requestHash === '' && context.source === 'batch' && stored.batchId === (context.batchId ?? null);
    if (stored.requestHash === p.hash || sweptRowOfThisBatch) return { ok: true, record: stored.record, replayed: true };
    const errors = [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }];
    // A batch row always gets a result line; only the API answers a bare conflict (409).
    if (context.source === 'batch') return invalid(p, errors);
    return { ok: false, reason: 'idempotency_conflict', errors, record: null };
  };

  // Another attempt holds the key and may be asking the processor: this one does nothing.
  const inProgress = (claim: StoredTransaction): TransactionOutcome => ({
    ok: false,
    reason: 'in_progress',
    errors: [{ field: 'Idempotency-Key', msg: 'is in use by a request that is still being processed; retry later' }],
    record: null,
    takeoverInSeconds: Math.max(1, takeoverInSeconds(claim, now)),
  });
  // Another body under a claimed key is a conflict already; the same body waits for the outcome.
  const answerFromRecord = (p: Prepared, stored: StoredTransaction): TransactionOutcome =>
    isClaim(stored) && stored.requestHash === p.hash ? inProgress(stored) : fromStored(p, stored);
  let processors: ProcessorRecord[] | null = null;
  const loadProcessors = async () => (processors ??= await merchantProcessors(env.DB, caller.merchantId, clock));
  let accounts: ProcessorAccounts | null = null;
  const loadAccounts = async () => (accounts ??= processorAccounts(env, await loadProcessors(), clock));

  // 1. Requests already recorded under their key are answered from D1, never charged again.
  const keys = [...new Set(prepared.map((p) => p.request.idempotencyKey))];
  const recorded = await findByKeys(env.DB, caller.merchantId, keys, idempotencyCutoff(now));
  // A claim whose holder crashed is settled from the processor's record first (claims.ts).
  const abandoned = [...recorded.values()].filter((stored) => isClaim(stored) && takeoverInSeconds(stored, now) === 0);
  if (abandoned.length > 0) {
    await settleClaims(env.DB, await loadAccounts(), abandoned);
    const abandonedKeys = abandoned.map((claim) => String(claim.record.idempotency_key));
    for (const key of abandonedKeys) recorded.delete(key);
    for (const [key, stored] of await findByKeys(env.DB, caller.merchantId, abandonedKeys)) recorded.set(key, stored);
  }
  const valid: { index: number; tx: ValidTransaction }[] = [];
  prepared.forEach((p, index) => {
    const stored = recorded.get(p.request.idempotencyKey);
    if (stored) {
      outcomes[index] = answerFromRecord(p, stored);
      return;
    }
    // 2. Field validation, no I/O.
    const result = validateTransaction(p.input, now);
    if (result.ok) valid.push({ index, tx: result.value });
    else outcomes[index] = invalid(p, result.errors);
  });

  if (valid.length > 0) {
    // 3. Payment resolution and amounts, with lookups shared across requests.
    const resolver = new Resolver(engine, await loadProcessors(), now, { createdAt, context });
    const resolutions = await resolver.resolveAll(
      valid.map(({ index, tx }) => ({ tx, prepared: prepared[index] as Prepared })),
    );

    // 4. Claim: every request's record written in one statement, in status `processing`, before
    // any processor is asked. A key another attempt claimed first is not charged here.
    const toClaim: { index: number; claim: HeldClaim }[] = [];
    resolutions.forEach((resolution, i) => {
      const { index } = valid[i] as { index: number };
      if (resolution.ok) toClaim.push({ index, claim: { stored: resolution.stored, charge: resolution.charge } });
      else outcomes[index] = invalid(prepared[index] as Prepared, resolution.errors);
    });
    const claimedIds = await insertTransactions(env.DB, toClaim.map(({ claim }) => claim.stored));
    const held = toClaim.filter(({ claim }) => claimedIds.has(String(claim.stored.record.id)));
    const lost = toClaim.filter(({ claim }) => !claimedIds.has(String(claim.stored.record.id)));

    // 5. The processor, once per claim held; the answers complete the claims in one statement.
    const done = await chargeClaims(env.DB, await loadAccounts(), held.map(({ claim }) => claim));
    const ours = new Map<string, StoredTransaction>();
    const reread: string[] = lost.map(({ claim }) => claim.charge.idempotencyKey);
    for (const { index, claim } of held) {
      const record = done.get(String(claim.stored.record.id));
      if (record) {
        outcomes[index] = { ok: true, record: record.record, replayed: false };
        ours.set(claim.charge.idempotencyKey, record);
      } else reread.push(claim.charge.idempotencyKey);
    }

    // 6. Keys taken by someone else (or twice in this call) are answered from their current record.
    const current = await findByKeys(env.DB, caller.merchantId, [...new Set(reread)].filter((key) => !ours.has(key)));
    for (const { index } of [...lost, ...held.filter(({ claim }) => !done.has(String(claim.stored.record.id)))]) {
      const p = prepared[index] as Prepared;
      const stored = ours.get(p.request.idempotencyKey) ?? current.get(p.request.idempotencyKey);
      outcomes[index] = stored
        ? answerFromRecord(p, stored)
        : invalid(p, [{ field: 'Idempotency-Key', msg: 'could not be recorded; retry the request' }]);
    }
  }

  return outcomes.map((outcome) => {
    if (!outcome) throw new Error('transaction engine left a request without an outcome');
    return outcome;
  });
}
