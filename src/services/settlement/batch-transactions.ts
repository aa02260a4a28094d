/**
 * A settlement batch with a page of its transactions (GET /api/settlement/batch/{id}): the
 * merchant's settlement object answers the batch's exact totals and where the page lies (slices of
 * the handoff pieces it recorded: shard, piece number, how many to skip and take); the transactions
 * themselves are read from the ledger shards that settled them, which keep every piece they handed
 * over until they are archived. The settlement object so holds no list of transactions
 * (docs/capacity.md, "Settlement").
 */
import type { Env } from '../../env';
import { mapWithConcurrency } from '../../lib/concurrency';
import { WORKERS } from '../../lib/platform-limits';
import type { SettlementBatch } from '../../storage/settlement';
import type { PieceSlice } from '../../storage/ledger-shard';
import { settlementObject } from './index-registry';

/**
 * Pieces one page may span, so shards one page asks (a subrequest each, at most, well under
 * WORKERS.subrequestsPlanned): a piece holds up to 5,000 transactions, so only a batch made of
 * many tiny pieces (one-row files) reaches it, and its page is then cut short.
 */
export const PAGE_MAX_PIECES = 100;
if (PAGE_MAX_PIECES > WORKERS.subrequestsPlanned / 4) throw new Error('a batch page could ask too many shards');

export interface SettlementTransaction {
  id: string;
  type: string;
  amount: number;
}

/**
 * The batch and its transactions [offset, offset + limit), in shard order. A page shorter than
 * `limit` is the last one, or one cut at PAGE_MAX_PIECES pieces (the next page starts at offset +
 * its length; docs/transactions.md, "Settlement"). A piece whose shard was archived (its
 * transactions are past retention) reads as none.
 */
export async function settlementBatchPage(
  env: Env,
  merchantId: string,
  id: string,
  page: { limit: number; offset: number },
): Promise<{ batch: SettlementBatch; transactions: SettlementTransaction[] } | null> {
  const found = await settlementObject(env, merchantId).batch(id, page.limit, page.offset, PAGE_MAX_PIECES);
  if (!found) return null;
  const { batch, slices } = found;
  // One call per shard, with every slice it holds.
  const byShard = new Map<string, { index: number; slice: PieceSlice }[]>();
  slices.forEach((slice, index) => {
    if (slice.entries !== null) return;
    const list = byShard.get(slice.shard) ?? [];
    list.push({ index, slice: { seq: slice.seq, processorId: batch.processor_id, skip: slice.skip, take: slice.take } });
    byShard.set(slice.shard, list);
  });
  const read = new Map<number, SettlementTransaction[]>();
  await mapWithConcurrency([...byShard], WORKERS.simultaneousConnections, async ([shard, wanted]) => {
    const answer = await env.LEDGER_SHARD.getByName(shard).settledSlices(wanted.map((w) => w.slice));
    wanted.forEach((w, i) => read.set(w.index, (answer[i] ?? []).map((e) => ({ id: e.id, type: e.type, amount: e.amount }))));
  });
  const transactions = slices.flatMap((slice, index) => slice.entries ?? read.get(index) ?? []);
  return { batch, transactions };
}
