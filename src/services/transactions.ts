/**
 * The transaction engine, shared by POST /api/transaction (one request) and the batch consumer
 * (a chunk of CSV rows): validate -> resolve the payment (card / ACH / vault) -> amounts ->
 * processor -> record. Work is shared across the requests of one call: one idempotency query,
 * one processor query, card metadata and vault lookups memoised, new records written in one
 * statement (a few for very large calls).
 *
 * Every problem with a request is a value (an `invalid` outcome with its result line); only
 * infrastructure failures (D1 down) throw, so that a batch chunk is retried as a whole.
 */
import type { Caller, Env } from '../env';
import { mapWithConcurrency, memoise } from '../lib/concurrency';
import { randomId } from '../lib/crypto';
import { isExpired, parseExpiry } from '../lib/expiry';
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
import { implementationOf, merchantProcessors, pickProcessor } from './processors/registry';
import { computeAmounts, needsSurchargeRule, type SurchargeExemption } from './transaction-amounts';
import {
  transactionDepsFromEnv,
  type CardMetadata,
  type SurchargeRegion,
  type TransactionDeps,
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
    if (stored.requestHash === p.hash) return { ok: true, record: stored.record, replayed: true };
    const errors = [{ field: 'Idempotency-Key', msg: 'was already used with a different request' }];
    // A batch row always gets a result line; only the API answers a bare conflict (409).
    return context.source === 'batch' ? invalid(p, errors) : { ok: false, reason: 'idempotency_conflict', errors, record: null };
  };

  // 1. Requests already recorded under their key are answered from D1, never charged again.
  const keys = [...new Set(prepared.map((p) => p.request.idempotencyKey))];
  const recorded = new Map(
    (await findTransactionsByIdempotencyKeys(env.DB, caller.merchantId, keys)).map((s) => [String(s.record.idempotency_key), s]),
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
    const resolver = new Resolver(engine, processors, now);
    const resolutions = await mapWithConcurrency(valid, CONCURRENCY, ({ index, tx }) => {
      const p = prepared[index] as Prepared;
      return resolver.resolve(tx, p, { createdAt, context });
    });

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

/** Per-call resolution of requests, with the call's memoised lookups. */
class Resolver {
  readonly #engine: Engine;
  readonly #processors: ProcessorRecord[];
  readonly #now: Date;
  readonly #cardMetadata: (digits: string) => Promise<CardMetadata>;
  readonly #vault: (args: { customerId: string; paymentMethodId: string | null; paymentMethodType: 'card' | 'ach' | null }) => Promise<VaultResolution>;
  readonly #surchargeable: (args: { card: CardMetadata; region: SurchargeRegion }) => Promise<boolean>;

  constructor(engine: Engine, processors: ProcessorRecord[], now: Date) {
    this.#engine = engine;
    this.#processors = processors;
    this.#now = now;
    const { deps } = engine;
    this.#cardMetadata = memoise((digits) => digits, (digits) => deps.cardMetadata(digits));
    this.#vault = memoise(
      (a) => JSON.stringify([a.customerId, a.paymentMethodId, a.paymentMethodType]),
      (a) =>
        deps.resolveVaultPaymentMethod(a.customerId, {
          ...(a.paymentMethodId !== null ? { paymentMethodId: a.paymentMethodId } : {}),
          ...(a.paymentMethodType !== null ? { paymentMethodType: a.paymentMethodType } : {}),
        }),
    );
    // Card metadata holds no card number (its `bin` is the matched prefix), so it can be a key.
    this.#surchargeable = memoise(
      (a) => JSON.stringify([a.card, a.region.country, a.region.state]),
      (a) => deps.isSurchargeable(a.card, a.region, { customerExempt: false, now }),
    );
  }

  async resolve(
    tx: ValidTransaction,
    p: Prepared,
    meta: { createdAt: string; context: TransactionContext },
  ): Promise<Resolution> {
    const errors: RowError[] = [];
    const processor = pickProcessor(this.#processors, tx.processorId);
    if (!processor) errors.push({ field: 'processor_id', msg: 'no processor with this id for this merchant' });

    const payment = await this.#payment(tx, errors);
    if (!payment || !processor || errors.length > 0) return { ok: false, errors };

    const country = tx.contact.billing_country?.toUpperCase() ?? null;
    const state = tx.contact.billing_state?.toUpperCase() ?? null;
    const region = country !== null && state !== null ? { country, state } : null;
    const exemption: SurchargeExemption = tx.surchargeExempt ? 'row' : payment.customerExempt ? 'customer' : null;
    const facts = {
      isCard: payment.resolved.kind === 'card',
      exemption,
      regionGiven: region !== null,
      rateBps: this.#engine.caller.surchargeRateBps,
    };
    const surchargeable =
      payment.resolved.kind === 'card' && region !== null && needsSurchargeRule(tx.amounts, facts)
        ? await this.#surchargeable({ card: payment.resolved.card, region })
        : null;
    const amounts = computeAmounts(tx.type, tx.amounts, tx.taxExempt, { ...facts, surchargeable });
    if (!amounts.ok) return amounts;

    const resolved = payment.resolved;
    const result = await implementationOf(processor.type).charge({
      type: tx.type,
      amount: amounts.value.amount,
      idempotencyKey: p.request.idempotencyKey,
      payment:
        resolved.kind === 'card'
          ? { kind: 'card', number: resolved.number, cvc: resolved.cvc, billingPostalCode: tx.contact.billing_postal_code }
          : resolved,
    });
    const processed: ProcessedTransaction = {
      id: randomId(20, 'txn_'),
      idempotencyKey: p.request.idempotencyKey,
      createdAt: meta.createdAt,
      context: meta.context,
      userName: this.#engine.caller.merchantName,
      tx,
      amounts: amounts.value,
      payment: resolved,
      paymentMethod: payment.method,
      customerId: payment.customerId,
      emailAddress: tx.emailAddress ?? payment.customerEmail,
      processor,
      result,
    };
    return {
      ok: true,
      stored: {
        record: processedRecord(processed),
        merchantId: this.#engine.caller.merchantId,
        requestHash: p.hash,
        batchId: meta.context.batchId ?? null,
        line: p.request.line ?? null,
        extras: {
          base_amount: amounts.value.baseAmount,
          surcharge: amounts.value.surcharge,
          discount_amount: amounts.value.discountAmount,
          surcharge_exempt: tx.surchargeExempt,
          email_receipt: tx.emailReceipt,
          description: tx.description,
          card_brand: resolved.kind === 'card' ? (resolved.card.card_brand ?? null) : null,
        },
      },
    };
  }

  async #payment(
    tx: ValidTransaction,
    errors: RowError[],
  ): Promise<{
    resolved: ResolvedPayment;
    method: ProcessedTransaction['paymentMethod'];
    customerId: string | null;
    customerExempt: boolean;
    customerEmail: string | null;
  } | null> {
    const source = tx.source;
    if (source.kind === 'card') {
      const card = await this.#cardMetadata(source.number);
      return {
        resolved: { kind: 'card', number: source.number, expiry: source.expiry, cvc: source.cvc, card },
        method: 'card',
        customerId: null,
        customerExempt: false,
        customerEmail: null,
      };
    }
    if (source.kind === 'ach') {
      const { kind, accountNumber, routingNumber, accountType, secCode } = source;
      return {
        resolved: { kind, accountNumber, routingNumber, accountType, secCode },
        method: 'ach',
        customerId: null,
        customerExempt: false,
        customerEmail: null,
      };
    }

    const vault = await this.#vault(source);
    if (!vault.ok) {
      const field =
        vault.reason === 'payment_method_not_found'
          ? 'payment_method_id'
          : vault.reason === 'payment_method_type_mismatch'
            ? 'payment_method_type'
            : 'customer_id';
      errors.push({ field, msg: vaultMessage(vault.reason) });
      return null;
    }
    const { customer, method } = vault;
    const common = {
      method: 'customer' as const,
      customerId: customer.id,
      customerExempt: customer.surchargeExempt,
      customerEmail: customer.email,
    };
    if (method.type === 'ach') {
      if (tx.type === 'authorize') {
        errors.push({ field: 'transaction_type', msg: "authorize is not available for ACH payments (the customer's method is ACH); use sale" });
      }
      if (source.cvc !== null) errors.push({ field: 'cc_cvc', msg: "is only allowed with a card payment (the customer's method is ACH)" });
      return {
        ...common,
        resolved: {
          kind: 'ach',
          accountNumber: method.account_number,
          routingNumber: method.routing_number,
          accountType: method.account_type,
          secCode: method.sec_code,
        },
      };
    }
    const expiry = parseExpiry(method.expiration);
    if (expiry === null || isExpired(expiry, this.#now)) {
      errors.push({ field: 'customer_id', msg: "the customer's card has expired; update the vault" });
      return null;
    }
    if (source.cvc !== null && source.cvc.length !== (isAmex(method.number) ? 4 : 3)) {
      errors.push({ field: 'cc_cvc', msg: isAmex(method.number) ? 'must be 4 digits for an American Express card' : 'must be 3 digits for this card' });
    }
    const card = await this.#cardMetadata(method.number);
    return { ...common, resolved: { kind: 'card', number: method.number, expiry, cvc: source.cvc, card } };
  }
}

function vaultMessage(reason: Extract<VaultResolution, { ok: false }>['reason']): string {
  switch (reason) {
    case 'customer_not_found':
      return 'no vault customer with this id for this merchant';
    case 'payment_method_not_found':
      return 'the customer has no payment method with this id';
    case 'no_default_payment_method':
      return 'the customer has no default payment method; give payment_method_id';
    case 'payment_method_type_mismatch':
      return 'does not match the type of the selected payment method';
  }
}
