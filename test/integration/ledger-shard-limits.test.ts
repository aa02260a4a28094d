/**
 * A ledger shard inside Cloudflare's production limits, which the local runtime does not enforce
 * (docs/capacity.md, "A shard's jobs"): an archive of several R2 parts completes (every part but the
 * last the same size); a claim of 500 rows with every text field at its maximum fits SQLite's 2 MB
 * row (enforced here by a trigger, as production would refuse the row); hash clearing and the
 * archive run in bounded steps over several calls, each armed by the alarm.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { DURABLE_OBJECTS } from '../../src/lib/platform-limits';
import { authenticateKey } from '../../src/services/merchants';
import { CONTACT_COLUMNS, MAX_CONTACT_LENGTH, MAX_DESCRIPTION_LENGTH } from '../../src/services/transactions/validation';
import { createShardTables } from '../../src/storage/ledger-shard';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { shardEntryList } from '../helpers/ledger';
import { likeRecords, randomText, seedShard, shardOf, templateRecord } from '../helpers/shard-seed';

const DAY = 86_400_000;
/** Days from now, so the shards' real alarms never run while a test plays with their time. */
const START = Math.floor(Date.now() / DAY) * DAY + 9 * DAY;
const SALE = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' } as const;

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Limits Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('setup: unknown key');
  caller = found;
});

/**
 * Production refuses a row over 2 MB (DURABLE_OBJECTS.rowBytes); the local runtime stores it. These
 * triggers refuse it here too, on the shard's claims and pages.
 */
async function enforceRowLimit(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    createShardTables(sql);
    for (const [table, column] of [['claims', 'entries'], ['pages', 'records']] as const) {
      for (const event of ['INSERT', 'UPDATE']) {
        sql.exec(
          `CREATE TRIGGER row_limit_${table}_${event} BEFORE ${event} ON ${table} WHEN length(CAST(NEW.${column} AS BLOB)) > ${DURABLE_OBJECTS.rowBytes}
           BEGIN SELECT RAISE(ABORT, 'row over 2 MB'); END`,
        );
      }
    }
  });
}

describe('an archive of any size', () => {
  it('a shard whose archive takes three R2 parts and more is archived, every record in it, and emptied', async () => {
    const template = await templateRecord(caller, new Date(START), SALE);
    // Random text in every contact field: about 6 KB a record that gzip keeps near 4 KB, so 4,000
    // records make a file over 15 MiB: three parts of 5 MiB and a last one.
    const records = likeRecords(template, 4_000, 'arch', (record) => {
      for (const column of CONTACT_COLUMNS) (record as Record<string, unknown>)[column] = randomText(MAX_CONTACT_LENGTH);
    });
    const shard = shardOf({ kind: 'batch', merchantId: shop.id, batchId: 'bat_archive0000000000001' }, new Date(START).toISOString());
    // Chunks of 50 rows: the archive reads 20 pages (1,000 records, about 4 MB of gzip) at a time.
    await seedShard(shard, records, 50);
    const archiveAt = new Date(Date.parse(shard.identity.archiveAt)).toISOString();
    const done = await shard.stub.runRetention(archiveAt);
    expect(done).toMatchObject({ archived: true, lines: 4_000, more: false, key: `ledger-archive/${shard.identity.name}/` });
    const listed = await env.FILES.list({ prefix: `ledger-archive/${shard.identity.name}/` });
    expect(listed.objects).toHaveLength(1);
    const object = await env.FILES.get(listed.objects[0]?.key ?? '');
    if (!object) throw new Error('no archive');
    expect(object.size).toBeGreaterThan(3 * 5 * 1024 * 1024);
    const text = await new Response(object.body.pipeThrough(new DecompressionStream('gzip'))).text();
    const ids = new Set(text.trimEnd().split('\n').map((line) => (JSON.parse(line) as { id: string }).id));
    expect(ids.size).toBe(4_000);
    expect(ids.has('txn_arch0000000')).toBe(true);
    expect(ids.has('txn_arch0003999')).toBe(true);
    expect(await shardEntryList(shard.identity.name)).toEqual([]);
  }, 120_000);
});

describe('a claim split like pages', () => {
  it('a claim of 500 rows with every text field at its maximum fits under the 2 MB row, and completes', async () => {
    const template = await templateRecord(caller, new Date(START + DAY), SALE);
    // Every contact field at 255 characters of three UTF-8 bytes each: about 18 KB a row, 9 MB a chunk.
    const records = likeRecords(template, 500, 'wide', (record) => {
      for (const column of CONTACT_COLUMNS) (record as Record<string, unknown>)[column] = '中'.repeat(MAX_CONTACT_LENGTH);
      (record as Record<string, unknown>).description = '中'.repeat(MAX_DESCRIPTION_LENGTH);
    });
    const shard = shardOf({ kind: 'batch', merchantId: shop.id, batchId: 'bat_widerows00000000001' }, new Date(START + DAY).toISOString());
    await enforceRowLimit(shard.stub);
    // One call, as the engine claims one chunk.
    await seedShard(shard, records, 500);
    const stored = await shardEntryList(shard.identity.name);
    expect(stored).toHaveLength(500);
    expect(stored.every((s) => s.record.status === 'pending_settlement' && String(s.record.billing_address_line_1).length === MAX_CONTACT_LENGTH)).toBe(true);
  }, 60_000);
});

describe('retention in bounded steps', () => {
  it("an API day shard's hashes are cleared, then it is archived, a few rows a step, the alarm armed for each next step", async () => {
    const day = START + 3 * DAY;
    const template = await templateRecord(caller, new Date(day), SALE);
    const shard = shardOf({ kind: 'api', merchantId: shop.id, day: new Date(day).toISOString().slice(0, 10) }, new Date(day).toISOString());
    await seedShard(shard, likeRecords(template, 7, 'step'), 7);
    const hashed = (await shardEntryList(shard.identity.name)).filter((s) => s.requestHash !== '');
    expect(hashed.length).toBeGreaterThanOrEqual(7);

    const clearAt = String(shard.identity.hashesClearAt);
    const steps: { hashesCleared: number; more: boolean }[] = [];
    for (let i = 0; i < 20; i++) {
      const outcome = await shard.stub.runRetention(clearAt, { hashRows: 3 });
      steps.push({ hashesCleared: outcome.hashesCleared, more: outcome.more });
      if (!outcome.more) break;
      // Each step that leaves work arms the alarm for the next at once.
      expect(await runInDurableObject(shard.stub, (_i, state) => state.storage.getAlarm())).toBe(Date.parse(clearAt));
    }
    // Eight rows (the template's and seven), three a step.
    expect(steps.length).toBeGreaterThanOrEqual(3);
    expect(steps.reduce((sum, s) => sum + s.hashesCleared, 0)).toBe(8);
    expect((await shardEntryList(shard.identity.name)).every((s) => s.requestHash === '')).toBe(true);

    const archiveAt = shard.identity.archiveAt;
    let last = await shard.stub.runRetention(archiveAt, { archiveRecords: 3 });
    let calls = 1;
    while (last.more && calls < 20) {
      last = await shard.stub.runRetention(archiveAt, { archiveRecords: 3 });
      calls++;
    }
    expect(last).toMatchObject({ archived: true, lines: 8, more: false });
    expect(calls).toBeGreaterThanOrEqual(3);
    const files = (await env.FILES.list({ prefix: `ledger-archive/${shard.identity.name}/` })).objects.map((o) => o.key);
    expect(files.length).toBeGreaterThanOrEqual(3);
    let lines = 0;
    for (const key of files) {
      const object = await env.FILES.get(key);
      if (!object) throw new Error(`no ${key}`);
      lines += (await new Response(object.body.pipeThrough(new DecompressionStream('gzip'))).text()).trimEnd().split('\n').length;
    }
    expect(lines).toBe(8);
  }, 60_000);
});
