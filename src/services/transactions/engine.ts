/**
 * The transaction engine, shared by POST /api/transaction (one request) and the batch consumer
 * (a chunk of CSV rows): validate -> resolve the payment (card / ACH / vault) -> amounts ->
 * claim the idempotency key -> processor -> record. Work is shared across the requests of one
 * call: one ledger lookup, one processor query, one bulk card-metadata call, one vault and
 * surcharge lookup per distinct value, the claims written in one call to the ledger shard and their
 * answers in one more (ledger.ts says which shard).
 *
 * Every problem with a request is a value (an `invalid` outcome with its result line; an
 * `in_progress` one when another attempt holds the key); only infrastructure failures (D1 down,
 * a processor call that failed) throw, so that a batch chunk is retried as a whole.
 */
import type { Env } from '../../env';
import { requestFingerprint } from '../../lib/request-hash';
import { isoTimestamp, type Clock } from '../../lib/time';
import type {
  RowError,
  TransactionContext,
  TransactionOutcome,
  TransactionRecord,
  TransactionRequest,
} from '../../schemas/transaction-columns';
import type { StoredTransaction } from '../../storage/ledger-shard';
import { findMerchantBatch } from '../../storage/batches';
import { hasLedgerArchive, ledgerArchiveKey } from '../../storage/ledger-archive';
import type { ProcessorRecord } from '../../storage/processors';
import {
  chargeClaims,
  isClaim,
  processorAccounts,
  settleClaims,
  takeoverInSeconds,
  type HeldClaim,
  type ProcessorAccounts,
} from './claims';
import { Ledger, archivedBy, chunkPage, lastIssuedDay, parseTransactionId, shardFor } from './ledger';
import { Resolver, type Engine, type Prepared } from './payment-resolution';
import { merchantProcessors } from './processors/registry';
import { authorizationExpiryDays, expiresBefore } from './lifecycle-rules';
import { invalidRecord } from './records';
import { normaliseInput, validateTransaction, type ValidTransaction } from './validation';
import { cardRefusals, recordCardDeclines } from '../declines/card-guard';

export type { Engine } from './payment-resolution';

export type TransactionLookup =
  | { ok: true; record: TransactionRecord; amountRefunded: number }
  | { ok: false; reason: 'not_found' }
  /** Past TRANSACTION_RETENTION_DAYS: the shard was archived to R2 under `archive`. */
  | { ok: false; reason: 'archived'; archive: string };

/** A merchant's transaction by id, as it is now: its record; not found when unknown, another merchant's, or still a claim. */
export async function getTransaction(env: Env, merchantId: string, id: string, clock: Clock): Promise<TransactionLookup> {
  const now = clock();
  const located = await locateTransaction(env, merchantId, id, now);
  if (!located.ok) return located;
  const { shard, query } = located;
  const current = { expiredBefore: expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS)) };
  const stored = (await shard.stub.find(shard.identity, { ...query, current })).find((s) => s.record.id === id);
  return stored && !isClaim(stored) ? { ok: true, record: stored.record, amountRefunded: stored.amountRefunded ?? 0 } : { ok: false, reason: 'not_found' };
}

export type TransactionLocation =
  | { ok: true; shard: ReturnType<typeof shardFor>; query: { ids: string[]; exact: string[]; floor: string[] } }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'archived'; archive: string };

/**
 * The shard that holds a merchant's transaction (its id names it) and the page its record is on.
 * An id that names what cannot exist is not found before any object is touched: a malformed one, a
 * day before the service or more than a year ahead (parseTransactionId, lastIssuedDay), a batch the merchant
 * never uploaded. Past retention, "archived" only when the shard's archive is in R2; otherwise the
 * shard is asked (its archive may not have begun; a shard never written answers not found and
 * stays empty).
 */
export async function locateTransaction(env: Env, merchantId: string, id: string, now: Date): Promise<TransactionLocation> {
  const named = parseTransactionId(id);
  // A refund lives in its original's shard, on no page of its own.
  const parsed = named?.kind === 'refund' ? named.original : named;
  if (!parsed || parsed.day > lastIssuedDay(now)) return { ok: false, reason: 'not_found' };
  let shard;
  if (parsed.kind === 'batch') {
    // The batch index says whose batch it is and when its shard's period began. Its row is deleted
    // after retention; the shard's archive then says whether the batch's rows were archived.
    const batch = await findMerchantBatch(env.DB, merchantId, parsed.batchId);
    const key = { kind: 'batch' as const, merchantId, batchId: parsed.batchId };
    if (!batch) {
      const name = shardFor(env, key, `${parsed.day}T00:00:00.000Z`).identity.name;
      const archivedSince = archivedBy(env, `${parsed.day}T00:00:00.000Z`, new Date(now.getTime() - 86_400_000));
      return archivedSince && (await hasLedgerArchive(env.FILES, name)) ? archived(name) : { ok: false, reason: 'not_found' };
    }
    shard = shardFor(env, key, batch.created_at);
  } else {
    shard = shardFor(env, { kind: 'api', merchantId, day: parsed.day, sub: parsed.sub }, `${parsed.day}T00:00:00.000Z`);
  }
  // Past retention the shard was archived (the answer says where, without waking it), or is about to be.
  if (archivedBy(env, shard.identity.periodStart, now) && (await hasLedgerArchive(env.FILES, shard.identity.name))) return archived(shard.identity.name);
  const originalId = named?.kind === 'refund' ? named.originalId : id;
  const query =
    named?.kind === 'refund'
      ? { ids: [id], exact: [], floor: [] }
      : parsed.kind === 'batch'
        ? { ids: [id], exact: [], floor: [chunkPage(parsed.line)] }
        : { ids: [id], exact: [originalId], floor: [] };
  return { ok: true, shard, query };
}

function archived(shardName: string): { ok: false; reason: 'archived'; archive: string } {
  return { ok: false, reason: 'archived', archive: ledgerArchiveKey(shardName) };
}

/**
 * One call of the engine with its dependencies given: services/recorded.ts builds the real ones
 * and indexes what the call recorded; tests pass their own `deps`.
 */
export async function runTransactions(
  engine: Engine,
  requests: TransactionRequest[],
  context: TransactionContext,
): Promise<TransactionOutcome[]> {
  const run = new EngineCall(engine, context);
  return run.process(requests);
}

/**
 * One call of the engine, step by step: fingerprint the requests, answer those already recorded
 * (settling claims abandoned by a crashed attempt first), validate, resolve payments and amounts,
 * claim the keys in the ledger, charge each claim once, and answer keys taken by someone else.
 */
class EngineCall {
  readonly #engine: Engine;
  readonly #context: TransactionContext;
  readonly #now: Date;
  readonly #createdAt: string;
  readonly #ledger: Ledger;
  #processors: ProcessorRecord[] | null = null;
  #accounts: ProcessorAccounts | null = null;

  constructor(engine: Engine, context: TransactionContext) {
    this.#engine = engine;
    this.#context = context;
    this.#now = engine.clock();
    this.#createdAt = isoTimestamp(this.#now);
    this.#ledger = new Ledger(engine.env, engine.caller.merchantId, context, this.#now, engine.caller.apiShards);
  }

  async process(requests: TransactionRequest[]): Promise<TransactionOutcome[]> {
    const prepared = await this.#fingerprint(requests);
    const outcomes = new Array<TransactionOutcome | undefined>(requests.length);

    // 1. Requests already recorded under their key are answered from the ledger, never charged again.
    const recorded = await this.#recorded(prepared);
    // 2. Field validation, no I/O.
    const valid: { index: number; tx: ValidTransaction }[] = [];
    prepared.forEach((p, index) => {
      const stored = recorded.get(p.request.idempotencyKey);
      if (stored) {
        outcomes[index] = this.#answerFromRecord(p, stored);
        return;
      }
      const result = validateTransaction(p.input, this.#now, this.#context.source);
      if (result.ok) valid.push({ index, tx: result.value });
      else outcomes[index] = this.#invalid(p, result.errors);
    });
    if (valid.length === 0) return this.#finish(outcomes);

    // 3. Payment resolution and amounts, with lookups shared across requests.
    const toClaim = await this.#refuseRetriedCards(prepared, await this.#resolve(prepared, valid, outcomes), outcomes);
    // 4. Claim: every request's record written in one call to its shard, in status `processing`,
    // before any processor is asked. A key another attempt claimed first is not charged here.
    const claimedIds = await this.#ledger.claim(toClaim.map(({ claim }) => claim.stored));
    // Ids are made from keys, so a key sent twice in one call is held once: by its first request.
    const holders = new Set<string>();
    const held = toClaim.filter(({ claim }) => {
      const id = String(claim.stored.record.id);
      if (!claimedIds.has(id) || holders.has(id)) return false;
      holders.add(id);
      return true;
    });
    const lost = toClaim.filter((entry) => !held.includes(entry));
    // 5. The processor, once per claim held; the answers complete the claims in one call.
    const done = await chargeClaims(this.#ledger, await this.#loadAccounts(), held.map(({ claim }) => claim));
    await this.#rememberDeclines(held.map(({ claim }) => ({ charge: claim.charge, record: done.get(String(claim.stored.record.id))?.record })));
    const ours = new Map<string, StoredTransaction>();
    const unanswered: { index: number; claim: HeldClaim }[] = [...lost];
    for (const entry of held) {
      const record = done.get(String(entry.claim.stored.record.id));
      if (record) {
        outcomes[entry.index] = { ok: true, record: record.record, replayed: false };
        ours.set(entry.claim.charge.idempotencyKey, record);
      } else unanswered.push(entry);
    }
    // 6. Keys taken by someone else (or twice in this call) are answered from their current record.
    await this.#answerTaken(prepared, unanswered, ours, outcomes);
    return this.#finish(outcomes);
  }

  async #fingerprint(requests: TransactionRequest[]): Promise<Prepared[]> {
    const key = this.#engine.env.CARD_DATA_KEY;
    return Promise.all(
      requests.map(async (request) => {
        const input = normaliseInput(request.input);
        // A batch row's key names one line of one file: no fingerprint is kept for it.
        const hash = this.#context.source === 'batch' ? '' : await requestFingerprint(key, input);
        return { request, input, hash };
      }),
    );
  }

  /** The records and claims under the requests' keys; claims left by a crashed attempt are settled first. */
  async #recorded(prepared: Prepared[]): Promise<Map<string, StoredTransaction>> {
    const keys = [...new Set(prepared.map((p) => p.request.idempotencyKey))];
    const recorded = await this.#ledger.find(keys);
    const abandoned = [...recorded.values()].filter((stored) => isClaim(stored) && takeoverInSeconds(stored, this.#now) === 0);
    if (abandoned.length === 0) return recorded;
    await settleClaims(this.#ledger, await this.#loadAccounts(), abandoned);
    const abandonedKeys = abandoned.map((claim) => String(claim.record.idempotency_key));
    for (const key of abandonedKeys) recorded.delete(key);
    for (const [key, stored] of await this.#ledger.find(abandonedKeys)) recorded.set(key, stored);
    return recorded;
  }

  async #resolve(
    prepared: Prepared[],
    valid: { index: number; tx: ValidTransaction }[],
    outcomes: (TransactionOutcome | undefined)[],
  ): Promise<{ index: number; claim: HeldClaim }[]> {
    const ids = new Map<TransactionRequest, string>();
    await Promise.all(
      valid.map(async ({ index }) => {
        const { request } = prepared[index] as Prepared;
        ids.set(request, await this.#ledger.newId(request.idempotencyKey, request.line));
      }),
    );
    const resolver = new Resolver(this.#engine, await this.#loadProcessors(), this.#now, {
      createdAt: this.#createdAt,
      context: this.#context,
      idFor: (request) => {
        const id = ids.get(request);
        if (id === undefined) throw new Error('no transaction id was made for a request');
        return id;
      },
    });
    const resolutions = await resolver.resolveAll(valid.map(({ index, tx }) => ({ tx, prepared: prepared[index] as Prepared })));
    const toClaim: { index: number; claim: HeldClaim }[] = [];
    resolutions.forEach((resolution, i) => {
      const { index } = valid[i] as { index: number };
      if (resolution.ok) toClaim.push({ index, claim: { stored: resolution.stored, charge: resolution.charge } });
      else outcomes[index] = this.#invalid(prepared[index] as Prepared, resolution.errors);
    });
    return toClaim;
  }

  /** Attempts the card networks forbid (a never-retry decline, too many retries: declines/card-guard.ts) are refused before any claim. */
  async #refuseRetriedCards(prepared: Prepared[], toClaim: { index: number; claim: HeldClaim }[], outcomes: (TransactionOutcome | undefined)[]) {
    const refusals = await cardRefusals(this.#engine.env, this.#engine.caller.merchantId, toClaim.map(({ claim }) => claim.charge), this.#now);
    return refusals.size === 0 ? toClaim : toClaim.filter(({ index }, i) => {
      const errors = refusals.get(i);
      if (errors) outcomes[index] = this.#invalid(prepared[index] as Prepared, errors);
      return !errors;
    });
  }

  /** The declines are remembered for the rule above; a failure to remember is logged, never loses the answers. */
  async #rememberDeclines(answered: Parameters<typeof recordCardDeclines>[2]): Promise<void> {
    try {
      await recordCardDeclines(this.#engine.env, this.#engine.caller.merchantId, answered, this.#now);
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', event: 'card_declines_not_recorded', message: err instanceof Error ? err.message.slice(0, 200) : 'unknown' }));
    }
  }

  async #answerTaken(
    prepared: Prepared[],
    unanswered: { index: number; claim: HeldClaim }[],
    ours: Map<string, StoredTransaction>,
    outcomes: (TransactionOutcome | undefined)[],
  ): Promise<void> {
    if (unanswered.length === 0) return;
    const keys = [...new Set(unanswered.map(({ claim }) => claim.charge.idempotencyKey))].filter((key) => !ours.has(key));
    const current = await this.#ledger.find(keys);
    for (const { index } of unanswered) {
      const p = prepared[index] as Prepared;
      const stored = ours.get(p.request.idempotencyKey) ?? current.get(p.request.idempotencyKey);
      // No record and no claim: the claim was given back (a request on the other side of midnight
      // held the key too). Nothing was charged; the retry finds whichever claim stayed.
      outcomes[index] = stored ? this.#answerFromRecord(p, stored) : this.#inProgress(null);
    }
  }

  /** Whether a stored transaction is this request's: the same fingerprint, or (batch) the same line of this batch. */
  #sameRequest(p: Prepared, stored: StoredTransaction): boolean {
    if (this.#context.source === 'batch') return stored.batchId === (this.#context.batchId ?? null);
    return stored.requestHash === p.hash;
  }

  /** A request whose key is taken: the recorded answer, a conflict, or "in progress" while the holder may be charging. */
  #answerFromRecord(p: Prepared, stored: StoredTransaction): TransactionOutcome {
    if (this.#sameRequest(p, stored)) {
      if (isClaim(stored)) return this.#inProgress(stored);
      return { ok: true, record: stored.record, replayed: true };
    }
    const errors = [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }];
    // A batch row always gets a result line; only the API answers a bare conflict (409).
    if (this.#context.source === 'batch') return this.#invalid(p, errors);
    return { ok: false, reason: 'idempotency_conflict', errors, record: null };
  }

  /** Another attempt holds the key and may be asking the processor: this one does nothing. */
  #inProgress(claim: StoredTransaction | null): TransactionOutcome {
    return {
      ok: false,
      reason: 'in_progress',
      errors: [{ field: 'Idempotency-Key', msg: 'is in use by a request that is still being processed; retry later' }],
      record: null,
      takeoverInSeconds: claim ? Math.max(1, takeoverInSeconds(claim, this.#now)) : 1,
    };
  }

  #invalid(p: Prepared, errors: RowError[]): TransactionOutcome {
    return {
      ok: false,
      reason: 'invalid',
      errors,
      record: invalidRecord(p.input, errors, {
        idempotencyKey: p.request.idempotencyKey,
        createdAt: this.#createdAt,
        context: this.#context,
        userName: this.#engine.caller.merchantName,
      }),
    };
  }

  async #loadProcessors(): Promise<ProcessorRecord[]> {
    const given = this.#context.processors;
    return (this.#processors ??= given ? [...given] : await merchantProcessors(this.#engine.env.DB, this.#engine.caller.merchantId, this.#engine.clock));
  }

  async #loadAccounts(): Promise<ProcessorAccounts> {
    return (this.#accounts ??= processorAccounts(this.#engine.env, await this.#loadProcessors(), this.#engine.clock));
  }

  #finish(outcomes: (TransactionOutcome | undefined)[]): TransactionOutcome[] {
    return outcomes.map((outcome) => {
      if (!outcome) throw new Error('transaction engine left a request without an outcome');
      return outcome;
    });
  }
}
