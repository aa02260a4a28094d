/**
 * The ledger in Durable Object shards (docs/architecture.md, "Capacity"): a batch's rows in its own
 * shard and no D1 row per transaction; API keys across midnight (two day shards); retention (the
 * shard archived to R2 and emptied, the answer for an archived id); the batch's object deleted with
 * its results.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import type { TransactionInput, TransactionOutcome } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/recorded';
import { getTransaction } from '../../src/services/transactions/engine';
import { apiTransactionId, retentionDays } from '../../src/services/transactions/ledger';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, csv, parseResult, saleRows, status, uploadOk, waitForStatus } from '../helpers/batch';
import { ledgerOfDay } from '../helpers/claims';
import { runDailyCron } from '../helpers/cron';
import { apiShardName, batchShardName, shardEntryList, shardRowCounts } from '../helpers/ledger';

const DAY = 86_400_000;
const SALE: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000', cc_cvc: '739' };
/**
 * Midnight (UTC) a few days from now: day shards of future days have their retention alarms in the
 * future, so the real alarm never runs while a test plays with their time.
 */
const MIDNIGHT = Math.floor(Date.now() / DAY) * DAY + 5 * DAY;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Ledger Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('setup: unknown key');
  caller = found;
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function apiCall(key: string, atMs: number, input: TransactionInput = SALE): Promise<TransactionOutcome> {
  const [outcome] = await processTransactions(env, caller, [{ input, idempotencyKey: key }], { source: 'api', ipAddress: null }, () => new Date(atMs));
  if (!outcome) throw new Error('no outcome');
  return outcome;
}

/** Every D1 table's row count. */
async function d1RowCounts(): Promise<Record<string, number>> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
  ).all<{ name: string }>();
  const counts: Record<string, number> = {};
  for (const { name } of results) counts[name] = (await env.DB.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).first<number>('n')) ?? 0;
  return counts;
}

describe('where a transaction is stored', () => {
  it("a 1,000-row batch: its records in the batch's shard (a page per chunk), D1 grows by less than one row per 100 batch rows", async () => {
    // The merchant's default processor is made on first use: a first transaction makes it before counting.
    expect((await apiCall('first-use', Date.now())).ok).toBe(true);
    const before = await d1RowCounts();
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1000)));
    await waitForStatus(shop.secretKey, id, 'completed');
    const after = await d1RowCounts();
    const grown = Object.keys(after).map((table) => ({ table, rows: (after[table] ?? 0) - (before[table] ?? 0) }));
    for (const { table, rows } of grown) expect(rows, `D1 table ${table}`).toBeLessThanOrEqual(1000 / 100);
    expect(Object.keys(after)).not.toContain('transactions');

    const shard = batchShardName(shop.id, id);
    const stored = await shardEntryList(shard);
    expect(stored).toHaveLength(1000);
    expect(new Set(stored.map((s) => s.record.id)).size).toBe(1000);
    // Two chunks of 500 rows: two page rows, no claim left, one meta row (and no receipt asked for).
    expect(await shardRowCounts(shard)).toEqual({ meta: 1, claims: 0, pages: 2, states: 0, operations: 0, operation_counts: 0, handoff: 0, receipt_outbox: 0, settled_pieces: 0, operation_blocks: 0 });

    // Every id in the result file answers its record.
    const rows = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
    for (const row of [rows[0], rows[499], rows[500], rows[999]]) {
      const read = await call('GET', `/api/transaction/${row?.id ?? ''}`, { key: shop.secretKey });
      expect(read.status).toBe(200);
      expect((await read.json<Envelope<{ idempotency_key: string; auth_code: string }>>()).data).toMatchObject({
        idempotency_key: row?.idempotency_key,
        auth_code: row?.auth_code,
      });
    }
    // Another merchant cannot read them: the id names a shard of the caller's own.
    const other = await createMerchant({ name: 'Other Ledger Shop' });
    expect((await call('GET', `/api/transaction/${rows[0]?.id ?? ''}`, { key: other.secretKey })).status).toBe(404);
  });
});

describe('an API key across midnight', () => {
  it("a retry just after midnight is answered from yesterday's shard, not charged again; after 24 hours the key is free", async () => {
    const first = await apiCall('midnight-1', MIDNIGHT - 30_000);
    expect(first).toMatchObject({ ok: true, replayed: false });
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const retry = await apiCall('midnight-1', MIDNIGHT + 30_000);
    expect(retry).toMatchObject({ ok: true, replayed: true, record: { id: (first as { record: { id: string } }).record.id } });
    expect(charge).not.toHaveBeenCalled();
    expect(await apiCall('midnight-1', MIDNIGHT + 30_000, { ...SALE, amount: '2000' })).toMatchObject({ ok: false, reason: 'idempotency_conflict' });
    // The key lives in yesterday's shard only.
    expect((await shardEntryList(apiShardName(shop.id, dayOf(MIDNIGHT)))).filter((s) => s.record.idempotency_key === 'midnight-1')).toEqual([]);

    const later = await apiCall('midnight-1', MIDNIGHT - 30_000 + DAY + 1);
    expect(later).toMatchObject({ ok: true, replayed: false });
    expect(charge).toHaveBeenCalledTimes(1);
  });

  it('two requests with one key on either side of midnight, at once: the processor is asked once', async () => {
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const outcomes = await Promise.all([apiCall('midnight-race', MIDNIGHT + DAY - 100), apiCall('midnight-race', MIDNIGHT + DAY + 100)]);
    expect(charge.mock.calls.length).toBeLessThanOrEqual(1);
    for (const outcome of outcomes) {
      if (!outcome.ok) expect(outcome.reason).toBe('in_progress');
    }
    // Asked again once both are done: the one transaction, however the race went.
    const settled = await apiCall('midnight-race', MIDNIGHT + DAY + 5_000);
    expect(settled).toMatchObject({ ok: true });
    expect(charge.mock.calls.length).toBe(1);
    const charged = [...(await ledgerOfDay(shop.id, dayOf(MIDNIGHT + DAY - 100))), ...(await ledgerOfDay(shop.id, dayOf(MIDNIGHT + DAY + 100)))];
    expect(charged.filter((e) => e.idempotencyKey === 'midnight-race').map((e) => e.chargeCalls)).toEqual([1]);
  });
});

describe('retention', () => {
  it(`${548} days after its day a shard is written to R2 (one line per transaction, no card number) and emptied; its ids answer "archived"`, async () => {
    expect(retentionDays(env)).toBe(548);
    const day = MIDNIGHT + 2 * DAY;
    const ids: string[] = [];
    for (const [i, number] of ['4111111111111111', '5555555555554444', '4242424242424242'].entries()) {
      const outcome = await apiCall(`keep-${i}`, day + 3_600_000 + i, { ...SALE, cc_number: number });
      if (!outcome.ok) throw new Error('not recorded');
      ids.push(String(outcome.record.id));
    }
    const name = apiShardName(shop.id, dayOf(day));
    const stub = env.LEDGER_SHARD.getByName(name);
    // The alarm is armed first for the sweep of claims a crash could leave open (five minutes after
    // the first claim); that alarm, finding none, arms it for the end of the request hashes' window,
    // then for the archive.
    const sweep = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(sweep).toBe(day + 3_600_000 + 5 * 60_000);
    await runDurableObjectAlarm(stub);
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).toBe(day + 2 * DAY);

    const archiveAt = new Date(day + 548 * DAY).toISOString();
    expect(await stub.runRetention(new Date(day + 548 * DAY - 1).toISOString())).toMatchObject({ archived: false });
    expect((await shardEntryList(name)).length).toBe(3);
    const done = await stub.runRetention(archiveAt);
    expect(done).toMatchObject({ archived: true, lines: 3, key: `ledger-archive/${name}/` });

    // A small shard is one archive file.
    expect((await env.FILES.list({ prefix: `ledger-archive/${name}/` })).objects.map((o) => o.key)).toEqual([`ledger-archive/${name}/00001.ndjson.gz`]);
    const object = await env.FILES.get(`ledger-archive/${name}/00001.ndjson.gz`);
    if (!object) throw new Error('no archive');
    const text = await new Response(object.body.pipeThrough(new DecompressionStream('gzip'))).text();
    const lines = text.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.id).sort()).toEqual([...ids].sort());
    expect(lines.every((line) => line.response === 'approved' && !('request_hash' in line))).toBe(true);
    for (const secret of ['4111111111111111', '5555555555554444', '4242424242424242', '"739"']) expect(text).not.toContain(secret);

    // The object is empty: no table, no alarm.
    const left = await runInDurableObject(stub, async (_instance, state) => ({
      tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'").toArray().length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(left).toEqual({ tables: 0, alarm: null });

    // An archived id answers where its record is, without waking the shard.
    expect(await getTransaction(env, shop.id, ids[0] ?? '', () => new Date(archiveAt))).toEqual({
      ok: false,
      reason: 'archived',
      archive: `ledger-archive/${name}/`,
    });
    // An id past retention whose shard was never written (so never archived) is not found: 410 is
    // only for a shard archived in R2 (issue 30, item 7; this was a 410 before).
    const old = await apiTransactionId(shop.id, 'long-ago', dayOf(Date.now() - 549 * DAY));
    const gone = await call('GET', `/api/transaction/${old}`, { key: shop.secretKey });
    expect(gone.status).toBe(404);
  });

  it("a batch's Durable Object is deleted with its results; its record and its ledger shard stay", async () => {
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(3)));
    const done = await waitForStatus(shop.secretKey, id, 'completed');
    await runDailyCron(new Date(Date.parse(done.updated_at) + 11 * DAY));
    const progress = env.BATCH_PROGRESS.getByName(id);
    const left = await runInDurableObject(progress, async (_instance, state) => ({
      tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'").toArray().length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(left).toEqual({ tables: 0, alarm: null });
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 3 });
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey });
    expect(download.status).toBe(410);
    expect(await shardEntryList(batchShardName(shop.id, id))).toHaveLength(3);
  });
});
