/**
 * What follows a charge recorded by a ledger shard's sweep of abandoned API claims
 * (durable-objects/ledger-shard/claim-sweep.ts), the same as for a charge its request recorded
 * (recorded.ts, api-transaction.ts): the search index, and FluidPay's `transaction_create` on the
 * transaction-events queue for the endpoints that take it. Receipts need nothing here: the shard
 * queues them in the write that records the charge.
 *
 * Both are safe to run twice (the index writes a transaction's unit by its id; an event keeps its
 * id, `evt_` and the transaction's, so a receiver drops a duplicate): the sweep runs them again
 * after a step that died before it knew they were done.
 */
import type { Env } from '../env';
import type { TransactionRecord } from '../schemas/transaction-columns';
import { recordView } from './fluidpay/record';
import { indexOutcomes } from './search/indexer';
import { publishTransactionEvents } from './webhooks/transaction-events';

export async function followUpSweptCharges(
  env: Env,
  merchantId: string,
  records: readonly TransactionRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await indexOutcomes(env, merchantId, [], { source: 'api', ipAddress: null }, records.map((record) => ({ ok: true as const, record, replayed: false })));
  const published = await publishTransactionEvents(
    { db: env.DB, queue: env.TRANSACTION_EVENT_QUEUE },
    merchantId,
    records.map((record) => recordView(record, 0, merchantId)),
  );
  for (const id of published.refused) {
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_not_queued', merchant_id: merchantId, transaction_id: id, reason: 'message over the budget' }));
  }
}
