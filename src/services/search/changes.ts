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
import type { OperationOutcome } from '../transactions/operations';
import { indexUnits, registerShardDays, shardOfId } from './indexer';
import { SETTLED_IDS_PER_CALL } from './limits';
import { searchDay, searchDirectory } from './names';

/**
 * After a capture, void or refund answered (the operation's hook): the transaction as it is now,
 * read back from its shard, and the refund it made. A refused or declined capture or void changed
 * nothing; a replay is indexed again (an upsert), which repairs an earlier failure.
 */
export async function indexOperation(env: Env, merchantId: string, transactionId: string, outcome: OperationOutcome, clock: Clock): Promise<void> {
  if (!outcome.ok) return;
  const shard = shardOfId(merchantId, transactionId);
  if (shard === null) return;
  const current = await getTransaction(env, merchantId, transactionId, clock);
  if (current.ok) {
    const day = String(current.record.created_at).slice(0, 10);
    await registerShardDays(env, merchantId, [{ shard, day }]);
    const written = await searchDay(env, merchantId, day).change({ merchantId, day }, [
      { id: transactionId, shard, record: current.record, amountRefunded: current.amountRefunded },
    ]);
    if (typeof written !== 'number') throw new Error(`search day ${day} could not be written: ${written.failed}`);
  }
  if (outcome.record.type === 'refund' && outcome.record.id !== transactionId) {
    // A refund is a transaction of its own, made now: a unit in today's day object.
    const { amount_refunded: _refunded, ...record } = outcome.record;
    await indexUnits(env, merchantId, [{ shard, page: String(record.id), at: String(record.created_at), records: [record] }]);
  }
}

/**
 * A settlement run's answer for one ledger shard (the settlement object's hook): every transaction
 * the shard settled on `batchDate`, marked in the day objects holding them; and the transactions it
 * left out of pages it marked (`held`: an operation was in flight on them), kept unsettled there
 * first. Idempotent: a run asked again sends the same entries.
 */
export async function indexSettlement(
  env: Env,
  merchantId: string,
  shard: string,
  entries: readonly SettledEntry[],
  batchDate: string,
  settledAt: string,
  held: readonly string[] = [],
): Promise<void> {
  if (entries.length === 0 && held.length === 0) return;
  const directory = searchDirectory(env, merchantId);
  const days = await directory.shardDays(shard);
  if (held.length > 0) await indexHeld(env, merchantId, shard, days, held);
  if (entries.length === 0) return;
  const ids = entries.map((entry) => entry.id);
  const holding: string[] = [];
  await Promise.all(
    days.map(async (day) => {
      let found = 0;
      for (let i = 0; i < ids.length; i += SETTLED_IDS_PER_CALL) {
        const answer = await searchDay(env, merchantId, day).settled(shard, ids.slice(i, i + SETTLED_IDS_PER_CALL), batchDate, settledAt);
        if (typeof answer !== 'number') throw new Error(`search day ${day} could not be written: ${answer.failed}`);
        found += answer;
      }
      if (found > 0) holding.push(day);
    }),
  );
  if (holding.length === 0) return;
  const done = await directory.addSettled(merchantId, batchDate, holding);
  if (done !== true) throw new Error(`search directory could not be written: ${done.failed}`);
}

/** The transactions a run left out of pages it marked settled, kept awaiting settlement in their day objects. */
async function indexHeld(env: Env, merchantId: string, shard: string, days: readonly string[], held: readonly string[]): Promise<void> {
  await Promise.all(
    days.map(async (day) => {
      for (let i = 0; i < held.length; i += SETTLED_IDS_PER_CALL) {
        const answer = await searchDay(env, merchantId, day).held(shard, held.slice(i, i + SETTLED_IDS_PER_CALL));
        if (typeof answer !== 'number') throw new Error(`search day ${day} could not be written: ${answer.failed}`);
      }
    }),
  );
}
