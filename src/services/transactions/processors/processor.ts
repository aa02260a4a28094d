/**
 * The one interface every payment processor implements. The engine hands a processor a charge
 * whose fields are already validated and whose amounts are final; the processor answers with
 * the gateway's response code and the network's own codes. The engine has claimed the charge's
 * idempotency key before it calls `charge` (docs/transactions.md, "Idempotency"), and asks
 * `lookup` when a claim was left without an answer.
 */
import type { ProcessorType } from '../../../schemas/admin';
import type { OperationResult } from '../../../storage/ledger-shard';
import type { AchAccountType, SecCode, TransactionType } from '../validation';

export type { ProcessorType };

export type ChargePayment =
  | { kind: 'card'; number: string; cvc: string | null; billingPostalCode: string | null }
  | { kind: 'ach'; accountNumber: string; routingNumber: string; accountType: AchAccountType; secCode: SecCode };

export interface Charge {
  type: TransactionType;
  /** The total, in minor units. */
  amount: number;
  payment: ChargePayment;
  /**
   * The engine's idempotency key. A processor that talks to a network forwards it (every acquirer
   * API in this family accepts one, as an order id or idempotency key), so the gateway can answer
   * `lookup` for it and never charges it twice even if asked twice. The key is the merchant's and
   * holds for the engine's 24-hour idempotency window (idempotency.ts): after it, an API key may
   * name a new transaction, so an acquirer whose keys live longer must be sent the key with the
   * window's start (the claim's `created_at` date) appended.
   */
  idempotencyKey: string;
  /** When the engine claimed the key (ISO 8601): with the key, it names this charge for `lookup`. */
  claimedAt: string;
}

/**
 * 100 approved, 110 partial approval; 2xx issuer decline; 3xx gateway decline; 4xx processor error.
 * The ledger shard stores this answer as it is, so its shape is declared there (storage sits below).
 */
export type ChargeResult = OperationResult;

/** A capture, void or refund of a transaction the processor answered before. */
export interface Operation {
  /** Minor units: what is captured or refunded; for a void, what the transaction held. */
  amount: number;
  /** The transaction it acts on (the processor's reference is the original's). */
  transactionId: string;
  paymentType: 'card' | 'ach';
  /** The engine's key for this operation (the transaction, the kind and the client's key): as a charge's, never acted on twice. */
  idempotencyKey: string;
  claimedAt: string;
}

export interface PaymentProcessor {
  readonly type: ProcessorType;
  /** Asks for one charge; throws when the answer did not come back (it may or may not have been charged). */
  charge(charge: Charge): Promise<ChargeResult>;
  /**
   * What the processor answered for a charge under this idempotency key, or null when it never
   * received one (a gateway's query by order id). Throws when the processor cannot be asked.
   */
  lookup(idempotencyKey: string, claimedAt: string): Promise<ChargeResult | null>;
  /** Captures (part of) an authorization; throws like `charge` when the answer did not come back. */
  capture(operation: Operation): Promise<ChargeResult>;
  /** Voids an authorization or an unsettled transaction (an authorization reversal). */
  void(operation: Operation): Promise<ChargeResult>;
  /** Refunds (part of) a settled transaction. Every operation is found by `lookup` under its key too. */
  refund(operation: Operation): Promise<ChargeResult>;
}

/** The gateway's `response` for a response code, by range. */
export function responseFor(code: number): ChargeResult['response'] {
  if (code >= 100 && code < 200) return 'approved';
  if (code >= 200 && code < 400) return 'declined';
  return 'error';
}
