/**
 * Payment resolution for the valid requests of one engine call: the vault references, the card
 * metadata, the surcharge rules, then amounts and the processor, request by request. Each
 * dependency is asked once per distinct value across the call. The answer is, per request, the
 * claim to record and the charge to send; the engine does both (claims.ts).
 */
import type { Caller, Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import { checkExpiration, type Expiry } from '../../lib/expiry';
import type { Clock } from '../../lib/time';
import type { RowError, TransactionContext, TransactionInput, TransactionRequest } from '../../schemas/transaction-columns';
import type { ProcessorRecord } from '../../storage/processors';
import type { StoredTransaction } from '../../storage/ledger-shard';
import { describeVaultFailure } from '../../schemas/vault-resolution';
import { computeAmounts, needsSurchargeRule, type Amounts, type SurchargeExemption } from './amounts';
import type {
  CardMetadata,
  SurchargePolicy,
  SurchargeRegion,
  TransactionDeps,
  VaultCustomer,
  VaultReference,
  VaultResolution,
} from './deps';
import type { Charge } from './processors/processor';
import { pickProcessor } from './processors/registry';
import { pendingRecord, type ProcessedTransaction, type ResolvedPayment } from './records';
import { isAmex, receiptAddressError, type ValidTransaction } from './validation';
/** Requests resolved at once: bounds concurrent BIN, vault and surcharge lookups. */
const CONCURRENCY = 16;

export interface Engine {
  env: Env;
  caller: Caller;
  deps: TransactionDeps;
  clock: Clock;
}

export interface Prepared {
  request: TransactionRequest;
  input: TransactionInput;
  hash: string;
}

/** A request ready to be claimed (`stored`, in status `processing`) and charged, or its errors. */
export type Resolution =
  | { ok: true; stored: StoredTransaction; charge: Charge; processor: ProcessorRecord }
  | { ok: false; errors: RowError[] };

/** What every record of one engine call shares, and the id each new transaction gets (ledger.ts). */
export interface ResolverMeta {
  createdAt: string;
  context: TransactionContext;
  idFor: (request: TransactionRequest) => string;
}

/** A payment as the request names it; a card still lacks its metadata (asked for in bulk). */
type PaymentDraft = (
  | { kind: 'card'; number: string; expiry: Expiry; cvc: string | null }
  | Extract<ResolvedPayment, { kind: 'ach' }>
) & {
  method: ProcessedTransaction['paymentMethod'];
  customer: VaultCustomer | null;
};

/** A vault reference as a validated request holds it (null for absent). */
interface RequestVaultReference {
  customerId: string;
  paymentMethodId: string | null;
  paymentMethodType: 'card' | 'ach' | null;
}

const vaultKey = (ref: RequestVaultReference) => JSON.stringify([ref.customerId, ref.paymentMethodId, ref.paymentMethodType]);

/** The vault's form of a reference: absent fields left out. */
function toVaultReference(ref: RequestVaultReference): VaultReference {
  return {
    customerId: ref.customerId,
    ...(ref.paymentMethodId !== null ? { paymentMethodId: ref.paymentMethodId } : {}),
    ...(ref.paymentMethodType !== null ? { paymentMethodType: ref.paymentMethodType } : {}),
  };
}
// Card metadata holds no card number (its `bin` is the displayed prefix), so it can be part of a key.
const surchargeKey = (q: SurchargeQuestion) => JSON.stringify([q.card, q.region.country, q.region.state]);

const NO_SURCHARGE: SurchargePolicy = { allowed: false, maxRateBps: null, atCost: false };

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
export class Resolver {
  readonly #engine: Engine;
  readonly #processors: ProcessorRecord[];
  readonly #now: Date;
  readonly #meta: ResolverMeta;

  constructor(
    engine: Engine,
    processors: ProcessorRecord[],
    now: Date,
    meta: ResolverMeta,
  ) {
    this.#engine = engine;
    this.#processors = processors;
    this.#now = now;
    this.#meta = meta;
  }

  async resolveAll(items: Item[]): Promise<Resolution[]> {
    const { deps } = this.#engine;

    // Vault references, once each, in one query.
    const references = new Map<string, RequestVaultReference>();
    for (const { tx } of items) if (tx.source.kind === 'vault') references.set(vaultKey(tx.source), tx.source);
    const vaultAnswers = await deps.resolveVaultPaymentMethods([...references.values()].map(toVaultReference));
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

    return items.map(({ tx, prepared }, i): Resolution => {
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
      const overCap = creditOverCap(tx.type, amounts.value.amount, this.#engine.caller.maxCreditAmount);
      if (overCap) return { ok: false, errors: [overCap] };
      // A receipt asked for must have an address, checked before the charge: a sale is never charged with a receipt that cannot go.
      const noAddress = receiptAddressError({ emailReceipt: tx.emailReceipt, emailAddress: tx.emailAddress, billingEmail: tx.contact.billing_email }, draft.customer?.email ?? null);
      if (noAddress) return { ok: false, errors: [noAddress] };
      return { ok: true, ...this.#claim({ tx, prepared }, processor, draft, payment, amounts.value) };
    });
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

  /** The claim's record and the charge for a request whose amounts are final. */
  #claim(
    { tx, prepared }: Item,
    processor: ProcessorRecord,
    draft: PaymentDraft,
    payment: ResolvedPayment,
    amounts: Amounts,
  ): { stored: StoredTransaction; charge: Charge; processor: ProcessorRecord } {
    const { caller } = this.#engine;
    const charge: Charge = {
      type: tx.type,
      amount: amounts.amount,
      idempotencyKey: prepared.request.idempotencyKey,
      claimedAt: this.#meta.createdAt,
      payment:
        payment.kind === 'card'
          ? { kind: 'card', number: payment.number, cvc: payment.cvc, billingPostalCode: tx.contact.billing_postal_code }
          : payment,
    };
    const processed: ProcessedTransaction = {
      id: this.#meta.idFor(prepared.request),
      idempotencyKey: prepared.request.idempotencyKey,
      subscriptionId: prepared.request.subscriptionId ?? null,
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
    };
    const stored: StoredTransaction = {
      record: pendingRecord(processed),
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
    return { stored, charge, processor };
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
      const { field, text } = describeVaultFailure(answer?.reason ?? 'customer_not_found', toVaultReference(source));
      errors.push({ field, msg: text });
      return null;
    }
    const { customer, method } = answer;
    if (method.type === 'ach') {
      if (tx.type === 'authorize' || tx.type === 'verification') {
        errors.push({
          field: 'transaction_type',
          msg: `${tx.type} is not available for ACH payments (the customer's method is ACH); use sale`,
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
    const expiration = checkExpiration(method.expiration, this.#now);
    if (!expiration.ok) {
      errors.push({ field: 'customer_id', msg: "the customer's card has expired; update the vault" });
      return null;
    }
    const expiry = expiration.expiry;
    const amex = isAmex(method.number);
    if (source.cvc !== null && source.cvc.length !== (amex ? 4 : 3)) {
      const msg = amex ? 'must be 4 digits for an American Express card' : 'must be 3 digits for this card';
      errors.push({ field: 'cc_cvc', msg });
    }
    return { kind: 'card', number: method.number, expiry, cvc: source.cvc, method: 'customer', customer };
  }
}

/**
 * A credit sends money to a card without an earlier sale to refund (refunds of a sale come with
 * the transaction lifecycle): a stolen key could pay itself out. Each is capped by the merchant's
 * max_credit_amount (admin API; 0 refuses them); the row's result line or the API's 400 says why.
 */
function creditOverCap(type: ValidTransaction['type'], amount: number, cap: number): RowError | null {
  if (type !== 'credit' || amount <= cap) return null;
  return {
    field: 'amount',
    msg:
      cap === 0
        ? 'unreferenced credits are not allowed for this merchant (max_credit_amount is 0)'
        : `a credit of ${amount} exceeds this merchant's max_credit_amount of ${cap}`,
  };
}
