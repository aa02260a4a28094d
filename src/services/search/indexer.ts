/**
 * Writing the search index on a transaction's own path (docs/capacity.md, "Search", "Read your
 * writes"): the records an engine call answered, before that call's answer is sent (an API request)
 * or its chunk is counted (a batch). The unit of indexing is the ledger's page: a batch chunk's
 * claim (up to 500 records, one row) or one API transaction or refund.
 *
 * Order, so that a crash at any point is repaired by the retry (a replayed request, a redelivered
 * chunk): the directory learns the (shard, day) first; the day object says which units it lacks;
 * their references go to the week objects; then the units. A unit present means its references
 * are too, so a replay writes nothing twice.
 */
import type { Env } from '../../env';
import { hash53 } from '../../lib/hash53';
import { MemoryCache } from '../../lib/memory-cache';
import type { TransactionContext, TransactionOutcome, TransactionRequest } from '../../schemas/transaction-columns';
import { unitKeyString, type UnitInput, type UnitKey } from '../../storage/search/day';
import type { KeyRef } from '../../storage/search/keys';
import { chunkPage, ledgerShardName, parseTransactionId } from '../transactions/ledger';
import { searchDay, searchDirectory, searchKeys, searchPartOf, weekOf } from './names';
import { unitRow } from './unit-rows';

/**
 * (merchant, shard, day) pairs this isolate knows the directory holds, with the part of the day's
 * index their writes go to: one directory call per shard and day, not per chunk.
 */
const registered = new MemoryCache<number>(10_000);

/** The value a reference index entry stands for: the field's letter and the value. */
export function keyHash(field: 'order_id' | 'customer_id', value: string): number {
  return hash53(`${field === 'order_id' ? 'o' : 'c'}\n${value}`);
}

/** The ledger shard holding a transaction, from its id (a refund's is its original's). */
export function shardOfId(merchantId: string, id: string): string | null {
  const named = parseTransactionId(id);
  const parsed = named?.kind === 'refund' ? named.original : named;
  if (!parsed) return null;
  return parsed.kind === 'batch'
    ? ledgerShardName({ kind: 'batch', merchantId, batchId: parsed.batchId })
    : ledgerShardName({ kind: 'api', merchantId, day: parsed.day, sub: parsed.sub });
}

/** The records an engine call answered, indexed (the engine's hook). */
export async function indexOutcomes(
  env: Env,
  merchantId: string,
  requests: readonly TransactionRequest[],
  context: TransactionContext,
  outcomes: readonly TransactionOutcome[],
): Promise<void> {
  const records = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.record] : []));
  if (records.length === 0) return;
  const lines = requests.flatMap((r) => (r.line === undefined ? [] : [r.line]));
  // A batch chunk's records are one ledger page: the chunk's, named by its first line.
  const chunk = context.source === 'batch' && context.batchId !== undefined ? chunkPage(context.chunkFirstLine ?? Math.min(...lines)) : null;
  const units = new Map<string, UnitInput>();
  for (const record of records) {
    const id = String(record.id);
    const shard = shardOfId(merchantId, id);
    if (shard === null) continue;
    const key = { shard, page: chunk ?? id, at: String(record.created_at) };
    const unit = units.get(unitKeyString(key)) ?? { ...key, records: [] };
    unit.records.push(record);
    units.set(unitKeyString(key), unit);
  }
  await indexUnits(env, merchantId, [...units.values()]);
}

/**
 * Indexes units (new records of ledger pages), each in the day object of its creation day and of its
 * shard's part (`searchPartOf`): a chunk or API transaction writes only its own part's objects.
 */
export async function indexUnits(env: Env, merchantId: string, units: readonly UnitInput[]): Promise<void> {
  if (units.length === 0) return;
  const partOf = await registerShardDays(
    env,
    merchantId,
    units.map((u) => ({ shard: u.shard, day: u.at.slice(0, 10) })),
  );
  const byDayPart = new Map<string, { day: string; part: number; units: UnitInput[] }>();
  for (const unit of units) {
    const day = unit.at.slice(0, 10);
    const part = partOf(unit.shard, day);
    const group = byDayPart.get(`${day}/${part}`) ?? { day, part, units: [] };
    group.units.push(unit);
    byDayPart.set(`${day}/${part}`, group);
  }
  await Promise.all(
    [...byDayPart.values()].map(async ({ day, part, units: dayUnits }) => {
      const stub = searchDay(env, merchantId, day, part);
      const absent = await stub.missing(dayUnits.map(keyOf));
      if (!Array.isArray(absent)) throw new Error(`search day ${day} part ${part} could not be read: ${absent.failed}`);
      const missing = new Set(absent.map(unitKeyString));
      const fresh = dayUnits.filter((unit) => missing.has(unitKeyString(unit)));
      if (fresh.length === 0) return;
      await addReferences(env, merchantId, day, part, fresh);
      // Packed and compressed here, in this invocation, not in the day object its part's writers share.
      const rows = await Promise.all(fresh.map(unitRow));
      const added = await stub.add({ merchantId, day }, rows);
      if (typeof added !== 'number') throw new Error(`search day ${day} part ${part} could not be written: ${added.failed}`);
    }),
  );
}

/**
 * Makes sure the directory lists these shards on these days (cached per isolate), and answers the
 * part of the day's index each pair's writes go to (`searchPartOf`, or part 0 for a pair the
 * directory listed before the index was split).
 */
export async function registerShardDays(env: Env, merchantId: string, pairs: readonly { shard: string; day: string }[]): Promise<(shard: string, day: string) => number> {
  const keyOf = (shard: string, day: string) => `${merchantId}\n${shard}\n${day}`;
  const parts = new Map<string, number>();
  const unknown = new Map<string, { shard: string; day: string }>();
  for (const pair of pairs) {
    const key = keyOf(pair.shard, pair.day);
    const known = registered.get(key);
    if (known === undefined) unknown.set(key, pair);
    else parts.set(key, known);
  }
  if (unknown.size > 0) {
    const done = await searchDirectory(env, merchantId).addShards(merchantId, [...unknown.values()]);
    if ('failed' in done) throw new Error(`search directory could not be written: ${done.failed}`);
    [...unknown.keys()].forEach((key, i) => {
      const part = done.parts[i] ?? 0;
      registered.set(key, part);
      parts.set(key, part);
    });
  }
  return (shard, day) => parts.get(keyOf(shard, day)) ?? searchPartOf(shard);
}

/** The order_id and customer_id references of new units of one part, one call to that part's week object. */
async function addReferences(env: Env, merchantId: string, day: string, part: number, units: readonly UnitInput[]): Promise<void> {
  const refs: KeyRef[] = [];
  for (const unit of units) {
    const seen = new Set<number>();
    for (const record of unit.records) {
      for (const field of ['order_id', 'customer_id'] as const) {
        const value = record[field];
        if (typeof value !== 'string' || value === '') continue;
        const hash = keyHash(field, value);
        // One reference per value and unit: the unit is read whole anyway.
        if (seen.has(hash)) continue;
        seen.add(hash);
        refs.push({ hash, at: unit.at });
      }
    }
  }
  if (refs.length === 0) return;
  const week = weekOf(day);
  const done = await searchKeys(env, merchantId, week, part).add({ merchantId, week }, refs);
  if (done !== true) throw new Error(`search keys ${week} part ${part} could not be written: ${done.failed}`);
}

function keyOf(unit: UnitKey): UnitKey {
  return { shard: unit.shard, page: unit.page, at: unit.at };
}

