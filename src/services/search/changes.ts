/**
 * What a capture, void, refund or settlement changes in the search index, written before the
 * operation or the settlement run answers (docs/capacity.md, "Search"): the transaction's current
 * record in its day object (one change row, as the ledger writes one `states` row), a refund as a
 * unit of its own in the day it was made, and a settlement run's transactions marked settled the way
 * the ledger marked them (a whole unit per page).
 */
import type { Env } from '../../env';
import type { Clock } from '../../lib/time';
import type { SettledEntry } from '../../storage/ledger-shard';
import { getTransaction } from '../transactions/engine';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import { indexUnits, keyHash, registerShardDays, shardOfId } from './indexer';
import { KEY_REFS_MAX, SETTLED_IDS_PER_CALL } from './limits';
import { searchDay, searchDirectory, searchKeys, weekOf } from './names';
import { changeInput } from '../../storage/search/day';

/**
 * After a capture, void or refund answered (the operation's hook): the transaction as it is now and
 * the refund it made (`answered`: the record the operation answered, the refund's for a refund; null
 * when it was refused or declined, which changed nothing). `written` is the transaction as the shard
 * left it when this call completed the operation; a replay has none and reads it back from its
 * shard, so it is indexed again (an upsert), which repairs an earlier failure.
 */
export async function indexOperation(
  env: Env,
  merchantId: string,
  transactionId: string,
  answered: (TransactionRecord & { amount_refunded?: number }) | null,
  written: { record: TransactionRecord; amountRefunded: number } | null,
  clock: Clock,
): Promise<void> {
  if (answered === null) return;
  const shard = shardOfId(merchantId, transactionId);
  if (shard === null) return;
  const current = written ? { ok: true as const, ...written } : await getTransaction(env, merchantId, transactionId, clock);
  if (current.ok) {
    const day = String(current.record.created_at).slice(0, 10);
    const part = (await registerShardDays(env, merchantId, [{ shard, day }]))(shard, day);
    const changed = await searchDay(env, merchantId, day, part).change({ merchantId, day }, [changeInput(transactionId, shard, current.record, current.amountRefunded)]);
    if (typeof changed !== 'number') throw new Error(`search day ${day} could not be written: ${changed.failed}`);
    // A capture may set the order_id (FluidPay's capture fields): the week object must list it.
    if (answered.id === transactionId && answered.status !== 'voided') await referenceOrderId(env, merchantId, current.record, day, part);
  }
  if (answered.type === 'refund' && answered.id !== transactionId) {
    // A refund is a transaction of its own, made now: a unit in today's day object.
    const { amount_refunded: _refunded, ...record } = answered;
    await indexUnits(env, merchantId, [{ shard, page: String(record.id), at: String(record.created_at), records: [record] }]);
  }
}

/**
 * A settlement run's answer for one ledger shard (the settlement object's hook): every transaction
 * the shard settled on `batchDate`, marked in the day objects holding them; and the transactions it
 * left out of pages it marked (`held`: an operation was in flight on them), kept unsettled there
 * first. Idempotent: a run asked again sends the same entries. Answers how many object calls it
 * made (subrequests: one per day holding the shard's units, more for a piece past
 * SETTLED_IDS_PER_CALL, and the directory's), which the settlement step counts in its budget: a
 * shard whose rows were refunded on many days costs a call per such day.
 */
export async function indexSettlement(
  env: Env,
  merchantId: string,
  shard: string,
  entries: readonly SettledEntry[],
  batchDate: string,
  settledAt: string,
  held: readonly string[] = [],
): Promise<number> {
  if (entries.length === 0 && held.length === 0) return 0;
  const directory = searchDirectory(env, merchantId);
  // Each day in the shard's part of it (part 0 where the shard was indexed before the split).
  const days = await directory.shardDayParts(shard);
  let calls = 1;
  if (held.length > 0) calls += await indexHeld(env, merchantId, shard, days, held);
  if (entries.length === 0) return calls;
  const ids = entries.map((entry) => entry.id);
  const holding: string[] = [];
  calls += days.length * Math.ceil(ids.length / SETTLED_IDS_PER_CALL);
  await Promise.all(
    days.map(async ({ day, part }) => {
      let found = 0;
      for (let i = 0; i < ids.length; i += SETTLED_IDS_PER_CALL) {
        const answer = await searchDay(env, merchantId, day, part).settled(shard, ids.slice(i, i + SETTLED_IDS_PER_CALL), batchDate, settledAt);
        if (typeof answer !== 'number') throw new Error(`search day ${day} could not be written: ${answer.failed}`);
        found += answer;
      }
      if (found > 0) holding.push(day);
    }),
  );
  if (holding.length === 0) return calls;
  const done = await directory.addSettled(merchantId, batchDate, holding);
  if (done !== true) throw new Error(`search directory could not be written: ${done.failed}`);
  return calls + 1;
}

/**
 * `order_id =` reads only the units the week object lists for that order id, written when the
 * transaction was indexed. A capture that sets another order id (FluidPay's CaptureRequest)
 * adds the new reference, unless the week object already lists this unit for that order id
 * (the usual case: an order id given at creation). The check is one lookup, and it keeps replays
 * and plain captures from writing a reference twice. A value too common to list
 * (`truncated`) is searched over the window's days anyway. The reference the record no longer has
 * stays, and the day object's current record filters it out.
 */
async function referenceOrderId(env: Env, merchantId: string, record: TransactionRecord, day: string, part: number): Promise<void> {
  const value = record.order_id;
  if (typeof value !== 'string' || value === '') return;
  const week = weekOf(day);
  const at = Date.parse(String(record.created_at));
  const hash = keyHash('order_id', value);
  const keys = searchKeys(env, merchantId, week, part);
  const listed = await keys.lookup(hash, KEY_REFS_MAX);
  if (listed.truncated || listed.ats.some((t) => Date.parse(t) === at)) return;
  const done = await keys.add({ merchantId, week }, [{ hash, at: String(record.created_at) }]);
  if (done !== true) throw new Error(`search keys ${week} could not be written: ${done.failed}`);
}

/** The transactions a run left out of pages it marked settled, kept awaiting settlement in their day objects; answers the calls made. */
async function indexHeld(env: Env, merchantId: string, shard: string, days: readonly { day: string; part: number }[], held: readonly string[]): Promise<number> {
  await Promise.all(
    days.map(async ({ day, part }) => {
      for (let i = 0; i < held.length; i += SETTLED_IDS_PER_CALL) {
        const answer = await searchDay(env, merchantId, day, part).held(shard, held.slice(i, i + SETTLED_IDS_PER_CALL));
        if (typeof answer !== 'number') throw new Error(`search day ${day} could not be written: ${answer.failed}`);
      }
    }),
  );
  return days.length * Math.ceil(held.length / SETTLED_IDS_PER_CALL);
}
