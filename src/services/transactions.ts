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
import type { Caller, Env } from '../env';
import { mapWithConcurrency } from '../lib/concurrency';
import { randomId } from '../lib/crypto';
import { isExpired, parseExpiry, type Expiry } from '../lib/expiry';
import { requestFingerprint } from '../lib/request-hash';
import type { Clock } from '../lib/time';
import { isoTimestamp } from '../lib/time';
import type {
  RowError,
  TransactionContext,
  TransactionInput,
  TransactionOutcome,
  TransactionRecord,
  TransactionRequest,
} from '../schemas/transaction';
import type { ProcessorRecord } from '../storage/processors';
import {
  findTransaction,
  findTransactionsByIdempotencyKeys,
  insertTransactions,
  type StoredTransaction,
} from '../storage/transactions';
import { idempotencyCutoff } from './idempotency';
import { implementationOf, merchantProcessors, pickProcessor } from './processors/registry';
import { computeAmounts, needsSurchargeRule, type Amounts, type SurchargeExemption } from './transaction-amounts';
import {
  transactionDepsFromEnv,
  type CardMetadata,
  type SurchargePolicy,
  type SurchargeRegion,
  type TransactionDeps,
  type VaultCustomer,
  type VaultResolution,
} from './transaction-deps';
import { invalidRecord, processedRecord, type ProcessedTransaction, type ResolvedPayment } from './transaction-records';
import { isAmex, normaliseInput, validateTransaction, type ValidTransaction } from './transaction-validation';

/** Requests resolved at once: bounds concurrent BIN, vault and surcharge lookups. */
const CONCURRENCY = 16;

export interface Engine {
  env: Env;
  caller: Caller;
  deps: TransactionDeps;
  clock: Clock;
}

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

interface Prepared {
  request: TransactionRequest;
  input: TransactionInput;
  hash: string;
}

type Resolution = { ok: true; stored: StoredTransaction } | { ok: false; errors: RowError[] };

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
    const sweptRowOfThisBatch = stored.requestHash === '' && context.source === 'batch' && stored.batchId === (context.batchId ?? null);
    if (stored.requestHash === p.hash || sweptRowOfThisBatch) return { ok: true, record: stored.record, replayed: true };
    const errors = [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }];
    // A batch row always gets a result line; only the API answers a bare conflict (409).
    if (context.source === 'batch') return invalid(p, errors);
    return { ok: false, reason: 'idempotency_conflict', errors, record: null };
  };

  // 1. Requests already recorded under their key are answered from D1, never charged again.
  const keys = [...new Set(prepared.map((p) => p.request.idempotencyKey))];
  const recorded = new Map(
    (await findTransactionsByIdempotencyKeys(env.DB, caller.merchantId, keys, idempotencyCutoff(now))).map((s) => [
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

/** A payment as the request names it; a card still lacks its metadata (asked for in bulk). */
type PaymentDraft = (
  | { kind: 'card'; number: string; expiry: Expiry; cvc: string | null }
  | Extract<ResolvedPayment, { kind: 'ach' }>
) & {
  method: ProcessedTransaction['paymentMethod'];
  customer: VaultCustomer | null;
};

interface VaultReference {
  customerId: string;
  paymentMethodId: string | null;
  paymentMethodType: 'card' | 'ach' | null;
}

const vaultKey = (ref: VaultReference) => JSON.stringify([ref.customerId, ref.paymentMethodId, ref.paymentMethodType]);
// Card metadata holds no card number (its `bin` is the displayed prefix), so it can be part of a key.
const surchargeKey = (q: SurchargeQuestion) => JSON.stringify([q.card, q.region.country, q.region.state]);

const NO_SURCHARGE: SurchargePolicy = { allowed: false, maxRateBps: null };

interface SurchargeQuestion {
  card: CardMetadata;
  region: SurchargeRegion;
}

interface Item {
  tx: ValidTransaction;
  prepared: Prepared;
}

/**
 * Resolves the valid requests of one call in phases, each asking its dependency once per distinct
 * value: vault references (concurrently), card metadata (one bulk call), surcharge rules
 * (concurrently); then amounts and the processor, request by request.
 */
class Resolver {
  readonly #engine: Engine;
  readonly #processors: ProcessorRecord[];
  readonly #now: Date;
  readonly #meta: { createdAt: string; context: TransactionContext };

  constructor(
    engine: Engine,
    processors: ProcessorRecord[],
    now: Date,
    meta: { createdAt: string; context: TransactionContext },
  ) {
    this.#engine = engine;
    this.#processors = processors;
    this.#now = now;
    this.#meta = meta;
  }

  async resolveAll(items: Item[]): Promise<Resolution[]> {
    const { deps } = this.#engine;

    // Vault references, once each, in one query.
    const references = new Map<string, VaultReference>();
    for (const { tx } of items) if (tx.source.kind === 'vault') references.set(vaultKey(tx.source), tx.source);
    const vaultAnswers = await deps.resolveVaultPaymentMethods(
      [...references.values()].map((ref) => ({
        customerId: ref.customerId,
        ...(ref.paymentMethodId !== null ? { paymentMethodId: ref.paymentMethodId } : {}),
        ...(ref.paymentMethodType !== null ? { paymentMethodType: ref.paymentMethodType } : {}),
      })),
    );
    const vault = new Map([...references.keys()].map((key, i) => [key, vaultAnswers[i] as VaultResolution]));
    const drafts = items.map(({ tx }) => {
      const errors: RowError[] = [];
      return { draft: this.#draft(tx, errors, vault), errors };
    });

    // Card metadata for every card of the call, in one call.
    const numbers = [...new Set(drafts.flatMap(({ draft }) => (draft?.kind === 'card' ? [draft.number] : [])))];
    const metadata = await deps.cardMetadata(numbers);
    const cards = new Map(numbers.map((number, i) => [number, metadata[i] as CardMetadata]));
    const payments = drafts.map(({ draft }): ResolvedPayment | null => {
      if (!draft) return null;
      if (draft.kind === 'ach') {
        const { accountNumber, routingNumber, accountType, secCode } = draft;
        return { kind: 'ach', accountNumber, routingNumber, accountType, secCode };
      }
      // The lookup answers every card; the fallback only satisfies the type checker.
      const card: CardMetadata = cards.get(draft.number) ?? {
        bin: draft.number.slice(0, 6),
        payment_method_type: 'card',
        matched_length: 0,
      };
      return { kind: 'card', number: draft.number, expiry: draft.expiry, cvc: draft.cvc, card };
    });

    // Surcharge rules, once per distinct (card metadata, region).
    const questions = new Map<string, SurchargeQuestion>();
    const plans = items.map(({ tx }, i) => {
      const draft = drafts[i]?.draft;
      const payment = payments[i];
      if (!draft || !payment) return null;
      const plan = this.#surchargePlan(tx, draft, payment);
      if (plan.question) questions.set(surchargeKey(plan.question), plan.question);
      return plan;
    });
    const answers = await mapWithConcurrency([...questions.values()], CONCURRENCY, (q) =>
      deps.surchargePolicy(q.card, q.region, { customerExempt: false, now: this.#now }),
    );
    const policies = new Map([...questions.keys()].map((key, i) => [key, answers[i] as SurchargePolicy]));

    return Promise.all(
      items.map(async ({ tx, prepared }, i): Promise<Resolution> => {
        const errors = drafts[i]?.errors ?? [];
        const processor = pickProcessor(this.#processors, tx.processorId);
        if (!processor) errors.unshift({ field: 'processor_id', msg: 'no processor with this id for this merchant' });
        const draft = drafts[i]?.draft;
        const payment = payments[i];
        const plan = plans[i];
        if (!draft || !payment || !plan || !processor || errors.length > 0) return { ok: false, errors };
        const policy = plan.question ? (policies.get(surchargeKey(plan.question)) ?? NO_SURCHARGE) : null;
        const amounts = computeAmounts(tx.type, tx.amounts, tx.taxExempt, {
          ...plan.facts,
          surchargeable: policy?.allowed ?? null,
          maxRateBps: policy?.maxRateBps ?? null,
        });
        if (!amounts.ok) return amounts;
        return { ok: true, stored: await this.#charge({ tx, prepared }, processor, draft, payment, amounts.value) };
      }),
    );
  }

  /** The facts the amount rules need, and the surcharge question to ask, if any. */
  #surchargePlan(tx: ValidTransaction, draft: PaymentDraft, payment: ResolvedPayment) {
    const country = tx.contact.billing_country?.toUpperCase() ?? null;
    const state = tx.contact.billing_state?.toUpperCase() ?? null;
    const region = country !== null && state !== null ? { country, state } : null;
    const exemption: SurchargeExemption = tx.surchargeExempt ? 'row' : draft.customer?.surchargeExempt ? 'customer' : null;
    const facts = {
      isCard: payment.kind === 'card',
      exemption,
      regionGiven: region !== null,
      rateBps: this.#engine.caller.surchargeRateBps,
    };
    const question: SurchargeQuestion | null =
      payment.kind === 'card' && region !== null && needsSurchargeRule(tx.amounts, facts)
        ? { card: payment.card, region }
        : null;
    return { facts, question };
  }

  async #charge(
    { tx, prepared }: Item,
    processor: ProcessorRecord,
    draft: PaymentDraft,
    payment: ResolvedPayment,
    amounts: Amounts,
  ): Promise<StoredTransaction> {
    const { caller } = this.#engine;
    const result = await implementationOf(processor.type).charge({
      type: tx.type,
      amount: amounts.amount,
      idempotencyKey: prepared.request.idempotencyKey,
      payment:
        payment.kind === 'card'
          ? { kind: 'card', number: payment.number, cvc: payment.cvc, billingPostalCode: tx.contact.billing_postal_code }
          : payment,
    });
    const processed: ProcessedTransaction = {
      id: randomId(20, 'txn_'),
      idempotencyKey: prepared.request.idempotencyKey,
      createdAt: this.#meta.createdAt,
      context: this.#meta.context,
      userName: caller.merchantName,
      tx,
      amounts,
      payment,
      paymentMethod: draft.method,
      customerId: draft.customer?.id ?? null,
      emailAddress: tx.emailAddress ?? draft.customer?.email ?? null,
      processor,
      result,
    };
    return {
      record: processedRecord(processed),
      merchantId: caller.merchantId,
      requestHash: prepared.hash,
      batchId: this.#meta.context.batchId ?? null,
      line: prepared.request.line ?? null,
      extras: {
        base_amount: amounts.baseAmount,
        surcharge: amounts.surcharge,
        discount_amount: amounts.discountAmount,
        surcharge_exempt: tx.surchargeExempt,
        email_receipt: tx.emailReceipt,
        description: tx.description,
        card_brand: payment.kind === 'card' ? (payment.card.card_brand ?? null) : null,
      },
    };
  }

  /** The payment a request names; null (with errors) when the vault reference cannot be used. */
  #draft(tx: ValidTransaction, errors: RowError[], vault: Map<string, VaultResolution>): PaymentDraft | null {
    const source = tx.source;
    if (source.kind === 'card') {
      const { number, expiry, cvc } = source;
      return { kind: 'card', number, expiry, cvc, method: 'card', customer: null };
    }
    if (source.kind === 'ach') {
      const { accountNumber, routingNumber, accountType, secCode } = source;
      return { kind: 'ach', accountNumber, routingNumber, accountType, secCode, method: 'ach', customer: null };
    }

    const answer = vault.get(vaultKey(source));
    if (!answer?.ok) {
      const reason = answer?.reason ?? 'customer_not_found';
      errors.push({ field: VAULT_FIELDS[reason], msg: VAULT_MESSAGES[reason] });
      return null;
    }
    const { customer, method } = answer;
    if (method.type === 'ach') {
      if (tx.type === 'authorize') {
        errors.push({
          field: 'transaction_type',
          msg: "authorize is not available for ACH payments (the customer's method is ACH); use sale",
        });
      }
      if (source.cvc !== null) {
        errors.push({ field: 'cc_cvc', msg: "is only allowed with a card payment (the customer's method is ACH)" });
      }
      return {
        kind: 'ach',
        accountNumber: method.account_number,
        routingNumber: method.routing_number,
        accountType: method.account_type,
        secCode: method.sec_code,
        method: 'customer',
        customer,
      };
    }
    const expiry = parseExpiry(method.expiration);
    if (expiry === null || isExpired(expiry, this.#now)) {
      errors.push({ field: 'customer_id', msg: "the customer's card has expired; update the vault" });
      return null;
    }
    const amex = isAmex(method.number);
    if (source.cvc !== null && source.cvc.length !== (amex ? 4 : 3)) {
      const msg = amex ? 'must be 4 digits for an American Express card' : 'must be 3 digits for this card';
      errors.push({ field: 'cc_cvc', msg });
    }
    return { kind: 'card', number: method.number, expiry, cvc: source.cvc, method: 'customer', customer };
  }
}

type VaultFailure = Extract<VaultResolution, { ok: false }>['reason'];

const VAULT_FIELDS: Record<VaultFailure, string> = {
  customer_not_found: 'customer_id',
  no_default_payment_method: 'customer_id',
  payment_method_not_found: 'payment_method_id',
  payment_method_type_mismatch: 'payment_method_type',
};

const VAULT_MESSAGES: Record<VaultFailure, string> = {
  customer_not_found: 'no vault customer with this id for this merchant',
  no_default_payment_method: 'the customer has no default payment method; give payment_method_id',
  payment_method_not_found: 'the customer has no payment method with this id',
  payment_method_type_mismatch: 'does not match the type of the selected payment method',
};
