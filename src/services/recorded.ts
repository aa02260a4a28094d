/**
 * A transaction's work and what follows it. The transaction core (services/transactions) records
 * charges and operations in the ledger and knows nothing built on it; this module runs it with the
 * real dependencies and then writes what depends on the record: the search index, before the answer
 * is sent or the chunk counted (docs/capacity.md, "Search", "Read your writes"). Receipts are queued
 * by the ledger shard in the same write as the record.
 */
import type { Caller, Env } from '../env';
import { randomId } from '../lib/crypto';
import { describeFieldErrors } from '../lib/field-errors';
import type { Clock } from '../lib/time';
import type { TransactionContext, TransactionOutcome, TransactionRequest } from '../schemas/transaction-columns';
import { lookupCards } from './bin-lookup/card-metadata';
import { surchargePolicy } from './bin-lookup/surcharge';
import { indexOperation } from './search/changes';
import { indexOutcomes } from './search/indexer';
import type { TransactionDeps } from './transactions/deps';
import { runTransactions } from './transactions/engine';
import { operate, type OperationInput, type OperationOutcome } from './transactions/operations';
import type { VerifyCard } from './vault/payment-methods';
import { resolveVaultPaymentMethods } from './vault/resolution';

/** The engine's real dependencies for one call: card metadata, surcharge rules and the vault, each asked for a whole call at once. */
export function transactionDeps(env: Env, caller: Caller): TransactionDeps {
  return {
    cardMetadata: (numbers) => lookupCards(env, numbers, { enhanced: caller.enhancedBinLookup }),
    surchargePolicy: (card, region, options) => surchargePolicy(env, card, region, options),
    resolveVaultPaymentMethods: (references) => resolveVaultPaymentMethods(env, caller.merchantId, references),
  };
}

/** Charges (an API request, a batch chunk's rows) through the engine, then their records indexed. */
export async function processTransactions(
  env: Env,
  caller: Caller,
  requests: TransactionRequest[],
  context: TransactionContext,
  clock: Clock,
): Promise<TransactionOutcome[]> {
  const outcomes = await runTransactions({ env, caller, deps: transactionDeps(env, caller), clock }, requests, context);
  await indexOutcomes(env, caller.merchantId, requests, context, outcomes);
  return outcomes;
}

/** A capture, void or refund, then the transaction indexed as the shard wrote it (a replay reads it back). */
export async function runOperation(env: Env, caller: Caller, input: OperationInput, clock: Clock): Promise<OperationOutcome> {
  const { outcome, current } = await operate(env, caller, input, clock);
  await indexOperation(env, caller.merchantId, input.transactionId, outcome.ok ? outcome.record : null, current, clock);
  return outcome;
}

/**
 * FluidPay's `?validate=true` on a vault create: the card is verified by a zero-amount
 * verification transaction (recorded like any other, type `verification`) before it is stored.
 */
export function cardVerifier(env: Env, caller: Caller, clock: Clock): VerifyCard {
  return async (card) => {
    const [outcome] = await processTransactions(
      env,
      caller,
      [{ input: { transaction_type: 'verification', cc_number: card.number, cc_expiration: card.expiration }, idempotencyKey: randomId(24, 'vault_') }],
      { source: 'api', ipAddress: null },
      clock,
    );
    if (!outcome) throw new Error('transaction engine answered no outcome');
    if (!outcome.ok) return { approved: false, msg: describeFieldErrors(outcome.errors) };
    const { record } = outcome;
    if (record.response === 'approved') return { approved: true };
    return { approved: false, msg: `transaction ${String(record.id)}: response_code ${String(record.response_code)}, ${String(record.processor_response_text)}` };
  };
}
