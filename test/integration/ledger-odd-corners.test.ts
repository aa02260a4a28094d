/**
 * The ledger's odd corners (issue 30, items 3 to 7; docs/transactions.md): ids that name what cannot
 * exist are refused before any object is touched; a zero-amount authorization moves no money; a
 * transaction's operations are bounded and each costs what the first did; settlement totals past
 * 2^53 stay exact; a replay is 200 on every route.
 */
import { env } from 'cloudflare:workers';
import { listDurableObjectIds, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { apiShardName } from '../helpers/ledger';
import { rowsReadOf, watchObjectSql, type WatchedStatement } from '../helpers/sql-watch';
import { getTransaction } from '../../src/services/transactions/engine';
import { apiTransactionId, batchTransactionId, utcDay } from '../../src/services/transactions/ledger';
import { settle } from '../../src/services/transactions/lifecycle-rules';
import { settlementObject } from '../../src/services/settlement/index-registry';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';

type TxRecord = Record<string, string | number | boolean | null>;
const DAY = 86_400_000;
const VISA = '4111111111111111';

async function create(merchant: TestMerchant, body: Record<string, unknown>): Promise<TxRecord> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { cc_number: VISA, cc_expiration: '12/30', ...body } });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json<Envelope<TxRecord>>()).data;
}

function operate(merchant: TestMerchant, id: string, kind: 'capture' | 'void' | 'refund', body?: unknown, headers?: Record<string, string>): Promise<Response> {
  return call('POST', `/api/transaction/${id}/${kind}`, { key: merchant.secretKey, body, ...(headers ? { headers } : {}) });
}

async function settleNow(merchant: TestMerchant): Promise<{ id: string }[]> {
  const response = await admin('POST', `/admin/merchants/${merchant.id}/settle`);
  expect(response.status).toBe(200);
  return (await response.json<Envelope<{ id: string }[]>>()).data;
}

/** What a ledger shard holds: its tables (none: never written) and its alarm. */
async function shardLeft(name: string): Promise<{ tables: number; alarm: number | null }> {
  return runInDurableObject(env.LEDGER_SHARD.getByName(name), async (_instance, state) => ({
    tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'").toArray().length,
    alarm: await state.storage.getAlarm(),
  }));
}

const ids = async () => new Set((await listDurableObjectIds(env.LEDGER_SHARD)).map((id) => id.toString()));

describe('ids that name what cannot exist (item 3)', () => {
  it('GET, capture, void and refund of ids dated 2999, 2262, 1999, on no calendar day, or malformed answer 404 and create no object', async () => {
    const shop = await createMerchant({ name: 'Made Up Ids' });
    const before = await ids();
    const bogus = [
      await apiTransactionId(shop.id, 'far-future', '2999-12-31'),
      await apiTransactionId(shop.id, 'alarm-overflow', '2262-04-12'),
      await apiTransactionId(shop.id, 'before-the-service', '1999-01-01'),
      await apiTransactionId(shop.id, 'no-such-day', '2027-02-31'),
      batchTransactionId('bat_00000000000000000000', '2999-01-01T00:00:00.000Z', 2),
      batchTransactionId('bat_00000000000000000000', '1999-01-01T00:00:00.000Z', 2),
      `txn_r${(await apiTransactionId(shop.id, 'refund-of-2999', '2999-01-01')).slice(4)}x1`,
      'txn_a2027013100000000000000000000zz',
    ];
    for (const id of bogus) {
      const got = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
      expect(got.status, id).toBe(404);
      for (const kind of ['capture', 'void', 'refund'] as const) expect((await operate(shop, id, kind)).status, `${kind} ${id}`).toBe(404);
      expect((await call('POST', `/api/transaction/${id}/receipt`, { key: shop.secretKey })).status, `receipt ${id}`).toBe(404);
    }
    // Not one ledger shard was made, and the shards those days would name hold nothing.
    expect([...(await ids())].filter((id) => !before.has(id))).toEqual([]);
    for (const day of ['2999-12-31', '2262-04-12', '1999-01-01']) expect(await shardLeft(apiShardName(shop.id, day))).toEqual({ tables: 0, alarm: null });
  });

  it("an id of today's form never issued: GET and every operation answer 404 and the day's shard stays empty (no meta, no alarm)", async () => {
    const shop = await createMerchant({ name: 'Never Issued' });
    const id = await apiTransactionId(shop.id, 'never-sent', utcDay(new Date()));
    expect((await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).status).toBe(404);
    for (const kind of ['capture', 'void', 'refund'] as const) expect((await operate(shop, id, kind)).status).toBe(404);
    expect(await shardLeft(apiShardName(shop.id))).toEqual({ tables: 0, alarm: null });
  });

  it('an id past retention that never existed is not found (404), not "archived": 410 is only for a shard archived in R2', async () => {
    const shop = await createMerchant({ name: 'Past Retention' });
    const today = utcDay(new Date());
    const id = await apiTransactionId(shop.id, 'never-there', today);
    const later = () => new Date(Date.now() + 549 * DAY);
    expect(await getTransaction(env, shop.id, id, later)).toEqual({ ok: false, reason: 'not_found' });
    expect(await shardLeft(apiShardName(shop.id, today))).toEqual({ tables: 0, alarm: null });
  });
});

describe('a zero-amount authorization, an account check (item 4)', () => {
  it('cannot be captured (409 naming why) nor refunded; a settlement run puts it in no batch', async () => {
    const shop = await createMerchant({ name: 'Account Check' });
    const check = await create(shop, { transaction_type: 'authorize', amount: 0 });
    expect(check).toMatchObject({ status: 'authorized', amount_authorized: 0 });
    const captured = await operate(shop, String(check.id), 'capture');
    expect(captured.status).toBe(409);
    expect((await captured.json<Envelope>()).msg).toContain('zero-amount authorization');
    expect(await settleNow(shop)).toEqual([]);
    expect((await operate(shop, String(check.id), 'refund')).status).toBe(409);
    const now = await call('GET', `/api/transaction/${String(check.id)}`, { key: shop.secretKey });
    expect((await now.json<Envelope<TxRecord>>()).data).toMatchObject({ status: 'authorized', amount_captured: 0, settlement_batch_id: null });
    // It can still be voided: that releases nothing and moves no money.
    expect((await operate(shop, String(check.id), 'void')).status).toBe(200);
  });

  it('a record captured for 0 before this rule settles into no batch: it never names a batch that lists nothing', () => {
    const record = { id: 'txn_x', type: 'authorize', status: 'pending_settlement', processor_id: 'proc_1', amount_captured: 0 } as unknown as TransactionRecord;
    expect(settle(record, '2027-01-02', '2027-01-02T00:00:00.000Z')).toMatchObject({ status: 'settled', amount_settled: 0, settlement_batch_id: null });
    const paid = { ...record, amount_captured: 5 } as TransactionRecord;
    expect(settle(paid, '2027-01-02', '2027-01-02T00:00:00.000Z')).toMatchObject({ settlement_batch_id: 'stl_20270102_proc_1' });
  });
});

/**
 * Rows the shard's SQLite reads while `work` runs (the `rowsRead` of every statement it executes),
 * counted by wrapping the object's `sql.exec`: a measure of cost that does not depend on the machine.
 */
async function rowsReadBy(name: string, work: () => Promise<unknown>): Promise<number> {
  const statements: WatchedStatement[] = [];
  await watchObjectSql(env.LEDGER_SHARD.getByName(name), (statement) => statements.push(statement), work);
  return rowsReadOf(statements);
}

/** Makes the transaction look as if it had had `n` operations, all refunds answered (a declined refund's row, copied). */
async function seedOperations(name: string, transactionId: string, n: number): Promise<void> {
  await runInDurableObject(env.LEDGER_SHARD.getByName(name), (_instance, state) => {
    const sql = state.storage.sql;
    const have = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM operations WHERE transaction_id = ?', transactionId).one().n;
    for (let i = have; i < n; i++) {
      sql.exec(
        `INSERT INTO operations (key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer)
         SELECT ?, transaction_id, kind, request_hash, amount, refund_id, created_at, answer FROM operations WHERE transaction_id = ? AND answer IS NOT NULL LIMIT 1`,
        `${transactionId}:refund:seeded-${i}`,
        transactionId,
      );
    }
    const counts = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'operation_counts'").toArray().length > 0;
    if (counts) sql.exec('INSERT OR REPLACE INTO operation_counts (transaction_id, operations, refunds) VALUES (?, ?, ?)', transactionId, n, n);
  });
}

describe("a transaction's operations (item 5)", () => {
  it('the 5,000th costs the rows the first did; the 10,000th makes refund x10000, an id the API reads; the 10,001st is refused (409)', async () => {
    const shop = await createMerchant({ name: 'Many Refunds' });
    const sale = await create(shop, { transaction_type: 'sale', amount: 100_000 });
    const id = String(sale.id);
    await settleNow(shop);
    const shard = apiShardName(shop.id);
    // Declined refunds (the sandbox declines 303) move no money: they are what could repeat without end.
    const declined = () => operate(shop, id, 'refund', { amount: 303 });
    const first = await rowsReadBy(shard, async () => expect((await declined()).status).toBe(201));
    const second = await rowsReadBy(shard, async () => expect((await declined()).status).toBe(201));
    await seedOperations(shard, id, 4_999);
    const fiveThousandth = await rowsReadBy(shard, async () => expect((await declined()).status).toBe(201));
    console.log(JSON.stringify({ rowsRead: { first, second, fiveThousandth } }));
    expect(first).toBeGreaterThan(0);
    // No more than the second: a transaction's first operations are counted by their rows (fewer
    // than COUNTS_ROW_FROM, one row read each), later ones by its counts row (one row read).
    expect(fiveThousandth).toBeLessThanOrEqual(second);

    await seedOperations(shard, id, 9_999);
    const last = await operate(shop, id, 'refund', { amount: 1 });
    expect(last.status).toBe(201);
    const refund = (await last.json<Envelope<TxRecord>>()).data;
    expect(refund.id).toBe(`txn_r${id.slice(4)}x10000`);
    const read = await call('GET', `/api/transaction/${String(refund.id)}`, { key: shop.secretKey });
    expect(read.status).toBe(200);
    expect((await read.json<Envelope<TxRecord>>()).data).toMatchObject({ type: 'refund', amount: 1, referenced_transaction_id: id });

    const refused = await declined();
    expect(refused.status).toBe(409);
    expect((await refused.json<Envelope>()).msg).toContain('10000 captures, voids and refunds');
    expect(await getTransaction(env, shop.id, `txn_r${id.slice(4)}x10001`, () => new Date())).toEqual({ ok: false, reason: 'not_found' });
  }, 60_000);
});

describe('settlement totals past 2^53 (item 6)', () => {
  it("a batch's total one past 2^53 is answered exactly, as its digits, never rounded", async () => {
    const shop = await createMerchant({ name: 'Huge Day' });
    await create(shop, { transaction_type: 'sale', amount: 1000 });
    const [batch] = await settleNow(shop);
    if (!batch) throw new Error('no batch');
    // 90,073 sales at the largest amount would take a file of 90,073 rows: the object's own
    // entries table is given one more piece holding the rest of the money (2^53 + 1 in all).
    const rest = Number(2n ** 53n + 1n - 1000n); // 9,007,199,254,739,993: still exact as a number
    await runInDurableObject(settlementObject(env, shop.id), (_instance, state) => {
      state.storage.sql.exec("INSERT INTO entries (batch_id, shard, seq, num, captured, credit, entries) VALUES (?, 'zz-seeded', 1, 0, ?, 0, '[]')", batch.id, rest);
    });
    for (const response of [
      await call('GET', `/api/settlement/batch/${batch.id}`, { key: shop.secretKey }),
      await call('POST', '/api/settlement/batch/search', { key: shop.secretKey, body: {} }),
    ]) {
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('"amount_captured":"9007199254740993"');
      expect(text).toContain('"net_deposit":"9007199254740993"');
      expect(text).not.toContain('9007199254740992');
    }
  });
});

describe('one replay status (item 7)', () => {
  it('a refund replayed under its Idempotency-Key answers 200 with Idempotent-Replayed, as POST /api/transaction does', async () => {
    const shop = await createMerchant({ name: 'Replays' });
    const sale = await create(shop, { transaction_type: 'sale', amount: 1000 });
    await settleNow(shop);
    const headers = { 'Idempotency-Key': 'refund-once' };
    const first = await operate(shop, String(sale.id), 'refund', { amount: 400 }, headers);
    expect(first.status).toBe(201);
    const again = await operate(shop, String(sale.id), 'refund', { amount: 400 }, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await again.json<Envelope<TxRecord>>()).data.id).toBe((await first.json<Envelope<TxRecord>>()).data.id);
  });
});
