/**
 * A ledger shard's side of settlement (docs/transactions.md, "Settlement"): registering in the
 * merchant's settlement index before money awaiting settlement is written, and settling what was
 * captured before a cutoff into the day's batches.
 */
import type { Env } from '../../env';
import {
  holdsUnsettled,
  markPageSettled,
  pageRowsSettledOn,
  readIndexing,
  readMeta,
  readStates,
  statesSettledOn,
  unpackRecord,
  unsettledPageRows,
  unsettledStates,
  upgradeShardTables,
  writeIndexing,
  writeState,
  type SettleAnswer,
  type SettledEntry,
  type SettleRequest,
  type ShardIdentity,
} from '../../storage/ledger-shard';
import { settle } from '../../services/transactions/lifecycle-rules';
import { settlementObjectName } from '../../services/settlement/index-registry';
import { decodePage, entryOf, type ShardContext } from './reading';

/**
 * Makes sure the merchant's settlement index lists this shard before money awaiting settlement is
 * written here: one call to the settlement object per stretch of such money (the first write after
 * the shard was last emptied by a settlement run), not one per write.
 */
export async function ensureIndexed(shard: ShardContext, env: Env, identity: ShardIdentity, now: string): Promise<void> {
  const sql = shard.sql;
  const before = readIndexing(sql);
  if (before.indexed) return;
  const generation = before.generation + 1;
  const settlement = env.MERCHANT_SETTLEMENT.getByName(settlementObjectName(identity.merchantId));
  await settlement.register(identity.merchantId, identity, generation, now);
  // Another call may have registered meanwhile: keep the later generation.
  const after = readIndexing(sql);
  writeIndexing(sql, true, Math.max(after.generation, generation));
}

/**
 * Settles the shard's money captured before `request.before` into the day's settlement batches
 * (one per processor): page rows whole, changed transactions one by one. Answers every transaction
 * settled on that day, by this run or an earlier one, so a run repeated after a crash reports the
 * same batch; and whether money is still waiting (captured after the cutoff).
 */
export async function settleShard(shard: ShardContext, identity: ShardIdentity, request: SettleRequest): Promise<SettleAnswer> {
  upgradeShardTables(shard.sql);
  const sql = shard.sql;
  if (!readMeta(sql)) return { entries: [], holdsUnsettled: false, generation: 0 };
  // A page row is settled whole (its records are read when answered, below); no await before the write.
  shard.storage.transactionSync(() => {
    const rows = unsettledPageRows(sql, request.before);
    for (const row of rows) markPageSettled(sql, row, request.batchDate, request.settledAt);
    for (const state of unsettledStates(sql, identity.merchantId, request.before)) {
      writeState(
        sql,
        { ...state, stored: { ...state.stored, record: settle(state.stored.record, request.batchDate, request.settledAt) }, unsettled: false, settledOn: request.batchDate },
        request.settledAt,
      );
    }
  });
  const entries: SettledEntry[] = [];
  const changed = new Set(statesSettledOn(sql, identity.merchantId, request.batchDate).map((state) => String(state.stored.record.id)));
  for (const row of pageRowsSettledOn(sql, request.batchDate)) {
    const packedRecords = await decodePage(row);
    const ids = packedRecords.map((packed) => String(unpackRecord(identity.merchantId, packed).record.id));
    // A transaction changed since (voided, or settled on its own) is counted from its state.
    const states = readStates(sql, identity.merchantId, ids);
    for (const packed of packedRecords) {
      const { record } = unpackRecord(identity.merchantId, packed);
      if (record.status !== 'pending_settlement' || states.has(String(record.id))) continue;
      entries.push(entryOf(record));
    }
  }
  for (const state of statesSettledOn(sql, identity.merchantId, request.batchDate)) {
    if (changed.has(String(state.stored.record.id)) && Number(state.stored.record.amount_settled) > 0 && state.stored.record.settlement_batch_id !== null) {
      entries.push(entryOf(state.stored.record));
    }
  }
  // Nothing left to settle: the shard counts itself out of the index (as of its generation) in
  // the same step, so money written later registers again under a newer generation.
  let holds = true;
  let generation = 0;
  shard.storage.transactionSync(() => {
    holds = holdsUnsettled(sql);
    generation = readIndexing(sql).generation;
    if (!holds) writeIndexing(sql, false, generation);
  });
  return { entries, holdsUnsettled: holds, generation };
}
