/**
 * A merchant's settlement (docs/transactions.md "Settlement", docs/capacity.md "Settlement"): one
 * object per merchant (`settlementObjectName`), holding the merchant's cutoff, the index of the
 * ledger shards that may hold money awaiting settlement, and the merchant's settlement batches.
 *
 * A shard is registered before money awaiting settlement is written in it (a sale or credit
 * approved, a capture, a refund), so a run never has to scan every shard: it asks only the shards of
 * the index, each in one call, and drops those left with nothing unsettled. The object's alarm runs
 * at the merchant's cutoff while the index is not empty; operators run it at once
 * (POST /admin/merchants/{id}/settle). Every run is idempotent: a shard answers every transaction it
 * settled on the day, whichever run settled it, and the batch's rows for that shard are replaced.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import type { SettledEntry, ShardIdentity } from '../storage/ledger-shard';
import {
  addShard,
  batchEntries,
  deleteBatchesBefore,
  initialiseSettlement,
  listShards,
  oldestBatchDate,
  readBatches,
  readSettlementMeta,
  removeShard,
  replaceEntries,
  searchBatches,
  writeCutoff,
  type BatchSearch,
  type SettlementBatch,
} from '../storage/settlement';
import { settlementBatchId } from '../services/transactions/lifecycle-rules';
import { announceSettlement } from '../services/settlement/events';
import { systemClock } from '../lib/time';
import { DEFAULT_CUTOFF, batchDateOf, lastCutoff } from '../services/settlement/cutoff';
import { indexSettlement } from '../services/search/changes'; // search (issue 33)

const DAY_MS = 86_400_000;

export interface SettlementRun {
  /** The batches this run made or added to, with their totals after it. */
  batches: SettlementBatch[];
  /** Shards that could not be settled now (their failure); the next run asks them again. */
  failed: string[];
}

export class MerchantSettlement extends DurableObject<Env> {
  #ensure(merchantId: string): void {
    if (!readSettlementMeta(this.ctx.storage.sql)) initialiseSettlement(this.ctx.storage.sql, merchantId, DEFAULT_CUTOFF);
  }

  #cutoff(): string {
    return readSettlementMeta(this.ctx.storage.sql)?.cutoff ?? DEFAULT_CUTOFF;
  }

  /** Indexes a shard (before money awaiting settlement is written there) and arms the cutoff's alarm. */
  async register(merchantId: string, shard: ShardIdentity, generation: number, now: string): Promise<true> {
    this.#ensure(merchantId);
    addShard(this.ctx.storage.sql, shard, generation, now);
    const next = lastCutoff(new Date(now), this.#cutoff()).getTime() + DAY_MS;
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > next) await this.ctx.storage.setAlarm(next);
    return true;
  }

  async cutoff(merchantId: string): Promise<string> {
    this.#ensure(merchantId);
    return this.#cutoff();
  }

  async setCutoff(merchantId: string, cutoff: string, now: string): Promise<string> {
    this.#ensure(merchantId);
    writeCutoff(this.ctx.storage.sql, cutoff);
    await this.#arm(new Date(now));
    return cutoff;
  }

  /**
   * Settles what the index's shards hold that was captured before `end`, into the batches of the day
   * that ends then. `end` is the last cutoff (the alarm), or now (an operator's settle now).
   */
  async settle(merchantId: string, end: string, now: string): Promise<SettlementRun> {
    this.#ensure(merchantId);
    const sql = this.ctx.storage.sql;
    const batchDate = batchDateOf(new Date(end));
    const touched = new Set<string>();
    const failed: string[] = [];
    for (const shard of listShards(sql)) {
      const answer = await this.env.LEDGER_SHARD.getByName(shard.name).settle(shard, { before: end, batchDate, settledAt: now });
      if ('failed' in answer) {
        failed.push(shard.name);
        continue;
      }
      // search (issue 33): the run's settled transactions marked in the search index before this shard's entries are recorded (a failure throws: the run is asked again)
      await indexSettlement(this.env, merchantId, shard.name, answer.entries, batchDate, now);
      const byProcessor = new Map<string, SettledEntry[]>();
      for (const entry of answer.entries) byProcessor.set(entry.processor_id, [...(byProcessor.get(entry.processor_id) ?? []), entry]);
      this.ctx.storage.transactionSync(() => {
        for (const [processorId, entries] of byProcessor) {
          const id = settlementBatchId(processorId, batchDate);
          if (replaceEntries(sql, { id, batchDate, processorId }, shard.name, entries, now)) touched.add(id);
        }
        if (!answer.holdsUnsettled) removeShard(sql, shard.name, answer.generation);
      });
    }
    return { batches: readBatches(sql, [...touched]), failed };
  }

  /** What the alarm does at `now` (tests pass their own clock): settle at the last cutoff, apply retention, re-arm. */
  async runDue(now: string, retentionDays: number): Promise<SettlementRun> {
    const meta = readSettlementMeta(this.ctx.storage.sql);
    if (!meta) return { batches: [], failed: [] };
    const at = new Date(now);
    const run = await this.settle(meta.merchantId, lastCutoff(at, meta.cutoff).toISOString(), now);
    deleteBatchesBefore(this.ctx.storage.sql, new Date(at.getTime() - retentionDays * DAY_MS).toISOString().slice(0, 10));
    await this.#arm(at, retentionDays);
    return run;
  }

  /** The next alarm: the next cutoff while shards are indexed, else the oldest batch's end of retention, else none. */
  async #arm(now: Date, retentionDays = 548): Promise<void> {
    const sql = this.ctx.storage.sql;
    if (listShards(sql).length > 0) {
      await this.ctx.storage.setAlarm(lastCutoff(now, this.#cutoff()).getTime() + DAY_MS);
      return;
    }
    const oldest = oldestBatchDate(sql);
    if (oldest === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Date.parse(`${oldest}T00:00:00.000Z`) + (retentionDays + 1) * DAY_MS);
  }

  async search(search: BatchSearch): Promise<{ batches: SettlementBatch[]; total: number }> {
    return searchBatches(this.ctx.storage.sql, search);
  }

  async batch(id: string, limit: number, offset: number): Promise<{ batch: SettlementBatch; transactions: { id: string; type: string; amount: number }[] } | null> {
    const batch = readBatches(this.ctx.storage.sql, [id])[0];
    return batch ? { batch, transactions: batchEntries(this.ctx.storage.sql, id, limit, offset) } : null;
  }

  /** The index, for tests and operators. */
  async indexedShards(): Promise<string[]> {
    return listShards(this.ctx.storage.sql).map((shard) => shard.name);
  }

  override async alarm(): Promise<void> {
    const days = Number(this.env.TRANSACTION_RETENTION_DAYS);
    const run = await this.runDue(new Date().toISOString(), Number.isFinite(days) && days > 0 ? days : 548);
    const meta = readSettlementMeta(this.ctx.storage.sql);
    if (meta && run.batches.length > 0) await announceSettlement(this.env, meta.merchantId, run.batches, systemClock);
  }
}
