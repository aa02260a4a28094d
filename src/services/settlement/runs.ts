/**
 * Settlement as the routes and the operators see it: settle a merchant now, search its settlement
 * batches, read one with its transactions, and its cutoff (docs/transactions.md, "Settlement").
 */
import type { Env } from '../../env';
import { HALF, WORKERS } from '../../lib/platform-limits';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { BatchSearch, SettlementBatch } from '../../storage/settlement';
import { settlementObject } from './index-registry';

/**
 * Steps one "settle now" request drives (each one call to the settlement object, a subrequest of
 * the request, and a bounded invocation of the object): half of the subrequests planned for one
 * invocation. A step records up to 50,000 entries, so this is far beyond a merchant's busiest day.
 */
const STEPS_PER_REQUEST = WORKERS.subrequestsPlanned * HALF;

/** What settle now did: the run finished (all its batches), or it goes on by the merchant's alarm. */
export type SettleNowOutcome = { finished: true; batches: SettlementBatch[] } | { finished: false; batches: SettlementBatch[]; failed: number };

/**
 * Settles every transaction of the merchant awaiting settlement as if its cutoff had passed now
 * (POST /admin/merchants/{id}/settle), step by step (each its own call to the settlement object, so
 * each is bounded however big the run), and answers the batches made or added to (none: nothing was
 * due). When a ledger shard fails, the run goes on without it by the merchant's alarm, which retries
 * it: the answer then says the run is not finished, with the batches so far.
 */
export async function settleMerchantNow(env: Env, merchantId: string, clock: Clock): Promise<SettleNowOutcome> {
  const now = isoTimestamp(clock());
  const object = settlementObject(env, merchantId);
  // Every batch a step of this request made or added to, its latest state kept: a run that a crash
  // interrupted is finished by this request's first steps (and its batches are this request's work
  // too) before the run ending at `now` starts, which may find nothing left.
  const touched = new Map<string, SettlementBatch>();
  let failed = 0;
  for (let step = 0; step < STEPS_PER_REQUEST; step++) {
    const answer = await object.settleNow(merchantId, now);
    for (const batch of answer.batches) touched.set(batch.id, batch);
    if (answer.done) return { finished: true, batches: [...touched.values()] };
    failed = answer.failed.length;
    if (!answer.progressed) break;
  }
  return { finished: false, batches: [...touched.values()], failed };
}

export async function searchSettlementBatches(env: Env, merchantId: string, search: BatchSearch) {
  return settlementObject(env, merchantId).search(search);
}

export { settlementBatchPage as getSettlementBatch } from './batch-transactions';

export async function settlementCutoff(env: Env, merchantId: string): Promise<string> {
  return settlementObject(env, merchantId).cutoff(merchantId);
}

export async function setSettlementCutoff(env: Env, merchantId: string, cutoff: string, clock: Clock): Promise<string> {
  return settlementObject(env, merchantId).setCutoff(merchantId, cutoff, isoTimestamp(clock()));
}
