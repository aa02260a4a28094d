/**
 * The settlement index (durable-objects/merchant-settlement.ts): the ledger shards of a merchant
 * that may hold money awaiting settlement. A shard registers itself before such money is written in
 * it (durable-objects/ledger-shard/settlement.ts), so a settlement run asks only those shards, never every
 * shard the merchant ever had.
 */
import type { Env } from '../../env';

/** The one place the object's name is made: one settlement object per merchant. */
export function settlementObjectName(merchantId: string): string {
  return merchantId;
}

export function settlementObject(env: Env, merchantId: string) {
  return env.MERCHANT_SETTLEMENT.getByName(settlementObjectName(merchantId));
}
