/**
 * A UUID v4 per request is the usual advice for Idempotency-Key, so no UUID may look like a card
 * number: 1,000 random ones over HTTP, all accepted (issue 21 found 1 in 190 refused). The three
 * fixed ones were refused by the previous detector. The million-sample rate is measured in Node:
 * test/node/card-number-ids.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { call, createMerchant } from '../helpers/api';
import { apiShardName, shardEntryList } from '../helpers/ledger';

const ONCE_REFUSED = ['b5be5c00-2564-4022-953b-e297f4e9f550', '27601905-7955-4877-b457-37476d72d99b', '63862298-3725-4ae6-862c-3ba9c53ea640'];
const sale = { transaction_type: 'sale', amount: 1250, cc_number: '4242424242424242', cc_expiration: '12/39' };

describe('UUIDs as idempotency keys', () => {
  it('accepts 1,000 UUID v4 keys and stores each as sent', async () => {
    const keys = [...ONCE_REFUSED, ...Array.from({ length: 1_000 - ONCE_REFUSED.length }, () => crypto.randomUUID())];
    // Two merchants: each key's transaction rate limit (600 a minute) stays out of the way.
    const merchants = [await createMerchant({ name: 'UUID Shop A' }), await createMerchant({ name: 'UUID Shop B' })];
    const statuses = new Map<number, number>();
    for (let i = 0; i < keys.length; i += 20) {
      const answers = await Promise.all(
        keys.slice(i, i + 20).map(async (key, j) => {
          const merchant = merchants[(i + j) % 2] as (typeof merchants)[number];
          const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: sale, headers: { 'Idempotency-Key': key } });
          await response.body?.cancel();
          return response.status;
        }),
      );
      for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 201: 1_000 });
    // Stored as sent: each in its merchant's ledger shard of the day, under the key itself.
    const stored = [...(await shardEntryList(apiShardName(merchants[0]?.id ?? ''))), ...(await shardEntryList(apiShardName(merchants[1]?.id ?? '')))];
    const keysStored = new Set(stored.map((s) => s.record.idempotency_key));
    expect(ONCE_REFUSED.filter((key) => keysStored.has(key))).toEqual(ONCE_REFUSED);
    expect(keysStored.size).toBe(1_000);
  }, 120_000);
});
