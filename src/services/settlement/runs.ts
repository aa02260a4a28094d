/**
 * Settlement as the routes and the operators see it: settle a merchant now, search its settlement
 * batches, read one with its transactions, and its cutoff (docs/transactions.md, "Settlement").
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { BatchSearch, SettlementBatch } from '../../storage/settlement';
import { announceSettlement } from './events';
import { settlementObject } from './index-registry';

/**
 * Settles every transaction of the merchant awaiting settlement as if its cutoff had passed now
 * (POST /admin/merchants/{id}/settle); answers the batches made or added to (none: nothing was due).
 * A shard that could not be settled is asked again by the next run; it is an error here.
 */
export async function settleMerchantNow(env: Env, merchantId: string, clock: Clock): Promise<SettlementBatch[]> {
  const now = isoTimestamp(clock());
  const run = await settlementObject(env, merchantId).settle(merchantId, now, now);
  if (run.batches.length > 0) await announceSettlement(env, merchantId, run.batches, clock);
  if (run.failed.length > 0) throw new Error(`settlement: ${run.failed.length} ledger shard(s) could not be settled; run it again`);
  return run.batches;
}

export async function searchSettlementBatches(env: Env, merchantId: string, search: BatchSearch) {
  return settlementObject(env, merchantId).search(search);
}

export async function getSettlementBatch(env: Env, merchantId: string, id: string, page: { limit: number; offset: number }) {
  return settlementObject(env, merchantId).batch(id, page.limit, page.offset);
}

export async function settlementCutoff(env: Env, merchantId: string): Promise<string> {
  return settlementObject(env, merchantId).cutoff(merchantId);
}

export async function setSettlementCutoff(env: Env, merchantId: string, cutoff: string, clock: Clock): Promise<string> {
  return settlementObject(env, merchantId).setCutoff(merchantId, cutoff, isoTimestamp(clock()));
}
