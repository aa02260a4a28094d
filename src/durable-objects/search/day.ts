/**
 * A search day: one merchant's transactions created on one UTC day, those of one part of its
 * ledger shards, as the search reads them (`searchDayName`, services/search/names.ts;
 * docs/capacity.md, "Search"). It mirrors the ledger's
 * pages that hold that day's records (one unit per page, as processed), the ledger's settlement
 * marks and the transactions changed since, and answers a day's part of a search: the positions
 * (time and id) of the matches, newest first, how many match, and the records of a page.
 *
 * Nothing here is the system of record: the ledger is. Every write is an idempotent upsert keyed by
 * the ledger page, so a retried call writes nothing twice. The object empties itself
 * TRANSACTION_RETENTION_DAYS after its day, as the ledger archives its shards.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import { rearmAfterFailure } from '../../lib/alarm-guard';
import { gunzipText } from '../../lib/gzip';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import { meetsAll } from '../../services/search/filters';
import { memberOf } from '../../services/search/unit-rows';
import { retentionDays } from '../../services/transactions/ledger';
import { presentRecord, settle } from '../../services/transactions/lifecycle-rules';
import { restrictedKeysBelow, unitKeysAtTimes } from '../../storage/search/day-keys';
import { mergeChanges, unitBlockChanges, upsertChanges } from '../../storage/search/day-changes';
import { findUnit, newUnitCache } from './day-units';
import {
  countBetween,
  dayNeedsUpgrade,
  initialiseDay,
  insertUnit,
  markUnitSettled,
  packRecord,
  readChanges,
  readDayMeta,
  readUnits,
  storedUnitKeys,
  unitKeyString,
  unitsAt,
  unitsBefore,
  unpackRecord,
  type PackedRecord,
  type StoredUnit,
  type ChangeInput,
  type ChangeRow,
  type DayFailure,
  type DayIdentity,
  type DayScan,
  type DayScanAnswer,
  type Position,
  type PresentTransaction,
  type UnitRow,
  type UnitKey,
} from '../../storage/search/day';

const DAY_MS = 86_400_000;
/** Units read per query while scanning newest first (a chunk's unit is about 50 KB compressed). */
const UNITS_PER_READ = 32;

async function answerOrFailure<T>(work: () => Promise<T>): Promise<T | DayFailure> {
  try {
    return await work();
  } catch (err) {
    return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
  }
}

/** Position order: newer first, then the greater id first. */
function before(a: Position, b: Position): boolean {
  return a.at > b.at || (a.at === b.at && a.id > b.id);
}

export class SearchDay extends DurableObject<Env> {
  async #ensure(identity: DayIdentity): Promise<void> {
    const meta = readDayMeta(this.ctx.storage.sql);
    // An object made by an older build gets the newer tables and indexes on its next write.
    if (meta && !dayNeedsUpgrade(this.ctx.storage.sql)) return;
    if (meta) return void initialiseDay(this.ctx.storage.sql, meta);
    const deleteAt = new Date(Date.parse(`${identity.day}T00:00:00.000Z`) + (retentionDays(this.env) + 1) * DAY_MS).toISOString();
    initialiseDay(this.ctx.storage.sql, { merchantId: identity.merchantId, day: identity.day, deleteAt });
    await this.ctx.storage.setAlarm(Date.parse(deleteAt));
  }

  /** The units of `keys` not stored yet: the indexer writes their references first, then them. */
  async missing(keys: readonly UnitKey[]): Promise<UnitKey[] | DayFailure> {
    return answerOrFailure(async () => {
      const stored = storedUnitKeys(this.ctx.storage.sql, keys);
      return keys.filter((key) => !stored.has(unitKeyString(key)));
    });
  }

  /**
   * Stores units not stored yet, as the caller encoded them (`unitRow`, services/search/unit-rows.ts:
   * a chunk's records gzip-compressed there, not here); answers how many were new.
   */
  async add(identity: DayIdentity, rows: readonly UnitRow[]): Promise<number | DayFailure> {
    return answerOrFailure(async () => {
      await this.#ensure(identity);
      let added = 0;
      this.ctx.storage.transactionSync(() => {
        for (const row of rows) if (insertUnit(this.ctx.storage.sql, row)) added++;
      });
      return added;
    });
  }

  /**
   * Stores the current records of transactions changed since processed (a capture, void or refund),
   * each on its unit. A transaction with no unit here (recorded before the search existed) gets a
   * unit of its own, so it is found from now on.
   */
  async change(identity: DayIdentity, changes: readonly ChangeInput[]): Promise<number | DayFailure> {
    return answerOrFailure(async () => {
      await this.#ensure(identity);
      const sql = this.ctx.storage.sql;
      const cache = newUnitCache();
      const located = changes.map((change) => ({ change, unit: findUnit(this.ctx.storage.sql, change.shard, change.id, cache) }));
      const orphans = located.filter((l) => l.unit === null);
      // Their own units: the record as it is now stands for "as processed" (nothing is older here).
      const orphanRows = orphans.map(({ change }) => ({
        shard: change.shard,
        page: change.id,
        at: change.createdAt,
        count: 1,
        pending: change.status === 'pending_settlement' ? 1 : 0,
        members: [memberOf(change.id)],
        format: 'json' as const,
        records: `[${change.packed}]`,
      }));
      const rows = located.map(({ change, unit }) => {
        const key = unit ?? { shard: change.shard, page: change.id, at: change.createdAt };
        const settledOn = change.settlementBatchId !== null && change.settledAt !== null ? settledDayOf(change.settlementBatchId) : null;
        return { ...key, id: change.id, rank: rankOf(change.status, change.amountRefunded), amountRefunded: change.amountRefunded, settledOn, packed: change.packed };
      });
      let written = 0;
      this.ctx.storage.transactionSync(() => {
        for (const row of orphanRows) insertUnit(sql, row);
        // A chunk's many changes on a unit kept as a block (storage/search/day-changes.ts).
        written = upsertChanges(sql, rows, { blocks: true }).filter(Boolean).length;
      });
      return written;
    });
  }

  /**
   * The ledger settled these transactions of `shard` on `batchDate` (a settlement run's answer for
   * that shard): their units are marked settled as the ledger marked its pages, and those changed
   * since processing are settled in their change rows. Answers how many of the ids this day holds.
   */
  async settled(shard: string, ids: readonly string[], batchDate: string, settledAt: string): Promise<number | DayFailure> {
    return answerOrFailure(async () => {
      const sql = this.ctx.storage.sql;
      if (!readDayMeta(sql)) return 0;
      let found = 0;
      const cache = newUnitCache();
      const unitOf = new Map<string, UnitKey>();
      for (const id of ids) {
        const unit = findUnit(sql, shard, id, cache);
        if (unit) unitOf.set(id, unit);
      }
      // Each transaction's change: its row, or its unit's blocks (a batch chunk's captures).
      const wanted = new Set(ids);
      const blocks = new Map<string, ChangeRow>();
      for (const unit of new Map([...unitOf.values()].map((u) => [unitKeyString(u), u])).values()) {
        for (const [id, change] of unitBlockChanges(sql, unit, wanted)) blocks.set(id, change);
      }
      const changes = mergeChanges(readChanges(sql, ids), blocks);
      const units = new Map<string, UnitKey>();
      for (const id of ids) {
        if (changes.has(id)) {
          found++;
          continue;
        }
        const unit = unitOf.get(id);
        if (unit) {
          found++;
          units.set(unitKeyString(unit), unit);
        }
      }
      this.ctx.storage.transactionSync(() => {
        for (const unit of units.values()) markUnitSettled(sql, unit, batchDate, settledAt);
        const settling = [...changes.values()].filter((change) => change.record.status === 'pending_settlement');
        upsertChanges(
          sql,
          settling.map((change) => {
            const { record: processed, ...row } = change;
            const record = settle(processed, batchDate, settledAt);
            return { ...row, rank: rankOf(record.status, change.amountRefunded), settledOn: batchDate, packed: JSON.stringify(packRecord(record)) };
          }),
        );
      });
      return found;
    });
  }

  /**
   * The ledger left these transactions of `shard` out of a settlement run while an operation on them
   * was in flight, though it marked their pages settled (docs/transactions.md, "Settlement and
   * operations"): each gets a change row holding its record as processed, still awaiting settlement,
   * unless it has one already (a later state, never overwritten), before its unit is marked settled.
   * Answers how many of the ids this day holds. Called before the run's entries, in the same order
   * as the ledger's handoff.
   */
  async held(shard: string, ids: readonly string[]): Promise<number | DayFailure> {
    return answerOrFailure(async () => {
      const sql = this.ctx.storage.sql;
      if (!readDayMeta(sql)) return 0;
      const changes = readChanges(sql, ids);
      const wanted = new Set(ids.filter((id) => !changes.has(id)));
      const units = new Map<string, UnitKey>();
      const cache = newUnitCache();
      for (const id of wanted) {
        const unit = findUnit(this.ctx.storage.sql, shard, id, cache);
        if (unit) units.set(unitKeyString(unit), unit);
      }
      // A change kept in its unit's blocks is a later state too.
      for (const unit of units.values()) for (const id of unitBlockChanges(sql, unit, wanted).keys()) wanted.delete(id);
      // Rare (an operation in flight as a run passes its page): the few units named are decoded whole.
      const found: { key: UnitKey; record: TransactionRecord }[] = [];
      for (const unit of readUnits(sql, [...units.values()])) {
        const text = unit.format === 'gzip' ? await gunzipText(unit.records as ArrayBuffer) : String(unit.records);
        for (const packed of JSON.parse(text) as PackedRecord[]) {
          const record = unpackRecord(packed);
          if (wanted.has(String(record.id))) found.push({ key: { shard: unit.shard, page: unit.page, at: unit.at }, record });
        }
      }
      this.ctx.storage.transactionSync(() => {
        upsertChanges(sql, found.map(({ key, record }) => ({ ...key, id: String(record.id), rank: rankOf(record.status, 0), amountRefunded: 0, settledOn: null, packed: JSON.stringify(packRecord(record)) })));
      });
      return found.length;
    });
  }

  /** The day's part of a search (docs/transactions.md, "Search"): positions newest first, and the count (a failure answered). */
  async scan(request: DayScan): Promise<DayScanAnswer | DayFailure> {
    return answerOrFailure(() => this.#scan(request));
  }

  async #scan(request: DayScan): Promise<DayScanAnswer> {
    const unfiltered = request.conditions.length === 0 && request.restrict.kind === 'all';
    const answer = await this.#positions(request, unfiltered);
    // With no condition every record of the window matches: the units' stored counts say how many,
    // one index entry read per unit, at most the call's budget of them (then a lower bound).
    if (unfiltered && request.count && readDayMeta(this.ctx.storage.sql)) {
      const counted = countBetween(this.ctx.storage.sql, request.from, request.to, request.budget);
      answer.count = counted.count;
      answer.read += counted.units;
      if (counted.units >= request.budget) answer.exact = false;
    }
    return answer;
  }

  async #positions(request: DayScan, unfiltered: boolean): Promise<DayScanAnswer> {
    const sql = this.ctx.storage.sql;
    const answer: DayScanAnswer = { positions: [], count: 0, exact: true, read: 0, stoppedAt: null };
    if (!readDayMeta(sql)) return answer;
    const countAll = request.count && !unfiltered;
    const done = () => answer.positions.length >= request.want && !countAll;

    const take = async (group: StoredUnit[]): Promise<void> => {
      const matches: PresentTransaction[] = [];
      for (const unit of group) {
        const present = await this.#present(unit, request.expiredBefore);
        answer.read += unit.count;
        for (const tx of present) if (meetsAll(tx, request.conditions)) matches.push(tx);
      }
      const positions = matches
        .map((tx) => ({ at: String(tx.record.created_at), id: String(tx.record.id) }))
        .sort((a, b) => (b.id > a.id ? 1 : b.id < a.id ? -1 : 0));
      if (countAll) answer.count += positions.length;
      for (const position of positions) {
        if (answer.positions.length >= request.want) break;
        if (request.after === null || before(request.after, position)) answer.positions.push(position);
      }
    };
    const outOfBudget = (at: string | undefined): DayScanAnswer => {
      answer.exact = !countAll;
      answer.stoppedAt = at ?? null;
      return answer;
    };

    // The window's upper end, or the cursor's time (its own time read too, for the smaller ids).
    const top = request.after === null || request.after.at >= request.to ? request.to : `${request.after.at}\u0000`;
    if (request.restrict.kind === 'all') {
      let to = countAll ? request.to : top;
      while (!done()) {
        const rows = unitsBefore(sql, { from: request.from, to }, UNITS_PER_READ);
        if (rows.length === 0) break;
        const groups = groupByTime(rows, rows.length === UNITS_PER_READ);
        // A time held by more units than one read: read that time whole.
        if (groups.length === 0) groups.push(unitsAt(sql, rows[0]?.at ?? ''));
        for (const group of groups) {
          await take(group);
          if (done()) break;
          if (answer.read >= request.budget) return outOfBudget(group[0]?.at);
        }
        to = groups.at(-1)?.[0]?.at ?? to;
      }
      return answer;
    }

    // The units an exact filter names, a read of keys at a time, newest first (never the day's whole list).
    let below = countAll ? request.to : top;
    while (!done()) {
      const keys = restrictedKeysBelow(sql, request.restrict, request.from, below);
      if (keys.length === 0) break;
      for (let i = 0; i < keys.length && !done(); ) {
        const at = keys[i]?.at as string;
        const group: UnitKey[] = [];
        while (i < keys.length && keys[i]?.at === at) group.push(keys[i++] as UnitKey);
        await take(readUnits(sql, group));
        below = at;
        const more = () => i < keys.length || restrictedKeysBelow(sql, request.restrict, request.from, at, 1).length > 0;
        if (answer.read >= request.budget && !done() && more()) return outOfBudget(at);
      }
    }
    return answer;
  }

  /** The records at these positions, as they are now (a failure is answered, not thrown: the caller throws it). */
  async records(positions: readonly Position[], expiredBefore: string): Promise<PresentTransaction[] | DayFailure> {
    return answerOrFailure(() => this.#records(positions, expiredBefore));
  }

  async #records(positions: readonly Position[], expiredBefore: string): Promise<PresentTransaction[]> {
    const sql = this.ctx.storage.sql;
    if (!readDayMeta(sql)) return [];
    const wanted = new Set(positions.map((p) => p.id));
    const found = new Map<string, PresentTransaction>();
    for (const unit of readUnits(sql, unitKeysAtTimes(sql, [...new Set(positions.map((p) => p.at))]))) {
      for (const tx of await this.#present(unit, expiredBefore)) {
        if (wanted.has(String(tx.record.id))) found.set(String(tx.record.id), tx);
      }
    }
    return positions.flatMap((p) => found.get(p.id) ?? []);
  }

  /** A unit's records as they are now: its settlement mark applied, changes winning, expiry read. */
  async #present(unit: StoredUnit, expiredBefore: string): Promise<PresentTransaction[]> {
    const text = unit.format === 'gzip' ? await gunzipText(unit.records as ArrayBuffer) : String(unit.records);
    const records = (JSON.parse(text) as PackedRecord[]).map(unpackRecord);
    const sql = this.ctx.storage.sql;
    const changes = unit.changed > 0 ? mergeChanges(readChanges(sql, records.map((r) => String(r.id))), unitBlockChanges(sql, unit)) : new Map<string, ChangeRow>();
    const settlement = { settledOn: unit.settled_on, settledAt: unit.settled_at };
    return records.map((record) => {
      const change = changes.get(String(record.id));
      return change
        ? { record: presentRecord(change.record, null, expiredBefore), amountRefunded: change.amountRefunded }
        : { record: presentRecord(record, settlement, expiredBefore), amountRefunded: 0 };
    });
  }

  /** Retention at `now` (the alarm's time; the bench passes its own): past TRANSACTION_RETENTION_DAYS the object empties itself. */
  async runRetention(now: string): Promise<boolean> {
    const meta = readDayMeta(this.ctx.storage.sql);
    if (!meta || meta.deleteAt > now) return false;
    await this.ctx.storage.deleteAll();
    return true;
  }

  override async alarm(): Promise<void> {
    await rearmAfterFailure(this.ctx.storage, 'search_day_alarm_failed', async () => {
      if (await this.runRetention(new Date().toISOString())) return;
      const meta = readDayMeta(this.ctx.storage.sql);
      if (meta) await this.ctx.storage.setAlarm(Date.parse(meta.deleteAt));
    });
  }
}

/** How far a status is along a transaction's life (lifecycle-rules.ts): a change never goes back. */
const STATUS_RANK: Record<string, number> = { pending_settlement: 1, settled: 2, voided: 2, partially_refunded: 3, refunded: 4 };

/** A change's rank: its status, then what was refunded (a second partial refund outranks the first). */
function rankOf(status: unknown, amountRefunded: number): number {
  return (STATUS_RANK[String(status)] ?? 0) * 1e12 + amountRefunded;
}

/** The settlement day a settled record's batch id names (`stl_{YYYYMMDD}_…`). */
function settledDayOf(settlementBatchId: unknown): string | null {
  const match = /^stl_([0-9]{4})([0-9]{2})([0-9]{2})_/.exec(String(settlementBatchId));
  return match ? `${match[1]}-${match[2]}-${match[3]}` : null;
}

/**
 * Units read newest first, split by creation time; when the read was full, the last time may go on
 * in the next read, so it is left for then (an empty answer: one time filled the whole read).
 */
function groupByTime(rows: readonly StoredUnit[], full: boolean): StoredUnit[][] {
  const groups: StoredUnit[][] = [];
  for (const row of rows) {
    const last = groups.at(-1);
    if (last && last[0]?.at === row.at) last.push(row);
    else groups.push([row]);
  }
  if (full) groups.pop();
  return groups;
}

