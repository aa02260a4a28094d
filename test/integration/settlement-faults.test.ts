/**
 * Nothing left behind after a fault, on settlement's side: a search index object that keeps failing
 * holds back only the shard whose piece it could not mark (that shard waits, as a failing shard
 * does), while the merchant's other shards settle.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import { authenticateKey } from '../../src/services/merchants';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { searchDay } from '../../src/services/search/names';
import { processTransactions } from '../../src/services/recorded';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { QUEUE_TEST_TIMEOUT } from '../helpers/batch';
import { apiShardName } from '../helpers/ledger';

const DAY = 86_400_000;
const VISA = '4111111111111111';
const D = Math.floor(Date.now() / DAY) * DAY + 11 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

async function callerOf(merchant: TestMerchant): Promise<Caller> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('unknown key');
  return caller;
}

async function saleAt(caller: Caller, atMs: number, amount: number): Promise<void> {
  const [outcome] = await processTransactions(
    env,
    caller,
    [{ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: String(amount) }, idempotencyKey: crypto.randomUUID() }],
    { source: 'api', ipAddress: null },
    () => new Date(atMs),
  );
  if (!outcome?.ok) throw new Error(`sale failed: ${JSON.stringify(outcome)}`);
}

describe('a failing search index object during settlement', () => {
  it("holds back only its shard, which waits and settles once the index answers; the merchant's other shards settle meanwhile", async () => {
    const shop = await createMerchant({ name: 'Index Down Shop' });
    const caller = await callerOf(shop);
    // Two API days: the first shard (asked first, in name order) is the one whose index fails.
    await saleAt(caller, D - DAY + 3_600_000, 111);
    await saleAt(caller, D + 3_600_000, 222);
    const day = searchDay(env, shop.id, iso(D - DAY).slice(0, 10));
    await runInDurableObject(day, (_i, state) => state.storage.sql.exec('ALTER TABLE units RENAME TO units_away'));
    const logs = vi.spyOn(console, 'log').mockImplementation(() => {});
    const first = await settlementObject(env, shop.id).runDue(iso(D + DAY), 548);
    logs.mockRestore();
    expect(first.error).toBeUndefined();
    expect(first).toMatchObject({ done: false, failed: [apiShardName(shop.id, iso(D - DAY).slice(0, 10))] });
    const now = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    expect(now.batches.map((b) => [b.num_transactions, b.amount_captured])).toEqual([[1, 222]]);
    // The shard waits (backoff), and the alarm is armed for its retry.
    const alarm = await runInDurableObject(settlementObject(env, shop.id), (_i, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(D + DAY);

    await runInDurableObject(day, (_i, state) => state.storage.sql.exec('ALTER TABLE units_away RENAME TO units'));
    const second = await settlementObject(env, shop.id).runDue(iso(Number(alarm)), 548);
    expect(second.done).toBe(true);
    expect(second.batches.map((b) => [b.num_transactions, b.amount_captured])).toEqual([[2, 333]]);
  }, QUEUE_TEST_TIMEOUT);
});
