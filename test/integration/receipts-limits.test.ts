/**
 * Receipts within limits (docs/receipts.md, "Limits", "Budgets", "The pace"): a run stays inside the
 * Email binding's subrequests; the Email Service's limits put a receipt off without spending an
 * attempt; a merchant's daily, per-minute and per-recipient budgets, set through the admin API,
 * hold resends too; nothing is sent for a transaction that moved no money; the budget's storage does
 * not grow with the receipts it counts; a file's receipts all go at the documented pace.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { EMAIL_SERVICE } from '../../src/lib/platform-limits';
import { authenticateKey } from '../../src/services/merchants';
import { emailTransport, receiptSenderDeps, runReceiptOutbox, SENDS_PER_RUN } from '../../src/services/receipts/outbox';
import { recipientHash } from '../../src/services/receipts/budget';
import { resendReceipt } from '../../src/services/receipts/receipts';
import { retentionWaits } from '../../src/services/receipts/shard';
import { processTransactions } from '../../src/services/recorded';
import { shardFor } from '../../src/services/transactions/ledger';
import { initialiseShard } from '../../src/storage/ledger-shard';
import { DEPTH, PAGE_COUNTERS, widthFor, type RecipientHash } from '../../src/storage/receipt-budget';
import { admin, call, type Envelope, type TestMerchant } from '../helpers/api';
import { csv, uploadOk, waitForStatus } from '../helpers/batch';
import { meterInvocation } from '../helpers/invocation-meter';
import { apiShardName, batchShardName } from '../helpers/ledger';
import { captureLogsOfEachTest } from '../helpers/logs';
import { address, failNextSends, mailTo, receiptMerchant, runReceipts, sendAllReceipts, setReceiptLimits } from '../helpers/receipts';
import { likeRecords, seedShard, shardOf, templateRecord } from '../helpers/shard-seed';

type Receipt = { id: string; kind: string; to: string; status: string; attempts: number; next_attempt_at: string | null; last_error: string | null };
type TxRecord = Record<string, unknown> & { id: string };

// Receipts put off or refused are logged on purpose (receipts_not_sent): read per test, not printed.
captureLogsOfEachTest();

const VISA = '4111111111111111';
const SALE = { transaction_type: 'sale', cc_number: VISA, cc_expiration: '09/39', cc_cvc: '739', amount: '1000' };

/**
 * A transaction's receipts, read from its API day shard (the tests' transactions are of days to come,
 * which the API does not look up yet; the alarm, on the real clock, sends none of them first).
 */
async function receiptsOf(merchant: TestMerchant, id: string, day: string): Promise<Receipt[]> {
  const states = await env.LEDGER_SHARD.getByName(apiShardName(merchant.id, day)).receiptStates({} as never, [id], { exact: [id], floor: [] });
  return states.map((state) => ({ ...state, next_attempt_at: state.nextAttemptAt, last_error: state.lastError }));
}

/** POST /api/transaction/{id}/receipt as the route does it, with the clock at `at`. */
async function resendAt(merchant: TestMerchant, id: string, at: number, to: string | null = null) {
  return resendReceipt(env, merchant.id, id, { to, requestKey: null }, () => new Date(at));
}

/** A transaction made through the engine with its clock at `at` (a day no alarm sends for: the tests run each shard's sender themselves). */
async function chargeAt(merchant: TestMerchant, at: number, input: Record<string, string>): Promise<TxRecord> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('no caller');
  const [outcome] = await processTransactions(env, caller, [{ input, idempotencyKey: crypto.randomUUID() }], { source: 'api', ipAddress: null }, () => new Date(at));
  if (!outcome?.ok) throw new Error(`not processed: ${JSON.stringify(outcome)}`);
  return outcome.record as TxRecord;
}

/** A batch shard of `merchant` holding `count` approved sales with email_receipt, each to its own address, in chunks of 500. */
async function seedReceiptBatch(merchant: TestMerchant, count: number, at: number): Promise<string> {
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('no caller');
  const template = await templateRecord(caller, new Date(at), { ...SALE, email_receipt: 'true', email_address: address('template') });
  const run = crypto.randomUUID().slice(0, 8);
  const records = likeRecords(template, count, `r${run}`, (record, i) => {
    record.email_address = `seeded${i}-${run}@customer.example`;
  });
  const batchId = `bat_${run}${'0'.repeat(12)}`;
  const shard = shardOf({ kind: 'batch', merchantId: merchant.id, batchId }, new Date(at).toISOString());
  await seedShard(shard, records, 500);
  return batchShardName(merchant.id, batchId);
}

describe("the Email binding's limits", () => {
  it('sends at most 40 receipts in one run, inside the 50 subrequests the binding allows, and the rest in the next runs', async () => {
    const shop = await receiptMerchant('Binding Limit Shop');
    const at = Date.parse('2032-01-05T10:00:05.000Z');
    const shard = await seedReceiptBatch(shop, 100, at);
    // After the batch's quiet time (its chunks were written just now).
    const runAt = at + 10_000;
    // The run as the shard's alarm makes it, inside the object, its bindings metered.
    const { run, sends, others } = await runInDurableObject(env.LEDGER_SHARD.getByName(shard), async (instance, state) => {
      const objectEnv = (instance as unknown as { env: Env }).env;
      const meter = meterInvocation(objectEnv);
      const deps = receiptSenderDeps(meter.env, () => new Date(runAt));
      // Sends are counted here (the meter does not wrap the send_email binding).
      let count = 0;
      const send = (message: Parameters<typeof deps.send>[0]) => (count++, emailTransport.send(objectEnv.RECEIPT_EMAIL, message));
      const answer = await runReceiptOutbox(state.storage, { ...deps, send });
      return { run: answer, sends: count, others: meter.totalSubrequests() };
    });
    expect(SENDS_PER_RUN).toBe(40);
    expect(run.sent).toBe(40);
    expect(sends).toBe(40);
    // Every send is a subrequest of the alarm's invocation, and so is every other call the run made.
    expect(sends + others).toBeLessThanOrEqual(EMAIL_SERVICE.subrequestsPerRequest);
    expect(others).toBeGreaterThanOrEqual(3);
    // More is due: the next run is now, not later.
    expect(Date.parse(run.nextRunAt ?? '')).toBeLessThanOrEqual(runAt);
    const second = await runReceipts(shard, runAt);
    const third = await runReceipts(shard, runAt);
    expect([second.sent, third.sent]).toEqual([40, 20]);
  });

  it("puts a receipt off at the Email Service's rate limit, or past the invocation's subrequests, without spending an attempt", async () => {
    const shop = await receiptMerchant('Rate Limit Shop');
    const at = Date.parse('2032-01-06T10:00:30.000Z');
    const shard = apiShardName(shop.id, '2032-01-06');
    const limited = address('ratelimited');
    const tooMany = address('toomany');
    failNextSends(limited, 'E_RATE_LIMIT_EXCEEDED');
    failNextSends(tooMany, 'Error: Too many subrequests.');
    const a = await chargeAt(shop, at, { ...SALE, email_receipt: 'true', email_address: limited });
    const b = await chargeAt(shop, at, { ...SALE, email_receipt: 'true', email_address: tooMany });
    const first = await runReceipts(shard, at);
    expect(first).toMatchObject({ sent: 0, retrying: 0, postponed: 2 });
    const [waiting] = await receiptsOf(shop, a.id, '2032-01-06');
    expect(waiting).toMatchObject({ status: 'queued', attempts: 0, last_error: expect.stringContaining('E_RATE_LIMIT_EXCEEDED') });
    // The next minute, spread over its first 20 seconds.
    const next = Date.parse(waiting?.next_attempt_at ?? '');
    expect(next).toBeGreaterThanOrEqual(Date.parse('2032-01-06T10:01:00.000Z'));
    expect(next).toBeLessThan(Date.parse('2032-01-06T10:01:20.000Z'));
    const [again] = await receiptsOf(shop, b.id, '2032-01-06');
    expect(again).toMatchObject({ status: 'queued', attempts: 0, last_error: expect.stringContaining('Too many subrequests') });
    expect(Date.parse(again?.next_attempt_at ?? '') - at).toBeLessThanOrEqual(1_000);

    await sendAllReceipts(shard, at);
    expect(await mailTo(limited)).toHaveLength(1);
    expect(await mailTo(tooMany)).toHaveLength(1);
    expect(await receiptsOf(shop, a.id, '2032-01-06')).toEqual([expect.objectContaining({ status: 'sent', attempts: 1, last_error: null })]);
    expect(await receiptsOf(shop, b.id, '2032-01-06')).toEqual([expect.objectContaining({ status: 'sent', attempts: 1, last_error: null })]);
  });
});

describe("a merchant's receipt budgets", () => {
  it('are set through the admin API, answered with the merchant, defaulted, and checked', async () => {
    const shop = await receiptMerchant('Budget Settings Shop');
    const fresh = await admin('GET', `/admin/merchants/${shop.id}`);
    expect((await fresh.json<{ data: { receipt_limits: unknown } }>()).data.receipt_limits).toEqual({ daily: 10_000, per_minute: 150, per_recipient: 10 });
    expect(await setReceiptLimits(shop.id, { daily: 500_000, per_minute: 600 })).toEqual({ daily: 500_000, per_minute: 600, per_recipient: 10 });
    expect(await setReceiptLimits(shop.id, { per_minute: null, per_recipient: 3 })).toEqual({ daily: 500_000, per_minute: 150, per_recipient: 3 });
    const bad = await admin('PATCH', `/admin/merchants/${shop.id}`, { receipt_limits: { per_recipient: 0 } });
    expect(bad.status).toBe(400);
    expect((await bad.json<Envelope>()).errors?.map((e) => e.field)).toEqual(['receipt_limits.per_recipient']);
    const created = await admin('POST', '/admin/merchants', { name: 'Budget At Birth', receipt_limits: { daily: 50 } });
    expect(created.status).toBe(201);
    expect((await created.json<{ data: { receipt_limits: unknown } }>()).data.receipt_limits).toEqual({ daily: 50, per_minute: 150, per_recipient: 10 });
  });

  it('holds receipts past the daily budget until the next UTC day, without spending an attempt', async () => {
    const shop = await receiptMerchant('Daily Budget Shop');
    await setReceiptLimits(shop.id, { daily: 3 });
    const at = Date.parse('2032-02-01T10:00:00.000Z');
    const shard = apiShardName(shop.id, '2032-02-01');
    const to = Array.from({ length: 5 }, (_, i) => address(`daily${i}`));
    const txs = [];
    for (const recipient of to) txs.push(await chargeAt(shop, at, { ...SALE, email_receipt: 'true', email_address: recipient }));
    expect(await runReceipts(shard, at)).toMatchObject({ sent: 3, postponed: 2 });
    const held = (await receiptsOf(shop, txs[4]?.id ?? '', '2032-02-01')).at(0);
    expect(held).toMatchObject({ status: 'queued', attempts: 0, last_error: expect.stringContaining('RECEIPT_DAILY_BUDGET') });
    expect(Date.parse(held?.next_attempt_at ?? '')).toBeGreaterThanOrEqual(Date.parse('2032-02-02T00:00:00.000Z'));
    // Later the same day: still held.
    expect(await runReceipts(shard, Date.parse('2032-02-01T23:59:00.000Z'))).toMatchObject({ sent: 0 });
    expect((await Promise.all(to.map(mailTo))).map((m) => m.length)).toEqual([1, 1, 1, 0, 0]);
    await sendAllReceipts(shard, Date.parse('2032-02-02T00:00:00.000Z'));
    expect((await Promise.all(to.map(mailTo))).map((m) => m.length)).toEqual([1, 1, 1, 1, 1]);
    expect(await receiptsOf(shop, txs[4]?.id ?? '', '2032-02-01')).toEqual([expect.objectContaining({ status: 'sent', attempts: 1 })]);
  });

  it('sends at most the merchant per_minute in a minute; the rest go the next minute', async () => {
    const shop = await receiptMerchant('Minute Budget Shop');
    await setReceiptLimits(shop.id, { per_minute: 2 });
    const at = Date.parse('2032-02-03T10:00:10.000Z');
    const shard = apiShardName(shop.id, '2032-02-03');
    for (let i = 0; i < 3; i++) await chargeAt(shop, at, { ...SALE, email_receipt: 'true', email_address: address(`minute${i}`) });
    const first = await runReceipts(shard, at);
    expect(first).toMatchObject({ sent: 2, postponed: 1 });
    expect(Date.parse(first.nextRunAt ?? '')).toBeGreaterThanOrEqual(Date.parse('2032-02-03T10:01:00.000Z'));
    expect(await runReceipts(shard, Date.parse(first.nextRunAt ?? ''))).toMatchObject({ sent: 1 });
  });

  it('fails a receipt past the per-recipient limit, resends and other shards of the merchant included', async () => {
    const shop = await receiptMerchant('Recipient Limit Shop');
    await setReceiptLimits(shop.id, { per_recipient: 2 });
    const at = Date.parse('2032-02-05T10:00:00.000Z');
    const day = '2032-02-05';
    const shard = apiShardName(shop.id, day);
    const victim = address('victim');
    const first = await chargeAt(shop, at, { ...SALE, email_receipt: 'true', email_address: victim });
    expect(await runReceipts(shard, at)).toMatchObject({ sent: 1 });
    // A resend counts like any receipt: the address's second today.
    expect(await resendAt(shop, first.id, at + 1_000)).toMatchObject({ ok: true });
    expect(await runReceipts(shard, at + 1_000)).toMatchObject({ sent: 1 });
    // So the next transaction's receipt to it is its third: failed, no attempt spent.
    const second = await chargeAt(shop, at + 2_000, { ...SALE, email_receipt: 'true', email_address: victim });
    expect(await runReceipts(shard, at + 2_000)).toMatchObject({ sent: 0, failed: 1 });
    expect(await receiptsOf(shop, second.id, day)).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 0, last_error: expect.stringContaining('RECEIPT_RECIPIENT_LIMIT') }),
    ]);
    // A resend to it is refused at once (POST …/receipt answers 409 with this message).
    const refused = await resendAt(shop, first.id, at + 3_000);
    expect(refused).toMatchObject({ ok: false, reason: 'limit', message: expect.stringContaining('receipt_limits.per_recipient') });
    expect(await mailTo(victim)).toHaveLength(2);
    // The same address from another of the merchant's shards (a transaction of the same day's batch file): refused too.
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    const template = await templateRecord(caller, new Date(at + 4_000), { ...SALE, email_address: address('other') });
    const records = likeRecords(template, 1, `v${crypto.randomUUID().slice(0, 8)}`, (record) => {
      record.email_address = victim;
    }).map((stored) => ({ ...stored, extras: { ...stored.extras, email_receipt: true } }));
    const batchId = `bat_${crypto.randomUUID().slice(0, 8)}000000000000`;
    await seedShard(shardOf({ kind: 'batch', merchantId: shop.id, batchId }, new Date(at).toISOString()), records, 500);
    expect(await runReceipts(batchShardName(shop.id, batchId), at + 10_000)).toMatchObject({ sent: 0, failed: 1 });
    expect(await mailTo(victim)).toHaveLength(2);
    // Another address still gets the same transaction's receipt.
    const elsewhere = address('elsewhere');
    expect(await resendAt(shop, second.id, at + 11_000, elsewhere)).toMatchObject({ ok: true });
    await runReceipts(shard, at + 11_000);
    expect(await mailTo(elsewhere)).toHaveLength(1);
  });
});

describe('only money that moved has a receipt', () => {
  it('sends none for a zero-amount authorization, its void or a verification, and refuses to resend one', async () => {
    const shop = await receiptMerchant('Zero Amount Shop');
    const to = address('prize');
    const body = { ...SALE, transaction_type: 'authorize', amount: 0, email_receipt: true, email_address: to, description: 'Claim your prize at phish.example' };
    const auth = await call('POST', '/api/transaction', { key: shop.secretKey, body });
    expect(auth.status).toBe(201);
    const { id } = (await auth.json<Envelope<TxRecord>>()).data;
    const voided = await call('POST', `/api/transaction/${id}/void`, { key: shop.secretKey });
    expect(voided.status).toBe(200);
    const verification = await call('POST', '/api/transaction', {
      key: shop.secretKey,
      body: { ...SALE, transaction_type: 'verification', amount: 0, email_receipt: true, email_address: to },
    });
    expect(verification.status).toBe(201);
    await sendAllReceipts(apiShardName(shop.id));
    expect(await mailTo(to)).toEqual([]);
    expect(await receiptsOf(shop, id, new Date().toISOString().slice(0, 10))).toEqual([]);
    const resend = await call('POST', `/api/transaction/${id}/receipt`, { key: shop.secretKey });
    expect(resend.status).toBe(409);
    expect((await resend.json<Envelope>()).msg).toContain('moved no money');
    // A sale of the same merchant still gets its receipt.
    const paid = address('paid');
    const sale = await call('POST', '/api/transaction', { key: shop.secretKey, body: { ...SALE, amount: 1000, email_receipt: true, email_address: paid } });
    expect(sale.status).toBe(201);
    await sendAllReceipts(apiShardName(shop.id));
    expect(await mailTo(paid)).toHaveLength(1);
  });

  it('sends none for the zero-amount authorizations of a batch file', async () => {
    const shop = await receiptMerchant('Zero Batch Shop');
    const run = crypto.randomUUID().slice(0, 8);
    const rows = Array.from({ length: 6 }, (_, i) => [i === 5 ? 'sale' : 'authorize', i === 5 ? '1000' : '0', VISA, '12/30', 'true', `zero${i}-${run}@customer.example`]);
    const id = await uploadOk(shop.secretKey, csv(['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'email_receipt', 'email_address'], rows), 'zero.csv');
    await waitForStatus(shop.secretKey, id, 'completed');
    await sendAllReceipts(batchShardName(shop.id, id), Date.now() + 10_000);
    const counts = await Promise.all(rows.map((row) => mailTo(row[5] ?? '')));
    expect(counts.map((m) => m.length)).toEqual([0, 0, 0, 0, 0, 1]);
    // The batch's status counts the one receipt there was.
    const state = await call('GET', `/api/filebatch/${id}`, { key: shop.secretKey });
    expect((await state.json<Record<string, unknown>>()).receipts).toEqual({ queued: 0, sent: 1, failed: 0 });
  });
});

describe("the budget's storage", () => {
  it('stays the size its daily budget fixed, however many recipients it counts, and still refuses the 11th receipt to one address', async () => {
    const daily = 60_000;
    const stub = env.RECEIPT_BUDGET.getByName(`capacity/${crypto.randomUUID()}`);
    const limits = { daily, perMinute: daily, perRecipient: 10 };
    const now = '2032-03-01T10:00:00.000Z';
    const hashes: RecipientHash[] = await Promise.all(Array.from({ length: 50_000 }, (_, i) => recipientHash(`customer${i}@shop.example`)));
    const refused: number[] = [];
    for (let from = 0; from < hashes.length; from += 5_000) {
      const verdicts = await stub.admit(now, limits, hashes.slice(from, from + 5_000));
      verdicts.forEach((verdict, k) => verdict !== 'ok' && refused.push(from + k));
    }
    // 50,000 distinct recipients, one receipt each: none refused (the sketch never counts them up to 10).
    expect(refused).toEqual([]);
    const size = await runInDurableObject(stub, (_instance, state) => ({
      pages: state.storage.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM recipient_sketch').one().n,
      bytes: state.storage.sql.databaseSize,
    }));
    // At most DEPTH rows of widthFor(daily) two-byte counters: 512 KiB here, whatever it counts. A row per
    // recipient would be 50,000 rows.
    expect(size.pages).toBeLessThanOrEqual((DEPTH * widthFor(daily)) / PAGE_COUNTERS);
    expect(size.bytes).toBeLessThan(1_000_000);
    const repeat = hashes[0] as RecipientHash;
    const verdicts = await stub.admit(now, limits, Array.from({ length: 10 }, () => repeat));
    expect(verdicts).toEqual([...Array.from({ length: 9 }, () => 'ok'), 'recipient']);
  });
});

describe("a file's receipts at the documented pace", () => {
  it('sends every receipt of a 2,000-row file, 40 a run, no faster than the pace, the counts showing queued and sent as it goes', async () => {
    const shop = await receiptMerchant('Pace Shop');
    // A big merchant's budgets, more than the service's pace: only the pace holds it.
    await setReceiptLimits(shop.id, { daily: 1_000_000, per_minute: 100_000 });
    const start = Date.parse('2032-04-01T00:00:00.000Z');
    const shard = await seedReceiptBatch(shop, 2_000, start);
    const ledger = env.LEDGER_SHARD.getByName(shard);
    expect(await ledger.receiptCounts({ merchantId: shop.id, name: shard } as never)).toEqual({ queued: 2_000, sent: 0, failed: 0 });
    let at = Math.max(start, Date.now() + 10_000);
    const first = at;
    let runs = 0;
    const perMinute = new Map<number, number>();
    let midway: unknown = null;
    for (; runs < 500; runs++) {
      const run = await runReceipts(shard, at);
      expect(run.sent).toBeLessThanOrEqual(SENDS_PER_RUN);
      const minute = Math.floor(at / 60_000);
      perMinute.set(minute, (perMinute.get(minute) ?? 0) + run.sent);
      if (runs === 10) midway = await ledger.receiptCounts({ merchantId: shop.id, name: shard } as never);
      if (run.nextRunAt === null) break;
      at = Math.max(at, Date.parse(run.nextRunAt));
    }
    expect(await ledger.receiptCounts({ merchantId: shop.id, name: shard } as never)).toEqual({ queued: 0, sent: 2_000, failed: 0 });
    expect(midway).toMatchObject({ failed: 0 });
    expect((midway as { queued: number }).queued).toBeGreaterThan(0);
    // Never more than the service's RECEIPT_SENDS_PER_MINUTE (600) in a minute, and at least 450 a
    // minute (a run finds no room only when three of the four shares in a row are spent): 2,000 in
    // at most 4.5 minutes (measured: 3.0 to 3.2 minutes, e.g. 600, 590, 450, 360 a minute in 52
    // runs), the rate docs/receipts.md gives for a 500,000-row file.
    expect(Math.max(...perMinute.values())).toBeLessThanOrEqual(600);
    const minutes = (at - first) / 60_000;
    expect(minutes).toBeLessThanOrEqual(4.5);
  }, 120_000);
});

describe("the shard's alarm", () => {
  it('leaves due retention to an alarm of its own after a run that sent (sends count in the binding\'s 50 subrequests)', async () => {
    const past = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    const due = shardFor(env, { kind: 'api', merchantId: 'retentionmerchant', day: past }, `${past}T00:00:00.000Z`).identity;
    const fresh = shardFor(env, { kind: 'api', merchantId: 'retentionmerchant', day: today }, `${today}T00:00:00.000Z`).identity;
    const sent = { sent: 3, failed: 0, postponed: 0, retrying: 0, nextRunAt: null };
    const idle = { ...sent, sent: 0 };
    const decide = (identity: typeof due) =>
      runInDurableObject(env.LEDGER_SHARD.getByName(`${identity.name}/probe`), (_instance, state) => {
        initialiseShard(state.storage.sql, identity);
        return [retentionWaits(state.storage.sql, sent, Date.now()), retentionWaits(state.storage.sql, idle, Date.now())];
      });
    // Its request hashes were due to be cleared 48 hours after its day began: not in the run's invocation.
    expect(await decide(due)).toEqual([true, false]);
    expect(await decide(fresh)).toEqual([false, false]);
  });
});
