/**
 * A transaction's life for the console's detail view (docs/console.md, "Transactions"): its record as
 * it is now, its refunds, and the events of its life in order (created, captured, settled, refunded,
 * voided, expired), read from its ledger shard.
 */
import type { Env } from '../../env';
import type { Clock } from '../../lib/time';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { getTransaction } from './engine';
import { recordView } from '../fluidpay/record';

/** Refunds of one transaction the view reads at most (each refund is one more look-up in the shard). */
const MAX_REFUNDS = 50;

export interface LifecycleEvent {
  kind: 'created' | 'captured' | 'settled' | 'refunded' | 'voided' | 'expired';
  /** When it happened; null when the record does not say (a void, an expiry). */
  at: string | null;
  /** Minor units the event moved. */
  amount: number;
  /** What it names: the settlement batch, or the refund. */
  reference: string | null;
  /** The outcome: the response of the transaction, or the refund's status. */
  outcome: string | null;
}

export interface TransactionDetail {
  record: TransactionRecordView;
  refunds: TransactionRecordView[];
  events: LifecycleEvent[];
}

/** A refund's id: its original's id without `txn_`, `x` and its number (services/transactions: refundTransactionId). */
function refundId(originalId: string, n: number): string {
  return `txn_r${originalId.slice(4)}x${n}`;
}

export async function transactionDetail(env: Env, merchantId: string, id: string, clock: Clock): Promise<TransactionDetail | null> {
  const found = await getTransaction(env, merchantId, id, clock);
  if (!found.ok) return null;
  // The record as GET /api/transaction/{id} answers it (FluidPay's fields included).
  const record = recordView(found.record, found.amountRefunded, merchantId);
  const refunds: TransactionRecordView[] = [];
  // Refunds are numbered from 1 in the original's shard, declined ones too: the first gap is the end.
  if (record.type === 'sale' || record.type === 'authorize') {
    for (let n = 1; n <= MAX_REFUNDS; n++) {
      const refund = await getTransaction(env, merchantId, refundId(id, n), clock);
      if (!refund.ok) break;
      refunds.push(recordView(refund.record, 0, merchantId));
    }
  }
  const event = (kind: LifecycleEvent['kind'], at: unknown, amount: unknown, reference: unknown = null, outcome: unknown = null): LifecycleEvent => ({
    kind,
    at: at === null ? null : String(at),
    amount: Number(amount),
    reference: reference === null ? null : String(reference),
    outcome: outcome === null ? null : String(outcome),
  });
  const events = [event('created', record.created_at, record.amount, null, record.response)];
  if (record.captured_at !== null) events.push(event('captured', record.captured_at, record.amount_captured));
  if (record.settled_at !== null) events.push(event('settled', record.settled_at, record.amount_settled, record.settlement_batch_id));
  for (const refund of refunds) events.push(event('refunded', refund.created_at, refund.amount, refund.id, refund.status));
  if (record.status === 'voided') events.push(event('voided', null, 0));
  if (record.status === 'expired') events.push(event('expired', null, 0));
  events.sort((a, b) => (a.at === null ? 1 : b.at === null ? -1 : a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return { record, refunds, events };
}
