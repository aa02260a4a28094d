/**
 * A week object fed by single API transactions (two references each, one fresh row per call) folds
 * and merges by size: its runs end as large as a batch-fed week's, so a look-up reads a bounded
 * number of blocks however the references came.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { SearchKeys } from '../../src/durable-objects/search/keys';
import { FOLD_AT, LEVEL_ENTRIES, MERGE_FANIN } from '../../src/durable-objects/search/keys';
import { keyHash } from '../../src/services/search/indexer';
import { searchKeysName } from '../../src/services/search/names';
import { initialiseKeys, insertFresh, sortedEntries } from '../../src/storage/search/keys';

const DAY_MS = 86_400_000;

/** A reference as the week object stores it: the day of the week (3 bits) and the millisecond of that day. */
function refOf(offset: number): number {
  const day = Math.floor(offset / DAY_MS);
  return ((day << 27) | (offset - day * DAY_MS)) >>> 0;
}

describe('a week object of API references', () => {
  it(`${LEVEL_ENTRIES * MERGE_FANIN} references of single transactions end in one or two runs, not ${MERGE_FANIN} capped ones; every value is still found`, async () => {
    const merchantId = `apikeys${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const week = '2027-04-05';
    const stub = env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week));
    const base = Date.parse(`${week}T00:00:00.000Z`);
    const calls = (LEVEL_ENTRIES * MERGE_FANIN) / 2;
    const runs = await runInDurableObject(stub, async (instance: SearchKeys, state) => {
      const sql = state.storage.sql;
      initialiseKeys(sql, { merchantId, week, deleteAt: '2099-01-01T00:00:00.000Z' });
      for (let i = 0; i < calls; i++) {
        // As `add` writes a transaction's row: its order and its customer, at its time.
        const at = base + i * 1_000;
        insertFresh(sql, sortedEntries([
          { hash: keyHash('order_id', `O${i}`), ref: refOf(at - base) },
          { hash: keyHash('customer_id', `C${i % 1_000}`), ref: refOf(at - base) },
        ]));
        if ((i + 1) % FOLD_AT === 0) while (await instance.upkeep(new Date(at).toISOString()));
      }
      return sql.exec<{ level: number; entries: number }>('SELECT level, entries FROM runs').toArray();
    });
    expect(runs.reduce((sum, r) => sum + r.entries, 0)).toBe(calls * 2);
    expect(runs.length).toBeLessThanOrEqual(2);
    const found = await stub.lookup(keyHash('order_id', `O${calls - 7}`), 10);
    expect(found.ats).toEqual([new Date(base + (calls - 7) * 1_000).toISOString()]);
    expect((await stub.lookup(keyHash('customer_id', 'C5'), 100_000)).ats).toHaveLength(Array.from({ length: calls }, (_, i) => i).filter((i) => i % 1_000 === 5).length);
  }, 120_000);
});
