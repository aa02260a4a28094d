/**
 * What recording transactions costs in D1, which bills every row written, each index entry
 * included (docs/cost.md): a new transaction is 2 rows (the row, keyed by merchant and idempotency
 * key, and the id index); a replayed one writes nothing. Counted from the real D1's meta.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { processTransactions } from '../../src/services/transactions/engine';
import { createMerchant, type TestMerchant } from '../helpers/api';

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Write Cost Shop' });
  caller = { merchantId: shop.id, merchantName: shop.name, keyId: 'key_test', keyType: 'secret', enhancedBinLookup: false, surchargeRateBps: 0 };
});

/** The env with its D1 counting the rows written by every statement the engine sends in a batch. */
function countingEnv(): { env: typeof env; written: () => number } {
  let written = 0;
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === 'batch') {
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements);
          for (const result of results) written += result.meta.rows_written;
          return results;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { env: { ...env, DB: db }, written: () => written };
}

function chunk(batchId: string, rows: number) {
  return Array.from({ length: rows }, (_, i) => ({
    input: { transaction_type: 'sale', cc_number: i % 2 ? '4242424242424242' : '5555555555554444', cc_expiration: '12/30', amount: String(1000 + i) },
    idempotencyKey: `${batchId}:${i + 2}`,
    line: i + 2,
  }));
}

describe('D1 rows written per transaction', () => {
  it('writes 2 rows per new transaction of a batch chunk, and none for a replayed chunk', async () => {
    const context = { source: 'batch' as const, ipAddress: null, batchId: 'writecost' };
    // The merchant's first call creates its sandbox processor: a one-off, not a per-row cost.
    await processTransactions(env, caller, chunk('warmup', 1), { ...context, batchId: 'warmup' }, () => new Date());

    const first = countingEnv();
    const outcomes = await processTransactions(first.env, caller, chunk('writecost', 50), context, () => new Date());
    expect(outcomes.every((o) => o.ok && !o.replayed)).toBe(true);
    expect(first.written()).toBe(50 * 2);

    const again = countingEnv();
    const replays = await processTransactions(again.env, caller, chunk('writecost', 50), context, () => new Date());
    expect(replays.every((o) => o.ok && o.replayed)).toBe(true);
    expect(again.written()).toBe(0);
  });
});
