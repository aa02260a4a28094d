/**
 * Settlement in bounded steps (docs/transactions.md, "Settlement"): a run whose shards answer in
 * small pages, over several ticks, gives the same batches as a run in one step; a run that fails
 * midway loses no transaction and the next run settles it into its day's batch; a failing shard
 * waits while the others settle, then is retried; a tick whose storage fails re-arms the alarm; a shard's
 * answers stay small (checked here: the local RPC limit is 32 MiB, a settle answer holds one piece).
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import { HALF, RPC } from '../../src/lib/platform-limits';
import { authenticateKey } from '../../src/services/merchants';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { processTransactions, runOperation } from '../../src/services/recorded';
import { getTransaction } from '../../src/services/transactions/engine';
import { getSettlementBatch } from '../../src/services/settlement/runs';
import { admin, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, uploadOk, waitForStatus } from '../helpers/batch';
import { apiShardName, batchShardName, failShardWrites } from '../helpers/ledger';
import { likeRecords, seedShard, shardOf, templateRecord } from '../helpers/shard-seed';

const DAY = 86_400_000;
const VISA = '4111111111111111';
/** A day a week from now: its cutoff runs only when a test says so. */
const D = Math.floor(Date.now() / DAY) * DAY + 7 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

type Batch = { id: string; batch_date: string; processor_id: string; num_transactions: number; amount_captured: number | string; amount_credit: number | string; net_deposit: number | string };

async function callerOf(merchant: TestMerchant): Promise<Caller> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('unknown key');
  return caller;
}

async function transactionAt(caller: Caller, atMs: number, type: 'sale' | 'authorize' | 'credit', amount: number): Promise<string> {
  const [outcome] = await processTransactions(
    env,
    caller,
    [{ input: { transaction_type: type, cc_number: VISA, cc_expiration: '12/30', amount: String(amount) }, idempotencyKey: crypto.randomUUID() }],
    { source: 'api', ipAddress: null },
    () => new Date(atMs),
  );
  if (!outcome?.ok) throw new Error(`transaction failed: ${JSON.stringify(outcome)}`);
  return String(outcome.record.id);
}

async function operate(caller: Caller, id: string, kind: 'capture' | 'void', atMs: number): Promise<void> {
  const done = await runOperation(env, caller, { transactionId: id, kind, amount: null, idempotencyKey: crypto.randomUUID(), ipAddress: null }, () => new Date(atMs));
  if (!done.ok) throw new Error(`${kind} failed: ${JSON.stringify(done)}`);
}

/** The same day of business for a merchant: API sales, a captured and a voided authorization, a credit, and a 7-row file. Answers the money that must settle. */
async function dayOfBusiness(merchant: TestMerchant, caller: Caller): Promise<{ captured: number; credit: number; count: number }> {
  let captured = 0;
  for (let i = 0; i < 9; i++) {
    await transactionAt(caller, D + 3_600_000 + i * 60_000, 'sale', 1000 + i);
    captured += 1000 + i;
  }
  const auth = await transactionAt(caller, D + 4 * 3_600_000, 'authorize', 700);
  await operate(caller, auth, 'capture', D + 5 * 3_600_000);
  captured += 700;
  const voided = await transactionAt(caller, D + 4 * 3_600_000, 'sale', 555);
  await operate(caller, voided, 'void', D + 5 * 3_600_000);
  await transactionAt(caller, D + 6 * 3_600_000, 'credit', 250);
  const id = await uploadOk(merchant.secretKey, csv(CARD_HEADER, Array.from({ length: 7 }, (_, i) => ['sale', String(2000 + i), VISA, '12/30', `row${i}`])));
  await waitForStatus(merchant.secretKey, id, 'completed');
  captured += Array.from({ length: 7 }, (_, i) => 2000 + i).reduce((a, b) => a + b, 0);
  return { captured, credit: 250, count: 9 + 1 + 1 + 7 };
}

/** Every transaction id of a settlement batch, paging with `limit`. */
async function batchIds(merchant: TestMerchant, batchId: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += limit) {
    const page = await getSettlementBatch(env, merchant.id, batchId, { limit, offset });
    if (!page) throw new Error('no batch');
    ids.push(...page.transactions.map((t) => t.id));
    if (page.transactions.length < limit) return ids;
  }
}

function totals(batches: readonly Batch[]) {
  return {
    count: batches.reduce((n, b) => n + b.num_transactions, 0),
    captured: batches.reduce((n, b) => n + Number(b.amount_captured), 0),
    credit: batches.reduce((n, b) => n + Number(b.amount_credit), 0),
  };
}

describe('a settlement answered in pages, over several steps', () => {
  it('gives the same batches as a run in one step, and their totals are the approved money', async () => {
    const whole = await createMerchant({ name: 'Whole Run Shop' });
    const paged = await createMerchant({ name: 'Paged Run Shop' });
    const expected = await dayOfBusiness(whole, await callerOf(whole));
    expect(await dayOfBusiness(paged, await callerOf(paged))).toEqual(expected);
    const cutoff = iso(D + DAY);

    const one = await settlementObject(env, whole.id).runDue(cutoff, 548);
    expect(one.done).toBe(true);
    expect(totals(one.batches)).toEqual(expected);

    // Pieces of 2 entries, one piece a step: the run takes many steps.
    const steps = [];
    for (let i = 0; i < 100; i++) {
      const step = await settlementObject(env, paged.id).runDue(cutoff, 548, { pageEntries: 2, entries: 2 });
      steps.push(step);
      if (step.done) break;
      // Between steps the alarm is armed for the next one at once.
      expect(await runInDurableObject(settlementObject(env, paged.id), (_i, state) => state.storage.getAlarm())).toBe(D + DAY);
    }
    expect(steps.length).toBeGreaterThanOrEqual(9);
    expect(steps[0]?.done).toBe(false);
    const last = steps.at(-1);
    expect(last?.done).toBe(true);
    expect(totals(last?.batches ?? [])).toEqual(expected);
    const strip = (b: Batch) => ({ batch_date: b.batch_date, num_transactions: b.num_transactions, amount_captured: b.amount_captured, amount_credit: b.amount_credit, net_deposit: b.net_deposit });
    expect((last?.batches ?? []).map(strip)).toEqual(one.batches.map(strip));
    // The same transactions, read a page of 2 at a time, as they were recorded in pieces.
    const wholeIds = await batchIds(whole, one.batches[0]?.id ?? '', 1000);
    const pagedIds = await batchIds(paged, last?.batches[0]?.id ?? '', 2);
    expect(pagedIds).toHaveLength(expected.count);
    expect(new Set(pagedIds).size).toBe(expected.count);
    expect(wholeIds).toHaveLength(expected.count);
    // Every one of them reads settled, in that batch.
    for (const id of pagedIds) {
      const found = await getTransaction(env, paged.id, id, () => new Date(D + DAY + 60_000));
      expect(found.ok && found.record.status === 'settled' && found.record.settlement_batch_id === last?.batches[0]?.id).toBe(true);
    }
  }, QUEUE_TEST_TIMEOUT * 2);

  it("a shard's answer is one piece, far under the RPC limit, however much it settles (12,000 transactions)", async () => {
    const shop = await createMerchant({ name: 'Big Shard Shop' });
    const caller = await callerOf(shop);
    const template = await templateRecord(caller, new Date(D + 3 * DAY), { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000' });
    const shard = shardOf({ kind: 'api', merchantId: shop.id, day: iso(D + 3 * DAY).slice(0, 10) }, iso(D + 3 * DAY));
    await seedShard(shard, likeRecords(template, 12_000, 'big'), 2_000);
    let after = 0;
    let settled = 0;
    let largest = 0;
    for (let calls = 0; calls < 50; calls++) {
      const answer = await shard.stub.settle(shard.identity, { before: iso(D + 4 * DAY), batchDate: iso(D + 3 * DAY).slice(0, 10), settledAt: iso(D + 4 * DAY), after });
      if ('failed' in answer) throw new Error(answer.failed);
      largest = Math.max(largest, new TextEncoder().encode(JSON.stringify(answer)).length);
      if (answer.done) break;
      if (!answer.piece) continue;
      expect(answer.piece.entries.length).toBeLessThanOrEqual(5_000);
      settled += answer.piece.entries.length;
      after = answer.piece.seq;
    }
    expect(settled).toBe(12_001);
    expect(largest).toBeLessThan(RPC.payloadBytes * HALF);
    expect(largest).toBeLessThan(2_000_000);
  }, QUEUE_TEST_TIMEOUT);
});

/** Makes a settlement object refuse to record (a storage fault), as its first write of `table` after `after` rows. */
async function failSettlementWrites(merchant: TestMerchant, table: 'entries', after: number): Promise<() => Promise<void>> {
  const stub = settlementObject(env, merchant.id);
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec(`CREATE TRIGGER test_fault BEFORE INSERT ON ${table} WHEN (SELECT COUNT(*) FROM ${table}) >= ${after} BEGIN SELECT RAISE(ABORT, 'injected storage fault'); END`);
  });
  return async () => {
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec('DROP TRIGGER IF EXISTS test_fault');
    });
  };
}

describe('a settlement that fails midway', () => {
  it('loses no transaction: what was settled before the fault lands in its batch when the run goes on, even a day later', async () => {
    const shop = await createMerchant({ name: 'Midway Shop' });
    const caller = await callerOf(shop);
    let expected = 0;
    // Two day shards (the day before and the day), so the fault falls between their records.
    for (const [day, count] of [[D - DAY, 5], [D, 6]] as const) {
      for (let i = 0; i < count; i++) {
        await transactionAt(caller, day + 3_600_000 + i * 60_000, 'sale', 1300 + i);
        expected += 1300 + i;
      }
    }
    const restore = await failSettlementWrites(shop, 'entries', 1);
    // The step fails as a value (a rejected call would also be an uncaught exception of the object).
    expect(await settlementObject(env, shop.id).runDue(iso(D + DAY), 548, { pageEntries: 4 })).toMatchObject({ done: false, error: expect.stringContaining('injected storage fault') });
    await restore();
    // The next day's run: everything captured before the first cutoff is in that day's batch, once.
    let run = await settlementObject(env, shop.id).runDue(iso(D + 2 * DAY), 548);
    for (let i = 0; i < 10 && !run.done; i++) run = await settlementObject(env, shop.id).runDue(iso(D + 2 * DAY), 548);
    const found = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    expect(totals(found.batches)).toEqual({ count: 11, captured: expected, credit: 0 });
    expect(found.batches.map((b) => b.batch_date)).toEqual([iso(D).slice(0, 10)]);
    const ids = await batchIds(shop, found.batches[0]?.id ?? '', 3);
    expect(new Set(ids).size).toBe(11);
  }, 60_000);

  it('a failing shard waits while the others settle, and is settled by a later step; the alarm re-arms after a tick whose storage fails', async () => {
    const shop = await createMerchant({ name: 'Failing Shard Shop' });
    const caller = await callerOf(shop);
    await transactionAt(caller, D - DAY + 3_600_000, 'sale', 111);
    await transactionAt(caller, D + 3_600_000, 'sale', 222);
    const restore = await failShardWrites(apiShardName(shop.id, iso(D - DAY).slice(0, 10)), 'UPDATE', 'pages');
    const first = await settlementObject(env, shop.id).runDue(iso(D + DAY), 548);
    expect(first).toMatchObject({ done: false, failed: [apiShardName(shop.id, iso(D - DAY).slice(0, 10))] });
    // The other shard settled meanwhile.
    const now = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    expect(totals(now.batches)).toEqual({ count: 1, captured: 222, credit: 0 });
    // The failing shard is asked again after its wait: the alarm is armed for then.
    const alarm = await runInDurableObject(settlementObject(env, shop.id), (_i, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(D + DAY);
    expect(alarm).toBeLessThanOrEqual(D + DAY + 60_000);
    await restore();
    const second = await settlementObject(env, shop.id).runDue(iso(Number(alarm)), 548);
    expect(second.done).toBe(true);
    expect(totals(second.batches)).toEqual({ count: 2, captured: 333, credit: 0 });

    // A tick whose own storage fails (a fault in the settlement object) arms the alarm again.
    const late = await createMerchant({ name: 'Throwing Tick Shop' });
    const stub = settlementObject(env, late.id);
    await stub.cutoff(late.id);
    const unfault = await failSettlementWrites(late, 'entries', 0);
    // A sale of a day already over: its registration arms the alarm in the past, so it runs (and fails) at once.
    await transactionAt(await callerOf(late), Date.now() - 2 * DAY, 'sale', 500);
    // The alarm runs (and fails inside) at once; once it has, it is armed again.
    await runDurableObjectAlarm(stub).catch(() => false);
    await vi.waitFor(async () => expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeGreaterThan(Date.now()), { timeout: 10_000, interval: 20 });
    await unfault();
    await runDurableObjectAlarm(stub);
    const settled = await stub.search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    expect(totals(settled.batches)).toEqual({ count: 1, captured: 500, credit: 0 });
  }, QUEUE_TEST_TIMEOUT);
});

describe('POST /admin/merchants/{id}/settle', () => {
  it('answers 202 with the batches so far while a shard fails, then 200 once it is back', async () => {
    const shop = await createMerchant({ name: 'Settle Now Failing Shop' });
    await transactionAt(await callerOf(shop), Date.now(), 'sale', 600);
    // A file's rows are in a shard of their own: that one fails.
    const batchId = await uploadOk(shop.secretKey, csv(CARD_HEADER, [['sale', '400', VISA, '12/30', 'one']]));
    await waitForStatus(shop.secretKey, batchId, 'completed');
    const restore = await failShardWrites(batchShardName(shop.id, batchId), 'UPDATE', 'pages');
    const first = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    const firstBody = await first.clone().text();
    expect(first.status, firstBody).toBe(202);
    expect(totals((await first.json<{ data: Batch[] }>()).data)).toEqual({ count: 1, captured: 600, credit: 0 });
    await restore();
    // The failing shard waits (backoff) before it is asked again: its wait is over for a later request.
    await runInDurableObject(settlementObject(env, shop.id), (_i, state) => {
      state.storage.sql.exec('UPDATE shards SET retry_at = NULL');
    });
    const second = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    expect(second.status).toBe(200);
    const found = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: null, limit: 10, offset: 0 });
    expect(totals(found.batches)).toEqual({ count: 2, captured: 1000, credit: 0 });
  }, QUEUE_TEST_TIMEOUT);
});
