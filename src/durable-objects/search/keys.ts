/**
 * A search key object: a merchant's `order_id` and `customer_id` references of one ISO week, those
 * of one part of its ledger shards (`searchKeysName`, services/search/names.ts; docs/capacity.md, "Search"), so that a search for one
 * value asks a week object instead of every day of the week. A reference says on which day, and at
 * which creation time, a unit holding the value was indexed; the day object then reads only those
 * units and checks the value itself.
 *
 * Writes append one fresh row per indexing call (a chunk's references, or a transaction's). The
 * object's alarm folds FOLD_AT fresh rows into a sorted run, and merges MERGE_FANIN runs of a level
 * into one: a run's level is its size (`levelOf`: entries in powers of 8 from LEVEL_ENTRIES), not
 * how many merges made it, so an API transaction's run of 64 entries merges with its like until it
 * is as big as a batch's. Each step is bounded (the largest merges runs of at most STEP_ENTRIES in
 * all, streamed a block at a time) and the alarm goes on until nothing is left to do. A look-up
 * reads the fresh rows and one block per run.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import { rearmAfterFailure } from '../../lib/alarm-guard';
import { HALF, WORKERS } from '../../lib/platform-limits';
import { retentionDays } from '../../services/transactions/ledger';
import {
  BLOCK_ENTRIES,
  deleteFreshThrough,
  deleteRun,
  freshCount,
  initialiseKeys,
  insertFresh,
  listRuns,
  readFresh,
  readKeysMeta,
  refsInRun,
  refsOf,
  RunReader,
  RunWriter,
  sortedEntries,
  hashAt,
  refAt,
  entryCount,
  type KeyRef,
  type KeysFailure,
  type KeysIdentity,
  type RunRow,
} from '../../storage/search/keys';

const DAY_MS = 86_400_000;
/** Fresh rows folded into one level-0 run (a batch chunk's row holds about 1,000 entries). */
export const FOLD_AT = 32;
/** Runs of a level merged into one of the next. */
export const MERGE_FANIN = 8;
/**
 * Level 0 holds runs under LEVEL_ENTRIES entries (32 batch chunks' worth), level 1 under 8 times as
 * many, and so on: a level's runs merge MERGE_FANIN at a time into a run of the same or the next
 * level, whatever made them. Runs of MAX_MERGED_LEVEL (2 million entries or more) merge only as many
 * as STEP_ENTRIES holds, into runs of about 16 million that merge no further. At 10 million
 * transactions a day with both references (140 million a week), a look-up then reads at most 7 runs
 * of each level below, about 12 of level 3 and 4 and up to FOLD_AT fresh rows: about 40 blocks,
 * whether the references came from files or from single API transactions.
 */
export const LEVEL_ENTRIES = 32_768;
export const MAX_MERGED_LEVEL = 3;
/** Entries one alarm step may fold and merge: the largest merge, within half of an invocation's CPU. */
export const STEP_ENTRIES = BLOCK_ENTRIES * 4_096;
const NANOSECONDS_PER_ENTRY_MERGED = 300;
if ((STEP_ENTRIES * NANOSECONDS_PER_ENTRY_MERGED) / 1e6 > WORKERS.cpuMsPerInvocation * HALF) throw new Error('STEP_ENTRIES exceeds the CPU budget');

export class SearchKeys extends DurableObject<Env> {
  async #ensure(identity: KeysIdentity): Promise<void> {
    if (readKeysMeta(this.ctx.storage.sql)) return;
    // The week's references serve searches as long as its last day's transactions are kept.
    const deleteAt = new Date(Date.parse(`${identity.week}T00:00:00.000Z`) + (7 + retentionDays(this.env) + 1) * DAY_MS).toISOString();
    initialiseKeys(this.ctx.storage.sql, { merchantId: identity.merchantId, week: identity.week, deleteAt });
    await this.ctx.storage.setAlarm(Date.parse(deleteAt));
  }

  /** Appends references (one fresh row); the alarm folds them when FOLD_AT rows wait. */
  async add(identity: KeysIdentity, refs: readonly KeyRef[]): Promise<true | KeysFailure> {
    try {
      if (refs.length === 0) return true;
      await this.#ensure(identity);
      const week = Date.parse(`${identity.week}T00:00:00.000Z`);
      const waiting = insertFresh(this.ctx.storage.sql, sortedEntries(refs.map(({ hash, at }) => ({ hash, ref: refOf(week, at) }))));
      if (waiting >= FOLD_AT) await this.ctx.storage.setAlarm(Date.now());
      return true;
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  /** The creation times of the units holding `hash` (at most `max`); `truncated` when there were more. */
  async lookup(hash: number, max: number): Promise<{ ats: string[]; truncated: boolean }> {
    const sql = this.ctx.storage.sql;
    const meta = readKeysMeta(sql);
    if (!meta) return { ats: [], truncated: false };
    const refs = new Set<number>();
    for (const { entries } of readFresh(sql, Number.MAX_SAFE_INTEGER)) refsOf(entries, hash, refs, max + 1);
    for (const run of listRuns(sql)) refsInRun(sql, run.id, hash, refs, max + 1);
    const week = Date.parse(`${meta.week}T00:00:00.000Z`);
    const ats = [...refs].slice(0, max).map((ref) => atOf(week, ref));
    return { ats, truncated: refs.size > max };
  }

  /**
   * One step of upkeep, at `now` (the alarm's time; tests call it with their own): fold the fresh
   * rows, merge a level that has MERGE_FANIN runs, empty the object past its retention. Answers
   * whether more work waits.
   */
  async upkeep(now: string): Promise<boolean> {
    const sql = this.ctx.storage.sql;
    const meta = readKeysMeta(sql);
    if (!meta) return false;
    if (meta.deleteAt <= now) {
      await this.ctx.storage.deleteAll();
      return false;
    }
    let budget = STEP_ENTRIES;
    while (budget > 0) {
      if (freshCount(sql) >= FOLD_AT) {
        budget -= this.#fold();
        continue;
      }
      const level = mergeableLevel(listRuns(sql));
      if (level === null) break;
      budget -= this.#merge(level);
    }
    return freshCount(sql) >= FOLD_AT || mergeableLevel(listRuns(sql)) !== null;
  }

  /** The oldest FOLD_AT fresh rows become one sorted level-0 run. */
  #fold(): number {
    const sql = this.ctx.storage.sql;
    let folded = 0;
    this.ctx.storage.transactionSync(() => {
      const rows = readFresh(sql, FOLD_AT);
      const pairs: { hash: number; ref: number }[] = [];
      for (const { entries } of rows) for (let i = 0; i < entryCount(entries); i++) pairs.push({ hash: hashAt(entries, i), ref: refAt(entries, i) });
      const sorted = sortedEntries(pairs);
      const writer = new RunWriter(sql, levelOf(pairs.length));
      for (let i = 0; i < sorted.length; i += 3) writer.push(sorted[i] ?? 0, sorted[i + 1] ?? 0, sorted[i + 2] ?? 0);
      writer.close();
      const last = rows.at(-1);
      if (last) deleteFreshThrough(sql, last.seq);
      folded = pairs.length;
    });
    return folded;
  }

  /** The oldest MERGE_FANIN runs of `level` merge into one run of the next, streamed a block at a time. */
  #merge(level: number): number {
    const sql = this.ctx.storage.sql;
    let merged = 0;
    this.ctx.storage.transactionSync(() => {
      const inputs = mergeInputs(listRuns(sql), level);
      const readers = inputs.map((run) => new RunReader(sql, run.id));
      const writer = new RunWriter(sql, levelOf(inputs.reduce((sum, run) => sum + run.entries, 0)));
      for (;;) {
        let best: RunReader | null = null;
        for (const reader of readers) {
          if (reader.ended) continue;
          if (best === null || reader.hi < best.hi || (reader.hi === best.hi && (reader.lo < best.lo || (reader.lo === best.lo && reader.ref < best.ref)))) best = reader;
        }
        if (best === null) break;
        writer.push(best.hi, best.lo, best.ref);
        best.advance();
        merged++;
      }
      writer.close();
      for (const run of inputs) deleteRun(sql, run.id);
    });
    return merged;
  }

  override async alarm(): Promise<void> {
    // Folds, merges and retention ride on this one chain: a failing step is tried again, not dropped.
    await rearmAfterFailure(this.ctx.storage, 'search_keys_alarm_failed', async () => {
      const more = await this.upkeep(new Date().toISOString());
      const meta = readKeysMeta(this.ctx.storage.sql);
      if (!meta) return;
      await this.ctx.storage.setAlarm(more ? Date.now() : Date.parse(meta.deleteAt));
    });
  }
}

/** A run's level from its size: under LEVEL_ENTRIES is 0, each next level 8 times as large. */
export function levelOf(entries: number): number {
  let level = 0;
  for (let bound = LEVEL_ENTRIES; entries >= bound && level < MAX_MERGED_LEVEL + 1; bound *= MERGE_FANIN) level++;
  return level;
}

/**
 * The oldest runs of `level` to merge: MERGE_FANIN of them, or at MAX_MERGED_LEVEL as many of the
 * oldest as STEP_ENTRIES holds (at least two).
 */
function mergeInputs(runs: readonly RunRow[], level: number): RunRow[] {
  const same = runs.filter((run) => run.level === level);
  if (level < MAX_MERGED_LEVEL) return same.slice(0, MERGE_FANIN);
  const inputs: RunRow[] = [];
  let total = 0;
  for (const run of same) {
    if (inputs.length >= 2 && total + run.entries > STEP_ENTRIES) break;
    inputs.push(run);
    total += run.entries;
  }
  return inputs;
}

/** The lowest level up to MAX_MERGED_LEVEL holding MERGE_FANIN runs, or null. */
function mergeableLevel(runs: readonly RunRow[]): number | null {
  const counts = new Map<number, number>();
  for (const run of runs) counts.set(run.level, (counts.get(run.level) ?? 0) + 1);
  for (const [level, count] of [...counts].sort((a, b) => a[0] - b[0])) if (level <= MAX_MERGED_LEVEL && count >= MERGE_FANIN) return level;
  return null;
}

/** A reference: the day within the week (3 bits) and the millisecond of that day (27 bits). */
function refOf(week: number, at: string): number {
  const offset = Date.parse(at) - week;
  const day = Math.floor(offset / DAY_MS);
  return ((day << 27) | (offset - day * DAY_MS)) >>> 0;
}

function atOf(week: number, ref: number): string {
  const day = ref >>> 27;
  const ms = ref & 0x7ffffff;
  return new Date(week + day * DAY_MS + ms).toISOString();
}
