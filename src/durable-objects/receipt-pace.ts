/**
 * A shard of the service-wide receipt pace (docs/receipts.md, "The pace"): RECEIPT_PACE_SHARDS
 * objects (`pace/0` … `pace/3`), each granting its share of RECEIPT_SENDS_PER_MINUTE in a UTC
 * minute. A ledger shard's sender asks one of them, chosen at random, once per run: the sum of the
 * shares keeps the whole service under the pace, no single row or object takes every shard's
 * writes, and a merchant's runs draw on every share rather than one.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { RECEIPT_PACE_SCHEMA, returnPace, takePace } from '../storage/receipt-pace';

export class ReceiptPace extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(RECEIPT_PACE_SCHEMA);
  }

  /** Sends granted now out of `wanted`, at most `perMinute` in the minute of `now`. */
  async take(now: string, wanted: number, perMinute: number): Promise<number> {
    return this.ctx.storage.transactionSync(() => takePace(this.ctx.storage.sql, now, wanted, perMinute));
  }

  /** Gives back sends granted and not made. */
  async giveBack(now: string, unused: number): Promise<void> {
    this.ctx.storage.transactionSync(() => returnPace(this.ctx.storage.sql, now, unused));
  }
}
