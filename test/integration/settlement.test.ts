/**
 * Authorization expiry and settlement on an injected clock: a merchant's day ends at its cutoff and
 * what it captured before then settles into one batch per processor and day, once; the index of
 * shards holding unsettled money; POST /admin/merchants/{id}/settle; the settlement batch API and
 * its search filters; the settlement.completed webhook event; batch file rows settling too; an
 * operation left claimed by a crashed attempt.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, uploadOk, waitForStatus } from '../helpers/batch';
import { createEndpoint, receiver, signatureVerifies } from '../helpers/webhooks';
import { processTransactions, runOperation } from '../../src/services/recorded';
import { getTransaction, locateTransaction } from '../../src/services/transactions/engine';
import { sha256Hex } from '../../src/lib/crypto';
import { processorAccounts } from '../../src/services/transactions/claims';
import { merchantProcessors } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';

type Batch = { id: string; batch_date: string; processor_id: string; num_transactions: number; amount_captured: number; amount_credit: number; net_deposit: number };

const VISA = '4111111111111111';

function callerOf(merchant: TestMerchant): Caller {
  return { merchantId: merchant.id, merchantName: merchant.name, keyId: 'key_test', keyType: 'secret', enhancedBinLookup: false, surchargeRateBps: 0, maxCreditAmount: 100_000 };
}

/** A transaction made at `at` (the injected clock). */
async function transactionAt(merchant: TestMerchant, at: string, type: 'sale' | 'authorize' | 'credit', amount = 1000): Promise<TransactionRecord> {
  const [outcome] = await processTransactions(
    env,
    callerOf(merchant),
    [{ input: { transaction_type: type, cc_number: VISA, cc_expiration: '12/30', amount: String(amount) }, idempotencyKey: crypto.randomUUID() }],
    { source: 'api', ipAddress: null },
    () => new Date(at),
  );
  if (!outcome?.ok) throw new Error(`transaction failed: ${JSON.stringify(outcome)}`);
  return outcome.record;
}

async function recordAt(merchant: TestMerchant, id: string, at: string): Promise<TransactionRecord> {
  const found = await getTransaction(env, merchant.id, id, () => new Date(at));
  if (!found.ok) throw new Error(`not found: ${id}`);
  return found.record;
}

/** The settlement object's alarm, run at `at`. */
function runDue(merchant: TestMerchant, at: string) {
  return settlementObject(env, merchant.id).runDue(at, 548);
}

describe('authorization expiry (AUTHORIZATION_EXPIRY_DAYS, 7)', () => {
  it('an authorization not captured within 7 days is expired, and its capture is a 409', async () => {
    const shop = await createMerchant({ name: 'Expiry Shop' });
    const auth = await transactionAt(shop, '2027-03-01T12:00:00.000Z', 'authorize');
    expect((await recordAt(shop, String(auth.id), '2027-03-08T11:59:00.000Z')).status).toBe('authorized');
    expect((await recordAt(shop, String(auth.id), '2027-03-08T12:00:01.000Z')).status).toBe('expired');
    const late = await runOperation(env, callerOf(shop), { transactionId: String(auth.id), kind: 'capture', amount: null, idempotencyKey: undefined, ipAddress: null }, () => new Date('2027-03-08T12:00:01.000Z'));
    expect(late).toMatchObject({ ok: false, reason: 'wrong_state', message: 'transaction is expired: capture is allowed only while authorized' });
    // Within the 7 days another authorization is captured.
    const other = await transactionAt(shop, '2027-03-01T12:00:00.000Z', 'authorize');
    const inTime = await runOperation(env, callerOf(shop), { transactionId: String(other.id), kind: 'capture', amount: null, idempotencyKey: undefined, ipAddress: null }, () => new Date('2027-03-08T11:00:00.000Z'));
    expect(inTime).toMatchObject({ ok: true, status: 200, record: { status: 'pending_settlement' } });
  });
});

describe('settlement at the cutoff (injected clock)', () => {
  it("settles at the end of the merchant's day (00:00 by default) what was captured before it, once", async () => {
    const shop = await createMerchant({ name: 'Cutoff Shop' });
    const sale = await transactionAt(shop, '2027-03-20T10:00:00.000Z', 'sale', 1000);
    const auth = await transactionAt(shop, '2027-03-20T11:00:00.000Z', 'authorize', 800);
    const captured = await runOperation(env, callerOf(shop), { transactionId: String(auth.id), kind: 'capture', amount: 500, idempotencyKey: 'cap-1', ipAddress: null }, () => new Date('2027-03-20T12:00:00.000Z'));
    expect(captured.ok).toBe(true);
    // Before the cutoff nothing settles.
    expect((await runDue(shop, '2027-03-20T23:59:59.000Z')).batches).toEqual([]);
    expect((await recordAt(shop, String(sale.id), '2027-03-20T23:59:59.000Z')).status).toBe('pending_settlement');

    const run = await runDue(shop, '2027-03-21T00:00:00.000Z');
    const batchId = `stl_20270320_${defaultSandboxProcessorId(shop.id)}`;
    expect(run.batches).toMatchObject([{ id: batchId, batch_date: '2027-03-20', num_transactions: 2, amount_captured: 1500, amount_credit: 0, net_deposit: 1500 }]);
    expect(await recordAt(shop, String(sale.id), '2027-03-21T00:00:00.000Z')).toMatchObject({ status: 'settled', amount_settled: 1000, settlement_batch_id: batchId, settled_at: '2027-03-21T00:00:00.000Z' });
    expect(await recordAt(shop, String(auth.id), '2027-03-21T00:00:00.000Z')).toMatchObject({ status: 'settled', amount_settled: 500, settlement_batch_id: batchId });

    // Run again (the alarm late, twice): nothing settles twice, the batch's totals stay.
    expect((await runDue(shop, '2027-03-21T00:00:05.000Z')).batches).toEqual([]);
    expect((await runDue(shop, '2027-03-21T03:00:00.000Z')).batches).toEqual([]);
    const found = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: batchId, limit: 10, offset: 0 });
    expect(found.batches).toMatchObject([{ num_transactions: 2, amount_captured: 1500 }]);
    // The index is empty again: no shard of this merchant holds unsettled money.
    expect(await settlementObject(env, shop.id).indexedShards()).toEqual([]);

    // The 20th's shard gets money again (an authorization of the 20th captured after the cutoff):
    // a run before the next cutoff asks it again, and the 20th's batch stays as it was.
    const lateAuth = await transactionAt(shop, '2027-03-20T13:00:00.000Z', 'authorize', 400);
    await runDue(shop, '2027-03-21T00:30:00.000Z');
    await runOperation(env, callerOf(shop), { transactionId: String(lateAuth.id), kind: 'capture', amount: null, idempotencyKey: 'cap-late', ipAddress: null }, () => new Date('2027-03-21T01:00:00.000Z'));
    expect(await settlementObject(env, shop.id).indexedShards()).toHaveLength(1);
    expect((await runDue(shop, '2027-03-21T02:00:00.000Z')).batches).toEqual([]);
    const same = await settlementObject(env, shop.id).search({ batchDateFrom: null, batchDateTo: null, settlementBatchId: batchId, limit: 10, offset: 0 });
    expect(same.batches).toMatchObject([{ num_transactions: 2, amount_captured: 1500 }]);
    const next = await runDue(shop, '2027-03-22T00:00:00.000Z');
    expect(next.batches).toMatchObject([{ batch_date: '2027-03-21', num_transactions: 1, amount_captured: 400 }]);
  });

  it('a cutoff of 17:00 (admin settlement_cutoff): 16:59 settles that day, 17:01 the next', async () => {
    const shop = await createMerchant({ name: 'Afternoon Shop' });
    const patched = await admin('PATCH', `/admin/merchants/${shop.id}`, { settlement_cutoff: '17:00' });
    expect(patched.status).toBe(200);
    expect((await patched.json<Envelope<{ settlement_cutoff: string }>>()).data.settlement_cutoff).toBe('17:00');
    const before = await transactionAt(shop, '2027-03-20T16:59:00.000Z', 'sale', 100);
    const after = await transactionAt(shop, '2027-03-20T17:01:00.000Z', 'sale', 200);
    const first = await runDue(shop, '2027-03-20T17:00:30.000Z');
    expect(first.batches).toMatchObject([{ batch_date: '2027-03-20', num_transactions: 1, amount_captured: 100 }]);
    expect((await recordAt(shop, String(after.id), '2027-03-20T17:00:30.000Z')).status).toBe('pending_settlement');
    // The shard still holds money: it stays in the index until the next day's run.
    expect(await settlementObject(env, shop.id).indexedShards()).toHaveLength(1);
    const second = await runDue(shop, '2027-03-21T17:00:00.000Z');
    expect(second.batches).toMatchObject([{ batch_date: '2027-03-21', num_transactions: 1, amount_captured: 200 }]);
    expect((await recordAt(shop, String(before.id), '2027-03-21T17:00:00.000Z')).settlement_batch_id).toBe(`stl_20270320_${defaultSandboxProcessorId(shop.id)}`);
    expect((await admin('PATCH', `/admin/merchants/${shop.id}`, { settlement_cutoff: '25:00' })).status).toBe(400);
  });

  it("the object's alarm is armed at the next cutoff when money is recorded; run, it settles what is due", async () => {
    const shop = await createMerchant({ name: 'Alarm Shop' });
    const sale = await transactionAt(shop, '2027-03-20T10:00:00.000Z', 'sale');
    const stub = settlementObject(env, shop.id);
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).toBe(Date.parse('2027-03-21T00:00:00.000Z'));
    // Run now (before that cutoff): nothing is due yet, the sale waits and the alarm stays armed.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await recordAt(shop, String(sale.id), '2027-03-20T12:00:00.000Z')).status).toBe('pending_settlement');
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).not.toBeNull();
    // A transaction of a day already over (the clock of a late alarm): the alarm settles it when it runs.
    const late = await createMerchant({ name: 'Late Alarm Shop' });
    const old = await transactionAt(late, '2026-01-05T10:00:00.000Z', 'sale');
    await vi.waitFor(async () => expect((await recordAt(late, String(old.id), new Date().toISOString())).status).toBe('settled'), { timeout: 10_000, interval: 20 });
  });

  it('refunds settle as credits: amount_credit and net_deposit of the day they were made', async () => {
    const shop = await createMerchant({ name: 'Credit Day Shop' });
    const sale = await transactionAt(shop, '2027-03-20T10:00:00.000Z', 'sale', 1000);
    await runDue(shop, '2027-03-21T00:00:00.000Z');
    const refund = await runOperation(env, callerOf(shop), { transactionId: String(sale.id), kind: 'refund', amount: 250, idempotencyKey: 'r1', ipAddress: null }, () => new Date('2027-03-21T09:00:00.000Z'));
    expect(refund).toMatchObject({ ok: true, status: 201 });
    const credit = await transactionAt(shop, '2027-03-21T10:00:00.000Z', 'credit', 100);
    const run = await runDue(shop, '2027-03-22T00:00:00.000Z');
    expect(run.batches).toMatchObject([{ batch_date: '2027-03-21', num_transactions: 2, amount_captured: 0, amount_credit: 350, net_deposit: -350 }]);
    expect((await recordAt(shop, String(credit.id), '2027-03-22T00:00:00.000Z')).status).toBe('settled');
    // The original keeps its own settlement (the day before) and shows the refund.
    expect(await recordAt(shop, String(sale.id), '2027-03-22T00:00:00.000Z')).toMatchObject({ status: 'partially_refunded', settlement_batch_id: `stl_20270320_${defaultSandboxProcessorId(shop.id)}` });
  });
});

describe('POST /admin/merchants/{id}/settle', () => {
  it('settles everything pending now and answers the batches (sums that add up); again: an empty list', async () => {
    const shop = await createMerchant({ name: 'Settle Now Shop' });
    const sales = await Promise.all([200, 400, 600].map((amount) => call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount } })));
    const ids = await Promise.all(sales.map(async (r) => String((await r.json<Envelope<{ id: string }>>()).data.id)));
    const response = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<Batch[]>>();
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ num_transactions: 3, amount_captured: 1200, amount_credit: 0, net_deposit: 1200 });
    for (const id of ids) {
      const record = (await (await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).json<Envelope<TransactionRecord>>()).data;
      expect(record).toMatchObject({ status: 'settled', settlement_batch_id: data[0]?.id });
    }
    const again = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    expect((await again.json<Envelope<Batch[]>>()).data).toEqual([]);
    expect((await admin('POST', '/admin/merchants/nosuchmerchant/settle')).status).toBe(404);
    expect((await call('POST', `/admin/merchants/${shop.id}/settle`, { key: shop.secretKey })).status).toBe(401);
  });

  it('settles batch file rows too (sales and captures of batch authorizations), from their batch shard', async () => {
    const shop = await createMerchant({ name: 'Batch Settle Shop' });
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, [['sale', '1000', VISA, '12/30', 'a1'], ['authorize', '700', VISA, '12/30', 'a2'], ['sale', '350', VISA, '12/30', 'a3']]));
    await waitForStatus(shop.secretKey, id, 'completed');
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey });
    const lines = (await download.text()).trim().split('\n').slice(1).map((line) => line.split('","')[0]?.replace('"', '') ?? '');
    expect(lines).toHaveLength(3);
    const authId = lines[1] ?? '';
    expect((await call('POST', `/api/transaction/${authId}/capture`, { key: shop.secretKey, body: { amount: 600 } })).status).toBe(200);
    const settled = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    expect((await settled.json<Envelope<Batch[]>>()).data).toMatchObject([{ num_transactions: 3, amount_captured: 1950 }]);
    for (const rowTx of lines) {
      const record = (await (await call('GET', `/api/transaction/${rowTx}`, { key: shop.secretKey })).json<Envelope<TransactionRecord>>()).data;
      expect(record.status).toBe('settled');
    }
  }, QUEUE_TEST_TIMEOUT);
});

describe('the settlement batch API', () => {
  let shop: TestMerchant;
  let other: TestMerchant;
  const days = ['2027-03-10', '2027-03-11', '2027-03-12'];
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Search Shop' });
    other = await createMerchant({ name: 'Search Other' });
    for (const [i, day] of days.entries()) {
      await transactionAt(shop, `${day}T08:00:00.000Z`, 'sale', 110 * (i + 1));
      await transactionAt(shop, `${day}T09:00:00.000Z`, 'sale', 1000);
      await runDue(shop, `${nextDay(day)}T00:00:00.000Z`);
    }
  });

  function nextDay(day: string): string {
    return new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);
  }

  async function search(body: unknown, key = shop.secretKey) {
    return call('POST', '/api/settlement/batch/search', { key, body });
  }

  /** The search answers FluidPay's shape (issue 34): data.results, batch_date a timestamp of the day. */
  async function listOf(response: Response): Promise<{ data: Batch[]; total_count: number }> {
    const body = await response.json<{ data: { results: Batch[] }; total_count: number }>();
    return { data: body.data.results.map((b) => ({ ...b, batch_date: b.batch_date.slice(0, 10) })), total_count: body.total_count };
  }

  it('lists every batch newest first with total_count; the batch_date range and settlement_batch_id filter', async () => {
    const all = await search({});
    expect(all.status).toBe(200);
    const listed = await listOf(all);
    expect(listed.total_count).toBe(3);
    expect(listed.data.map((b) => b.batch_date)).toEqual(['2027-03-12', '2027-03-11', '2027-03-10']);
    expect(listed.data.map((b) => b.amount_captured)).toEqual([1330, 1220, 1110]);
    const range = await listOf(await search({ batch_date: { start_date: '2027-03-11', end_date: '2027-03-12' } }));
    expect(range.total_count).toBe(2);
    expect(range.data.map((b) => b.batch_date)).toEqual(['2027-03-12', '2027-03-11']);
    const since = await (await search({ batch_date: { start_date: '2027-03-12' } })).json<{ total_count: number }>();
    expect(since.total_count).toBe(1);
    const one = await listOf(await search({ settlement_batch_id: listed.data[1]?.id }));
    expect(one.data.map((b) => b.batch_date)).toEqual(['2027-03-11']);
  });

  it('pages with limit (1–100) and offset; total_count counts every match', async () => {
    const page = await listOf(await search({ limit: 1, offset: 1 }));
    expect(page).toMatchObject({ total_count: 3 });
    expect(page.data.map((b) => b.batch_date)).toEqual(['2027-03-11']);
    expect((await search({ limit: 0 })).status).toBe(400);
    expect((await search({ limit: 101 })).status).toBe(400);
    expect((await search({ offset: -1 })).status).toBe(400);
    expect((await search({ batch_date: { start_date: 'yesterday' } })).status).toBe(400);
    expect((await search({ batch_dates: {} })).status).toBe(400);
  });

  it("GET /api/settlement/batch/{id}: the batch and a page of its transactions; another merchant's is a 404", async () => {
    const listed = await listOf(await search({ batch_date: { start_date: '2027-03-10', end_date: '2027-03-10' } }));
    const batchId = listed.data[0]?.id ?? '';
    const response = await call('GET', `/api/settlement/batch/${batchId}?limit=1&offset=1`, { key: shop.secretKey });
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<Batch & { transactions: { id: string; type: string; amount: number }[] }>>();
    expect(data).toMatchObject({ id: batchId, num_transactions: 2, amount_captured: 1110, limit: 1, offset: 1 });
    expect(data.transactions).toHaveLength(1);
    const whole = await (await call('GET', `/api/settlement/batch/${batchId}`, { key: shop.secretKey })).json<Envelope<{ transactions: { amount: number }[] }>>();
    expect(whole.data.transactions.map((t) => t.amount).sort((a, b) => a - b)).toEqual([110, 1000]);
    expect((await call('GET', `/api/settlement/batch/${batchId}`, { key: other.secretKey })).status).toBe(404);
    expect((await search({}, other.secretKey)).status).toBe(200);
    expect((await (await search({}, other.secretKey)).json<{ total_count: number }>()).total_count).toBe(0);
    expect((await call('GET', '/api/settlement/batch/not-a-batch', { key: shop.secretKey })).status).toBe(400);
  });
});

describe('settlement.completed webhook', () => {
  it('is delivered, signed, to an endpoint subscribed to it, with the settlement batch; not to one subscribed only to batch events', async () => {
    const shop = await createMerchant({ name: 'Webhook Settle Shop' });
    const wanted = receiver();
    const unwanted = receiver();
    const endpoint = await createEndpoint(shop.secretKey, { url: wanted.url, events: ['settlement.completed'] });
    await createEndpoint(shop.secretKey, { url: unwanted.url, events: ['batch.completed'] });
    await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: 4200 } });
    const settled = (await (await admin('POST', `/admin/merchants/${shop.id}/settle`)).json<Envelope<Batch[]>>()).data;
    expect(settled).toHaveLength(1);
    await vi.waitFor(() => expect(wanted.received).toHaveLength(1), { timeout: 10_000, interval: 10 });
    const [delivery] = wanted.received;
    const event = JSON.parse(delivery?.body ?? '{}') as { type: string; data: Batch };
    expect(event.type).toBe('settlement.completed');
    expect(event.data).toMatchObject({ id: settled[0]?.id, num_transactions: 1, amount_captured: 4200 });
    expect(await signatureVerifies(delivery?.headers.get('Binbatch-Signature') ?? null, delivery?.body ?? '', endpoint.secret)).toBe(true);
    expect(unwanted.received).toHaveLength(0);
  });
});

describe('an operation left claimed by a crashed attempt', () => {
  const at = (time: string) => () => new Date(`2027-04-01T${time}.000Z`);

  /** Claims a capture the way an attempt does, then "crashes" (never asks the processor, or asks it and never records the answer). */
  async function claimCapture(merchant: TestMerchant, id: string, key: string) {
    const located = await locateTransaction(env, merchant.id, id, at('11:00:00')());
    if (!located.ok) throw new Error('not found');
    const begun = await located.shard.stub.beginOperation(located.shard.identity, {
      transactionId: id,
      query: located.query,
      kind: 'capture',
      key: `${id}:capture:${key}`,
      requestHash: await sha256Hex(JSON.stringify({ amount: null })),
      amount: null,
      now: '2027-04-01T11:00:00.000Z',
      expiredBefore: '2027-03-25T11:00:00.000Z',
      staleBefore: '2027-04-01T10:59:00.000Z',
    });
    expect(begun).toMatchObject({ outcome: 'claimed' });
  }

  const capture = (merchant: TestMerchant, id: string, key: string, time: string) =>
    runOperation(env, callerOf(merchant), { transactionId: id, kind: 'capture', amount: null, idempotencyKey: key, ipAddress: null }, at(time));

  async function calls(merchant: TestMerchant, id: string) {
    const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(merchant.id), '2027-04-01'));
    return (await acquirer.list()).filter((row) => row.idempotencyKey.startsWith(id)).map((row) => ({ type: row.type, chargeCalls: row.chargeCalls }));
  }

  it('is in progress for 60 s (409); then, never received by the processor, it is released and captured once', async () => {
    const shop = await createMerchant({ name: 'Abandoned Shop' });
    const auth = await transactionAt(shop, '2027-04-01T10:00:00.000Z', 'authorize');
    await claimCapture(shop, String(auth.id), 'k1');
    expect(await capture(shop, String(auth.id), 'k1', '11:00:30')).toMatchObject({ ok: false, reason: 'in_progress' });
    expect(await capture(shop, String(auth.id), 'other', '11:00:30')).toMatchObject({ ok: false, reason: 'in_progress' });
    expect(await capture(shop, String(auth.id), 'k1', '11:01:01')).toMatchObject({ ok: true, status: 200, record: { status: 'pending_settlement' } });
    expect(await calls(shop, String(auth.id))).toEqual([{ type: 'capture', chargeCalls: 1 }]);
  });

  it('done by the processor, it is completed from the processor\'s answer: no second call', async () => {
    const shop = await createMerchant({ name: 'Abandoned Done Shop' });
    const auth = await transactionAt(shop, '2027-04-01T10:00:00.000Z', 'authorize');
    await claimCapture(shop, String(auth.id), 'k2');
    const processors = await merchantProcessors(env.DB, shop.id, at('11:00:00'));
    const sandbox = processorAccounts(env, processors, at('11:00:00'))(defaultSandboxProcessorId(shop.id));
    await sandbox?.capture({ amount: 1000, transactionId: String(auth.id), paymentType: 'card', idempotencyKey: `${String(auth.id)}:capture:k2`, claimedAt: '2027-04-01T11:00:00.000Z' });
    expect(await capture(shop, String(auth.id), 'k2', '11:01:01')).toMatchObject({ ok: true, status: 200, record: { status: 'pending_settlement', amount_captured: 1000 } });
    expect(await calls(shop, String(auth.id))).toEqual([{ type: 'capture', chargeCalls: 1 }]);
    // The key now answers its first answer.
    expect(await capture(shop, String(auth.id), 'k2', '11:02:00')).toMatchObject({ ok: true, replayed: true });
  });
});
