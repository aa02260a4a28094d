/**
 * A merchant's search directory (`searchDirectory`, services/search/names.ts; docs/capacity.md,
 * "Search"): which days hold search data and in which parts of their index, which days each ledger
 * shard's units are in, and which days hold what settled on a given day. A search asks it first, then only the day objects it
 * names. The indexer writes it before the day objects (an entry for a day still empty is harmless;
 * a day missing from it would hide data), once per shard and day.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import { rearmAfterFailure } from '../../lib/alarm-guard';
import { searchPartOf } from '../../services/search/names';
import { retentionDays } from '../../services/transactions/ledger';
import {
  addSettledDays,
  addShardDays,
  dayPartsBetween,
  daysBetween,
  deleteDaysBefore,
  directoryNeedsUpgrade,
  initialiseDirectory,
  oldestDay,
  readDirectoryMerchant,
  settledDayParts,
  settledDays,
  shardDays,
  shardDaysWithLegacy,
  type DayParts,
} from '../../storage/search/directory';

const DAY_MS = 86_400_000;

export type DirectoryFailure = { failed: string };

export class SearchDirectory extends DurableObject<Env> {
  async #ensure(merchantId: string): Promise<void> {
    const known = readDirectoryMerchant(this.ctx.storage.sql);
    if (known !== null && !directoryNeedsUpgrade(this.ctx.storage.sql)) return;
    initialiseDirectory(this.ctx.storage.sql, known ?? merchantId);
  }

  /** A directory written by an older build gets its newer tables before it is read (its days then in part 0). */
  #upgraded(): void {
    const known = readDirectoryMerchant(this.ctx.storage.sql);
    if (known !== null && directoryNeedsUpgrade(this.ctx.storage.sql)) initialiseDirectory(this.ctx.storage.sql, known);
  }

  async #arm(): Promise<void> {
    const oldest = oldestDay(this.ctx.storage.sql);
    if (oldest === null) return;
    const at = Date.parse(`${oldest}T00:00:00.000Z`) + (retentionDays(this.env) + 1) * DAY_MS;
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > at) await this.ctx.storage.setAlarm(at);
  }

  /**
   * Records where units of these shards are, and answers the part of each day's index each pair's
   * writes go to (idempotent): its shard's part, or part 0 for a pair listed before the split.
   */
  async addShards(merchantId: string, pairs: readonly { shard: string; day: string }[]): Promise<{ parts: number[] } | DirectoryFailure> {
    try {
      await this.#ensure(merchantId);
      const parted = pairs.map((pair) => ({ ...pair, part: searchPartOf(pair.shard) }));
      const parts = this.ctx.storage.transactionSync(() => addShardDays(this.ctx.storage.sql, parted));
      await this.#arm();
      return { parts };
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  /** Records the days holding transactions settled on `settledOn` (idempotent). */
  async addSettled(merchantId: string, settledOn: string, days: readonly string[]): Promise<true | DirectoryFailure> {
    try {
      await this.#ensure(merchantId);
      this.ctx.storage.transactionSync(() => addSettledDays(this.ctx.storage.sql, settledOn, days));
      return true;
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  /** The days holding units from `from` to `to` (YYYY-MM-DD, both included), newest first. */
  async days(from: string, to: string): Promise<string[]> {
    return daysBetween(this.ctx.storage.sql, from, to);
  }

  /** The days holding units from `from` to `to` (YYYY-MM-DD, both included), newest first, with the parts holding them. */
  async dayParts(from: string, to: string): Promise<DayParts[]> {
    this.#upgraded();
    return dayPartsBetween(this.ctx.storage.sql, from, to);
  }

  /** The days holding transactions settled on `settledOn`, newest first, with every part of each. */
  async settledDayParts(settledOn: string): Promise<DayParts[]> {
    this.#upgraded();
    return settledDayParts(this.ctx.storage.sql, settledOn);
  }

  /** The days a ledger shard's units are in, newest first, with the part of the day's index holding them. */
  async shardDayParts(shard: string): Promise<{ day: string; part: number }[]> {
    this.#upgraded();
    const part = searchPartOf(shard);
    return shardDaysWithLegacy(this.ctx.storage.sql, shard).map((d) => ({ day: d.day, part: d.legacy ? 0 : part }));
  }

  /** The days a ledger shard's units are in, newest first. */
  async shardDays(shard: string): Promise<string[]> {
    return shardDays(this.ctx.storage.sql, shard);
  }

  /** The days holding transactions settled on `settledOn`, newest first. */
  async settledDays(settledOn: string): Promise<string[]> {
    return settledDays(this.ctx.storage.sql, settledOn);
  }

  /** Retention at `now` (the alarm's time; tests pass their own): rows of days past it leave. */
  async runRetention(now: string): Promise<number> {
    const keepFrom = new Date(Date.parse(now) - retentionDays(this.env) * DAY_MS).toISOString().slice(0, 10);
    return deleteDaysBefore(this.ctx.storage.sql, keepFrom);
  }

  override async alarm(): Promise<void> {
    await rearmAfterFailure(this.ctx.storage, 'search_directory_alarm_failed', async () => {
      await this.runRetention(new Date().toISOString());
      await this.#arm();
    });
  }
}
