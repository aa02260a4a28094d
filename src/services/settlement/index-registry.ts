/**
 * The settlement index (durable-objects/merchant-settlement.ts): the ledger shards of a merchant
 * that may hold money awaiting settlement. A shard is registered before such money is written in it,
 * so a settlement run asks only those shards, never every shard the merchant ever had.
 */
import type { Env } from '../../env';
import type { ShardIdentity } from '../../storage/ledger-shard';

/** The one place the object's name is made: one settlement object per merchant. */
export function settlementObjectName(merchantId: string): string {
  return merchantId;
}

export function settlementObject(env: Env, merchantId: string) {
  return env.MERCHANT_SETTLEMENT.getByName(settlementObjectName(merchantId));
}

/** Registers shards about to hold money awaiting settlement (idempotent: a shard already indexed costs no write). */
export async function registerUnsettled(env: Env, merchantId: string, shards: readonly ShardIdentity[], now: Date = new Date()): Promise<void> {
  if (shards.length === 0) return;
  await settlementObject(env, merchantId).register(merchantId, [...shards], now.toISOString());
}
