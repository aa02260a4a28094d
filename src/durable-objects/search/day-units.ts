/**
 * Which unit of a search day object holds a transaction (day.ts): its own page (an API
 * transaction, a refund), or its chunk's (a batch row), checked against the lines the unit holds: a
 * chunk may have been claimed by more than one attempt, and the floor page found may be an earlier
 * chunk held by this day while the row's own chunk ran on another day.
 */
import { chunkPage, parseTransactionId } from '../../services/transactions/ledger';
import { unitKeysOfFloorPage, unitKeysOfPage, unitKeyString, unitMembers, type UnitKey } from '../../storage/search/day';

/** What findUnit keeps for one call: each unit's lines as read, and the unit it found last. */
export interface UnitCache {
  members: Map<string, Set<number | string>>;
  last: { unit: UnitKey; lines: Set<number | string> } | null;
}

export function newUnitCache(): UnitCache {
  return { members: new Map(), last: null };
}

/**
 * The unit of `shard` holding transaction `id`, or null. A settlement's ids come in page order, so a
 * batch row's chunk is almost always the previous row's: found in `cache` with no query. (A query or
 * three per id made a step settling a 500,000-row file use 49 s of CPU, past the 30 s limit: bench,
 * largest group.) The units read in one call are at most its ids' (SETTLED_IDS_PER_CALL).
 */
export function findUnit(sql: SqlStorage, shard: string, id: string, cache: UnitCache): UnitKey | null {
  const parsed = parseTransactionId(id);
  // Only an API transaction or a refund is a unit of its own, keyed by its id.
  if (parsed?.kind !== 'batch') return unitKeysOfPage(sql, shard, id)[0] ?? null;
  if (cache.last?.unit.shard === shard && cache.last.lines.has(parsed.line)) return cache.last.unit;
  for (const unit of unitKeysOfFloorPage(sql, shard, chunkPage(parsed.line))) {
    const key = unitKeyString(unit);
    let lines = cache.members.get(key);
    if (lines === undefined) {
      lines = new Set(unitMembers(sql, unit));
      cache.members.set(key, lines);
    }
    if (lines.has(parsed.line)) {
      cache.last = { unit, lines };
      return unit;
    }
  }
  return null;
}
