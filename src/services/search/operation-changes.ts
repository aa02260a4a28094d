/**
 * What many captures, voids and refunds (a batch chunk's rows) change in the search index, grouped:
 * the same writes `indexOperation` (changes.ts) makes for one, with one read per ledger shard, one
 * change call per day object and one unit write per day for the refunds, instead of a few calls per
 * operation. Batch rows carry no capture details, so a capture keeps the order_id it was indexed
 * with and needs no new order_id reference.
 */
import type { Caller, Env } from '../../env';
import type { Clock } from '../../lib/time';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { locateTransaction } from '../transactions/engine';
import { locateMany } from '../transactions/locate-many';
import { authorizationExpiryDays, expiresBefore } from '../transactions/lifecycle-rules';
import { indexUnits, registerShardDays, shardOfId } from './indexer';
import { searchDay } from './names';
import { changeInput, type ChangeInput } from '../../storage/search/day';

export interface CurrentTransaction {
  record: TransactionRecord;
  amountRefunded: number;
  /** The record's result columns as JSON (packResultColumns), when its ledger shard sent them so. */
  packed?: string;
}

/**
 * The merchant's transactions with these ids as they are now, one ledger call per shard holding any
 * (a chunk's rows name at most 500, usually in a few day shards); unknown ids are left out. A
 * transaction a batch made costs a D1 read to find its batch's shard (once per batch).
 */
export async function currentTransactions(env: Env, caller: Caller, ids: readonly string[], clock: Clock): Promise<Map<string, CurrentTransaction>> {
  const now = clock();
  type Located = Extract<Awaited<ReturnType<typeof locateTransaction>>, { ok: true }>;
  const groups = new Map<string, { shard: Located['shard']; ids: string[]; exact: string[]; floor: string[] }>();
  const unique = [...new Set(ids)];
  const locations = await locateMany(env, caller.merchantId, unique, now);
  for (const located of locations) {
    if (!located.ok) continue;
    const name = located.shard.identity.name;
    const group = groups.get(name) ?? { shard: located.shard, ids: [], exact: [], floor: [] };
    group.ids.push(...located.query.ids);
    group.exact.push(...located.query.exact);
    group.floor.push(...located.query.floor);
    groups.set(name, group);
  }
  const current = { expiredBefore: expiresBefore(now, authorizationExpiryDays(env.AUTHORIZATION_EXPIRY_DAYS)) };
  const found = new Map<string, CurrentTransaction>();
  await Promise.all(
    [...groups.values()].map(async (group) => {
      const wanted = new Set(group.ids);
      const stored = await group.shard.stub.find(group.shard.identity, { ids: group.ids, exact: [...new Set(group.exact)], floor: [...new Set(group.floor)], current });
      for (const entry of stored) {
        if (wanted.has(String(entry.record.id)) && entry.record.status !== 'processing') {
          found.set(String(entry.record.id), { record: entry.record, amountRefunded: entry.amountRefunded ?? 0 });
        }
      }
    }),
  );
  return found;
}

/**
 * After the operations answered: `answered` is each one's answered record (the refund's for a
 * refund), null when it was refused or declined (nothing changed). Idempotent, as indexOperation.
 */
export async function indexOperations(
  env: Env,
  caller: Caller,
  operations: readonly { transactionId: string; answered: TransactionRecord | null; current?: CurrentTransaction | null }[],
  clock: Clock,
): Promise<void> {
  const changed = operations.filter((op): op is { transactionId: string; answered: TransactionRecord; current?: CurrentTransaction | null } => op.answered !== null);
  if (changed.length === 0) return;
  // The transaction as its ledger shard's answer left it, when the answer carried it (the shard
  // that applied the operation); read again only for the others (an operation another call had
  // answered first).
  const current = new Map<string, CurrentTransaction>();
  for (const op of changed) if (op.current) current.set(op.transactionId, op.current);
  const unread = changed.filter((op) => !current.has(op.transactionId)).map((op) => op.transactionId);
  if (unread.length > 0) for (const [id, now] of await currentTransactions(env, caller, unread, clock)) current.set(id, now);
  // One change call per day object: a transaction's day, in its shard's part.
  const byDay = new Map<string, { day: string; part: number; changes: ChangeInput[] }>();
  const pairs: { shard: string; day: string }[] = [];
  const located: { id: string; shard: string; day: string; now: CurrentTransaction }[] = [];
  for (const [id, now] of current) {
    const shard = shardOfId(caller.merchantId, id);
    if (shard === null) continue;
    const day = String(now.record.created_at).slice(0, 10);
    pairs.push({ shard, day });
    located.push({ id, shard, day, now });
  }
  const partOf = await registerShardDays(env, caller.merchantId, pairs);
  for (const { id, shard, day, now } of located) {
    const part = partOf(shard, day);
    const group = byDay.get(`${day}/${part}`) ?? { day, part, changes: [] };
    group.changes.push(changeInput(id, shard, now.record, now.amountRefunded, now.packed));
    byDay.set(`${day}/${part}`, group);
  }
  await Promise.all(
    [...byDay.values()].map(async ({ day, part, changes }) => {
      const written = await searchDay(env, caller.merchantId, day, part).change({ merchantId: caller.merchantId, day }, changes);
      if (typeof written !== 'number') throw new Error(`search day ${day} part ${part} could not be written: ${written.failed}`);
    }),
  );
  // A refund is a transaction of its own, made now: a unit in today's day object.
  const refunds = changed.filter((op) => op.answered.type === 'refund' && op.answered.id !== op.transactionId);
  const units = refunds.flatMap((op) => {
    const shard = shardOfId(caller.merchantId, op.transactionId);
    const { amount_refunded: _refunded, ...record } = op.answered as TransactionRecord & { amount_refunded?: number };
    return shard === null ? [] : [{ shard, page: String(record.id), at: String(record.created_at), records: [record] }];
  });
  await indexUnits(env, caller.merchantId, units);
}
