/**
 * A ledger shard's archive files, read back (docs/transactions.md, "Retention"): every record's
 * line is the record, its batch and line, then its extras, as one JSON object, in the shard's
 * order, however many page reads, gzip writes and files the archive takes.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { authenticateKey } from '../../src/services/merchants';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { shardEntryList } from '../helpers/ledger';
import { likeRecords, seedShard, shardOf, templateRecord } from '../helpers/shard-seed';

const DAY = 86_400_000;
/** Days from now, so the shards' real alarms never run while a test plays with their time. */
const START = Math.floor(Date.now() / DAY) * DAY + 11 * DAY;
const SALE = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' } as const;

let caller: Caller;
beforeAll(async () => {
  const shop: TestMerchant = await createMerchant({ name: 'Archive Lines Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('setup: unknown key');
  caller = found;
});

async function archiveText(key: string): Promise<string> {
  const object = await env.FILES.get(key);
  if (!object) throw new Error(`no ${key}`);
  return new Response(object.body.pipeThrough(new DecompressionStream('gzip'))).text();
}

describe('an archive read back', () => {
  it('a file shard of 2,600 records (six pages, read over several gzip writes and files) archives every record as its JSON line, in order', async () => {
    const template = await templateRecord(caller, new Date(START), SALE);
    // Odd values in the fields an archive reader cares about: quotes, non-ASCII, a description.
    const records = likeRecords(template, 2_600, 'line', (record, i) => {
      (record as Record<string, unknown>).billing_first_name = i % 2 === 0 ? `Zoë "${i}"` : null;
      (record as Record<string, unknown>).order_id = `ORD-${i}`;
    }).map((stored, i) => ({ ...stored, extras: { ...stored.extras, description: `line ${i}\n中` } }));
    const shard = shardOf({ kind: 'batch', merchantId: caller.merchantId, batchId: 'bat_archivelines00000001' }, new Date(START).toISOString());
    await seedShard(shard, records, 500);
    const stored = await shardEntryList(shard.identity.name);
    expect(stored).toHaveLength(2_600);
    const expected = stored.map((s) => JSON.stringify({ ...s.record, batch_id: s.batchId, line: s.line, ...s.extras }));

    // 1,100 records a step (a step reads whole pages of 500, so it may pass its budget by part of a
    // page): files of more than one write of 1,000 lines.
    const archiveAt = shard.identity.archiveAt;
    let outcome = await shard.stub.runRetention(archiveAt, { archiveRecords: 1_100 });
    for (let calls = 1; outcome.more && calls < 10; calls++) outcome = await shard.stub.runRetention(archiveAt, { archiveRecords: 1_100 });
    expect(outcome).toMatchObject({ archived: true, lines: 2_600, more: false });

    const keys = (await env.FILES.list({ prefix: `ledger-archive/${shard.identity.name}/` })).objects.map((o) => o.key).sort();
    expect(keys.length).toBeGreaterThanOrEqual(2);
    const lines: string[] = [];
    for (const key of keys) lines.push(...(await archiveText(key)).split('\n').filter((line) => line !== ''));
    expect(lines).toEqual(expected);
    expect(lines.join('\n')).not.toContain('4111111111111111');
  }, 120_000);
});
