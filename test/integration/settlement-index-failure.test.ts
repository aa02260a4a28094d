/**
 * A search index object that keeps failing holds back only the ledger shard whose transactions it
 * indexes, with the same backoff as a failing shard: the merchant's other shards settle meanwhile,
 * and the held shard settles once the object answers again.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { authenticateKey } from '../../src/services/merchants';
import { searchDayName } from '../../src/services/search/names';
import { settleMerchantNow } from '../../src/services/settlement/runs';
import { processTransactions } from '../../src/services/recorded';
import { utcDay } from '../../src/services/transactions/ledger';
import { initialiseDay } from '../../src/storage/search/day';
import { call, createMerchant } from '../helpers/api';
import { captureLogsOfEachTest } from '../helpers/logs';

const DAY_MS = 86_400_000;

describe('a failing search index object during settlement', () => {
  // The failures it causes are logged at error level: captured, so a green run prints none.
  captureLogsOfEachTest();
  it("backs off its own shard; the merchant's other shards settle", async () => {
    const shop = await createMerchant({ name: 'Index Failure Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    const days = [new Date(Date.now() - 3 * DAY_MS), new Date(Date.now() - 2 * DAY_MS)];
    // The first day's index object refuses to mark anything settled (from before its transaction is
    // made: the merchant's settlement alarm may run as soon as the shard is registered).
    const failing = env.SEARCH_DAY.getByName(searchDayName(shop.id, utcDay(days[0] as Date)));
    await runInDurableObject(failing, (_instance, state) => {
      initialiseDay(state.storage.sql, { merchantId: shop.id, day: utcDay(days[0] as Date), deleteAt: '2099-01-01T00:00:00.000Z' });
      state.storage.sql.exec("CREATE TRIGGER refuse_settled BEFORE UPDATE ON units BEGIN SELECT RAISE(ABORT, 'index object failing'); END");
    });
    const ids: string[] = [];
    for (const at of days) {
      const [outcome] = await processTransactions(
        env,
        caller,
        [{ input: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/39', amount: '2500' }, idempotencyKey: crypto.randomUUID() }],
        { source: 'api', ipAddress: null },
        () => at,
      );
      if (!outcome?.ok) throw new Error(`sale failed: ${JSON.stringify(outcome)}`);
      ids.push(String(outcome.record.id));
    }
    const found = async (id: string) => (await (await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { transaction_id: { operator: '=', value: id } } })).json<{ data: { status: string }[] }>()).data[0]?.status;
    const settledCount = (batches: { num_transactions: number }[]) => batches.reduce((sum, b) => sum + b.num_transactions, 0);

    // The healthy day's shard settles; the other waits (the run is not finished), its page not recorded.
    const first = await settleMerchantNow(env, shop.id, () => new Date());
    expect(first.finished).toBe(false);
    expect(await found(ids[1] as string)).toBe('settled');
    expect(await found(ids[0] as string)).toBe('pending_settlement');

    // The object answers again: after its backoff the held shard settles too.
    await runInDurableObject(failing, (_instance, state) => {
      state.storage.sql.exec('DROP TRIGGER refuse_settled');
    });
    const later = await settleMerchantNow(env, shop.id, () => new Date(Date.now() + 3_600_000));
    expect(later.finished).toBe(true);
    expect(settledCount(later.batches)).toBe(2);
    expect(await found(ids[0] as string)).toBe('settled');
  });
});
