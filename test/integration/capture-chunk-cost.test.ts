/**
 * What a batch chunk's captures cost the ledger shard that holds their authorizations, counted in
 * what does not depend on the machine: the bytes its claim and answer calls send back per capture,
 * and how often it reads (decompresses, parses) the page rows holding the authorizations. A chunk
 * claims its rows in one call and answers them in another a moment later; both need the same page
 * records.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { watchObjectSql } from '../helpers/sql-watch';
import { APPROVED_OPERATION, claimedCapture } from '../helpers/ledger';
import { locateTransaction } from '../../src/services/transactions/engine';
import { sha256Hex } from '../../src/lib/crypto';
import { OpenOperationBlocks, operationCountsOf, operationCurrent, type OperationCompleted, type OperationCompletion, type OperationRequest } from '../../src/storage/ledger-shard';
import { unpackResultColumns, type TransactionRecord } from '../../src/schemas/transaction-columns';

type TxRecord = Record<string, string | number | boolean | null>;

const AUTHORIZE = { transaction_type: 'authorize', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 };

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Capture Cost Shop' });
});

/** The statements the shard object runs while `work` runs (its `sql.exec` wrapped). */
async function statementsDuring(name: string, work: () => Promise<unknown>): Promise<string[]> {
  const queries: string[] = [];
  await watchObjectSql(env.LEDGER_SHARD.getByName(name), ({ query }) => queries.push(query), work);
  return queries;
}

describe("a chunk's captures in the ledger shard of their authorizations", () => {
  it('read the page rows once for the claims and the answers, and send back a few hundred bytes a capture, not its record three times', async () => {
    const auths: TxRecord[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: AUTHORIZE });
      expect(response.status).toBe(201);
      auths.push((await response.json<Envelope<TxRecord>>()).data);
    }
    const now = new Date();
    const iso = now.toISOString();
    const located = await Promise.all(auths.map((auth) => locateTransaction(env, shop.id, String(auth.id), now)));
    const first = located[0];
    if (!first?.ok || located.some((l) => !l.ok || l.shard.identity.name !== first.shard.identity.name)) throw new Error('not in one shard');
    const { stub, identity } = first.shard;
    const requestHash = await sha256Hex(JSON.stringify({ amount: null }));
    const requests: OperationRequest[] = located.map((l, i) => {
      if (!l.ok) throw new Error('not found');
      const id = String(auths[i]?.id);
      return { transactionId: id, query: l.query, kind: 'capture', key: `${id}:capture:row${i}`, requestHash, amount: null, now: iso, expiredBefore: '2000-01-01T00:00:00.000Z', staleBefore: '2000-01-01T00:00:00.000Z' };
    });
    let claimBytes = 0;
    let answerBytes = 0;
    const list: OperationCompleted[] = [];
    const queries = await statementsDuring(identity.name, async () => {
      const begun = await stub.beginOperations(identity, requests);
      if (!Array.isArray(begun)) throw new Error('the shard failed');
      expect(begun.map((b) => b.outcome)).toEqual(requests.map(() => 'claimed'));
      claimBytes = JSON.stringify(begun).length;
      const completions: OperationCompletion[] = requests.map((r, i) => ({ key: r.key, query: r.query, result: APPROVED_OPERATION, now: iso, expiredBefore: r.expiredBefore, idempotencyKey: `row${i}`, ipAddress: null }));
      const answers = await stub.completeOperations(identity, completions);
      if (!Array.isArray(answers)) throw new Error('the shard failed');
      answerBytes = JSON.stringify(answers).length;
      list.push(...answers);
    });
    // Each page row's records read (and decompressed) once for both calls: one statement reads them.
    expect(queries.filter((q) => /SELECT [^;]*\brecords,[\s\S]*FROM pages/.test(q))).toHaveLength(1);
    // A claim answers its operation and what asking the processor needs (which processor, card or
    // ACH), about 450 bytes; with the whole record it answered before, some 2 KB.
    expect(claimBytes / requests.length).toBeLessThan(600);
    // An approved capture's answer is the transaction as written, sent once (it was sent twice).
    const recordBytes = JSON.stringify(auths[0]).length;
    expect(answerBytes / requests.length).toBeLessThan(recordBytes * 1.3);
    // What the caller indexes is still the transaction as written, and as a read answers it.
    // A transaction's first operations are counted by their rows: no counts row written per capture.
    const countRows = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec('SELECT COUNT(*) AS n FROM operation_counts').one().n);
    expect(countRows).toBe(0);
    expect(list).toHaveLength(requests.length);
    for (const [i, answer] of list.entries()) {
      const parsed = JSON.parse(answer.answer) as { record: TransactionRecord & { amount_refunded: number } };
      const written = operationCurrent(answer, parsed.record);
      const read = await call('GET', `/api/transaction/${String(auths[i]?.id)}`, { key: shop.secretKey });
      const { amount_refunded: refunded, ...record } = (await read.json<Envelope<TxRecord>>()).data;
      expect(written?.record).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
      expect(written?.record).not.toHaveProperty('amount_refunded');
      // Every column of the record as written is what a read answers (a read adds a few of its own).
      expect(record).toMatchObject(written?.record ?? { missing: true });
      expect(written?.amountRefunded).toBe(refunded);
    }
  });
});

describe('a capture answered packed (a batch chunk asks so)', () => {
  it("sends its result columns in order, a third of the record's bytes, and keeps under its key the answer the API would have answered", async () => {
    const made = await call('POST', '/api/transaction', { key: shop.secretKey, body: AUTHORIZE });
    const auth = (await made.json<Envelope<TxRecord>>()).data;
    const id = String(auth.id);
    const { stub, identity, request, iso } = await claimedCapture(shop.id, id, 'packed1');
    const answers = await stub.completeOperations(identity, [
      { key: request.key, query: request.query, result: APPROVED_OPERATION, now: iso, expiredBefore: request.expiredBefore, idempotencyKey: 'packed1', ipAddress: null, claimed: { transactionId: id, kind: 'capture' }, packed: true },
    ]);
    if (!Array.isArray(answers)) throw new Error(answers.failed);
    const [answer] = answers;
    expect(answer?.answer).toBe('');
    const packed = answer?.packed;
    if (!packed) throw new Error('no packed answer');
    expect(packed.record.length).toBeLessThan(JSON.stringify(auth).length / 2);
    const record = unpackResultColumns(JSON.parse(packed.record) as unknown[]);
    // Every column is what a read answers now.
    const read = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
    const { amount_refunded: refunded, ...current } = (await read.json<Envelope<TxRecord>>()).data;
    expect(current).toMatchObject(record);
    expect(record).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
    expect(packed.amountRefunded).toBe(refunded);
    // The key's answer, as a redelivered row (or the API under the same key) gets it: the record as
    // the API would have answered it, the same columns and amount_refunded.
    const again = await stub.beginOperations(identity, [request]);
    if (!Array.isArray(again) || again[0]?.outcome !== 'answered') throw new Error('not answered');
    const replayed = JSON.parse(again[0].answer) as { status: number; record: TransactionRecord & { amount_refunded: number } };
    expect(replayed.status).toBe(200);
    expect(replayed.record).toEqual({ ...record, amount_refunded: packed.amountRefunded });
  });
});

describe("a transaction's operations counted", () => {
  it('by their keys, reading its own rows only, not the shard\'s other operations', async () => {
    // A shard holding many operations: the same API day's authorizations, each captured.
    const ids: string[] = [];
    for (let i = 0; i < 36; i++) {
      const made = await call('POST', '/api/transaction', { key: shop.secretKey, body: AUTHORIZE });
      const id = String((await made.json<Envelope<TxRecord>>()).data.id);
      expect((await call('POST', `/api/transaction/${id}/capture`, { key: shop.secretKey, body: { amount: 400 } })).status).toBe(200);
      ids.push(id);
    }
    const [target] = ids as [string];
    const located = await locateTransaction(env, shop.id, target, new Date());
    if (!located.ok) throw new Error('not found');
    const counted = await runInDurableObject(located.shard.stub, (_instance, state) => {
      const sql = state.storage.sql;
      const total = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM operations').one().n;
      // The blocks (claims in flight, and what the states name) are read once a step for all its transactions (operation-blocks.ts).
      const open = OpenOperationBlocks.read(sql, [target]);
      const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
      const exec = sql.exec.bind(sql);
      sql.exec = ((query: string, ...bindings: unknown[]) => {
        const cursor = exec(query, ...bindings);
        cursors.push(cursor);
        return cursor;
      }) as typeof sql.exec;
      try {
        const counts = operationCountsOf(sql, [target], open).get(target);
        return { total, counts, rowsRead: cursors.reduce((sum, c) => sum + c.rowsRead, 0) };
      } finally {
        sql.exec = exec;
      }
    });
    expect(counted.total).toBeGreaterThanOrEqual(ids.length);
    expect(counted.counts).toEqual({ operations: 1, refunds: 0 });
    // Its one operation (with the ids' JSON and the counts table's look-up), not the shard's others:
    // a scan would read every one of them.
    expect(counted.rowsRead).toBeLessThanOrEqual(6);
  });
});

describe('a released claim', () => {
  it('stays counted: the next refund of the transaction gets the next number, not the released one', async () => {
    const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { ...AUTHORIZE, transaction_type: 'sale' } });
    const sale = (await response.json<Envelope<TxRecord>>()).data;
    const id = String(sale.id);
    // A refund acts on settled money.
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const now = new Date();
    const located = await locateTransaction(env, shop.id, id, now);
    if (!located.ok) throw new Error('not found');
    const { stub, identity } = located.shard;
    const claim = async (key: string) => {
      const [begun] = (await stub.beginOperations(identity, [
        { transactionId: id, query: located.query, kind: 'refund', key: `${id}:refund:${key}`, requestHash: await sha256Hex(key), amount: 100, now: now.toISOString(), expiredBefore: '2000-01-01T00:00:00.000Z', staleBefore: '2000-01-01T00:00:00.000Z' },
      ])) as { outcome: string; operation?: { refundId: string | null } }[];
      return begun;
    };
    const first = await claim('r1');
    expect(first).toMatchObject({ outcome: 'claimed', operation: { refundId: `txn_r${id.slice(4)}x1` } });
    // Its processor never received it: released, and the key may be sent again.
    expect(await stub.releaseOperation(identity, `${id}:refund:r1`)).toBe(true);
    const second = await claim('r2');
    expect(second).toMatchObject({ outcome: 'claimed', operation: { refundId: `txn_r${id.slice(4)}x2` } });
  });
});
