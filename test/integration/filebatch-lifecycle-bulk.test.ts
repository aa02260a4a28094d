/**
 * A ledger shard's captures, voids and refunds taken a group at a time (a batch chunk's rows): the
 * group's reads and writes are shared, so these check what sharing could break. Two operations on
 * one transaction in one group (the second sees the first's claim; a second answer under one key
 * keeps the first), a chunk of many capture rows racing API captures of the same authorizations
 * (one wins each, the processor asked once), and a chunk of many rows delivered twice, one after the
 * other and at once (each row acts once).
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { QUEUE_TEST_TIMEOUT, createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, parseResult, status } from '../helpers/batch';
import { resultPartKey } from '../../src/storage/batch-files';
import { claimedCapture } from '../helpers/ledger';
import { locateTransaction } from '../../src/services/transactions/engine';
import { sha256Hex } from '../../src/lib/crypto';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';
import { OPERATION_BLOCK_MIN_CLAIMS, operationCurrent, type OperationCompletion, type OperationKind, type OperationRequest, type OperationResult } from '../../src/storage/ledger-shard';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';

type TxRecord = Record<string, string | number | boolean | null>;

const VISA = '4111111111111111';
const AUTHORIZE = { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: 1000 };
const OPS_HEADER = ['transaction_type', 'transaction_id', 'amount'];

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Bulk Lifecycle Shop' });
});

async function create(body: unknown): Promise<TxRecord> {
  const response = await call('POST', '/api/transaction', { key: shop.secretKey, body });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function get(id: string): Promise<TxRecord> {
  const response = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<TxRecord>>()).data;
}

/** Settles the shop's captured money now (a refund acts on settled money only). */
async function settleNow(): Promise<void> {
  expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
}

/** The sandbox's acts under keys starting with `prefix` (a transaction id), by type. */
async function sandboxCalls(prefix: string): Promise<{ type: string; chargeCalls: number }[]> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(shop.id), utcDay(new Date())));
  return (await acquirer.list()).filter((row) => row.idempotencyKey.startsWith(prefix)).map((row) => ({ type: row.type, chargeCalls: row.chargeCalls }));
}

const APPROVED: OperationResult = {
  response: 'approved',
  responseCode: 100,
  amountAuthorized: 0,
  authCode: 'A1',
  processorResponseCode: '00',
  processorResponseText: 'Approved',
  avsResponseCode: null,
  cvvResponseCode: null,
};

describe('two operations on one transaction in one group of the shard', () => {
  it('the second is in progress behind the first claim; two answers under one key keep the first; the next group sees what it wrote', async () => {
    const auth = await create(AUTHORIZE);
    const sale = await create({ ...AUTHORIZE, transaction_type: 'sale' });
    await settleNow();
    const now = new Date();
    const located = await locateTransaction(env, shop.id, String(auth.id), now);
    const saleLocated = await locateTransaction(env, shop.id, String(sale.id), now);
    if (!located.ok || !saleLocated.ok) throw new Error('not found');
    // An API day's transactions share its shard: the two are in one group.
    expect(saleLocated.shard.identity.name).toBe(located.shard.identity.name);
    const { stub, identity } = located.shard;
    const iso = now.toISOString();
    const request = async (id: string, kind: OperationKind, key: string, amount: number | null, query = located.query): Promise<OperationRequest> => ({
      transactionId: id,
      query,
      kind,
      key: `${id}:${kind}:${key}`,
      requestHash: await sha256Hex(JSON.stringify({ amount })),
      amount,
      now: iso,
      expiredBefore: '2000-01-01T00:00:00.000Z',
      staleBefore: new Date(now.getTime() - 60_000).toISOString(),
    });
    const completion = (id: string, kind: OperationKind, key: string, amount: number, query = located.query): OperationCompletion => ({
      key: `${id}:${kind}:${key}`,
      query,
      result: { ...APPROVED, amountAuthorized: amount },
      now: iso,
      expiredBefore: '2000-01-01T00:00:00.000Z',
      idempotencyKey: key,
      ipAddress: null,
    });
    const authId = String(auth.id);
    const saleId = String(sale.id);
    const begun = await stub.beginOperations(identity, [
      await request(authId, 'capture', 'k1', 400),
      await request(authId, 'void', 'k2', null),
      await request(authId, 'capture', 'k1', 400),
      await request(saleId, 'refund', 'r1', 600, saleLocated.query),
      await request(saleId, 'refund', 'r2', 600, saleLocated.query),
    ]);
    expect(Array.isArray(begun) && begun.map((b) => b.outcome)).toEqual(['claimed', 'in_progress', 'in_progress', 'claimed', 'in_progress']);
    const answers = await stub.completeOperations(identity, [
      completion(authId, 'capture', 'k1', 400),
      completion(authId, 'capture', 'k1', 400),
      completion(saleId, 'refund', 'r1', 600, saleLocated.query),
    ]);
    if (!Array.isArray(answers)) throw new Error('the shard failed');
    expect(answers[1]?.answer).toBe(answers[0]?.answer);
    const written = (i: number) => {
      const answer = answers[i];
      return answer ? operationCurrent(answer, (JSON.parse(answer.answer) as { record?: TransactionRecord & { amount_refunded?: number } }).record ?? null) : null;
    };
    expect(written(0)).toMatchObject({ record: { status: 'pending_settlement', amount_captured: 400 }, amountRefunded: 0 });
    // The second answer found the first's: it wrote nothing of its own.
    expect(written(1)).toBeNull();
    // The refund's answer is the refund; the original as it wrote it comes beside it.
    expect(written(2)).toMatchObject({ record: { id: saleId, status: 'partially_refunded' }, amountRefunded: 600 });
    expect(await get(authId)).toMatchObject({ status: 'pending_settlement', amount_captured: 400 });
    expect(await get(saleId)).toMatchObject({ amount_refunded: 600 });
    // The next group: the key answers its first answer; a second capture is refused; the refund left is 400.
    const after = await stub.beginOperations(identity, [
      await request(authId, 'capture', 'k1', 400),
      await request(authId, 'capture', 'k3', 100),
      await request(saleId, 'refund', 'r2', 600, saleLocated.query),
    ]);
    if (!Array.isArray(after)) throw new Error('the shard failed');
    expect(after.map((b) => b.outcome)).toEqual(['answered', 'refused', 'refused']);
    expect(after[2]).toMatchObject({ reason: 'amount' });
  });
});

describe('an answer that names what its claim acts on', () => {
  it('fails, writing nothing, when it names another operation than the claim under its key; named rightly, it answers', async () => {
    const auth = await create(AUTHORIZE);
    const id = String(auth.id);
    const { stub, identity, request, iso } = await claimedCapture(shop.id, id, 'named1');
    const completion = (kind: OperationKind): OperationCompletion => ({
      key: request.key,
      query: request.query,
      result: APPROVED,
      now: iso,
      expiredBefore: '2000-01-01T00:00:00.000Z',
      idempotencyKey: 'named1',
      ipAddress: null,
      claimed: { transactionId: id, kind },
    });
    // The shard reads by what the answer names; its step finds the claim is a capture, not a void.
    const wrong = await stub.completeOperations(identity, [completion('void')]);
    expect(wrong).toMatchObject({ failed: expect.stringContaining('another operation') });
    expect(await get(id)).toMatchObject({ status: 'authorized', amount_captured: 0 });
    const right = await stub.completeOperations(identity, [completion('capture')]);
    if (!Array.isArray(right)) throw new Error(right.failed);
    expect(await get(id)).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
  });
});

describe('a chunk of capture rows and API captures of the same authorizations at once', () => {
  it('each authorization is captured once, by the row or by the API; the processor is asked once each', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    // More than OPERATION_BLOCK_MIN_CLAIMS: the chunk's claims are one block row (operation-blocks.ts).
    const auths = await Promise.all(Array.from({ length: OPERATION_BLOCK_MIN_CLAIMS + 4 }, () => create(AUTHORIZE)));
    const ids = auths.map((a) => String(a.id));
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, ids.map((txn) => ['capture', txn, ''])));
    await markQueuedWithoutSending(id);
    const raced = ids.filter((_, i) => i % 2 === 0);
    const [apis, delivery] = await Promise.all([
      Promise.all(raced.map((txn) => call('POST', `/api/transaction/${txn}/capture`, { key: shop.secretKey }))),
      deliver('binbatch-chunks', messages),
    ]);
    // Rows that lost a claim to an API call in flight: the chunk is tried again and meets a captured transaction.
    if (delivery.retryMessages.length > 0) expect((await deliver('binbatch-chunks', messages, 2)).retryMessages).toEqual([]);
    expect((await status(shop.secretKey, id)).status).toBe('completed');
    const rows = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
    expect(rows).toHaveLength(ids.length);
    for (const [i, txn] of ids.entries()) {
      const rowWon = rows[i]?.response === 'approved';
      const api = raced.indexOf(txn);
      if (api < 0) expect(rowWon).toBe(true);
      else expect(apis[api]?.status).toBe(rowWon ? 409 : 200);
      expect((await sandboxCalls(`${txn}:capture`)).filter((c) => c.type === 'capture')).toEqual([{ type: 'capture', chargeCalls: 1 }]);
      expect(await get(txn)).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
    }
  });
});

describe('a chunk of many lifecycle rows delivered twice', () => {
  // Six of each kind: 24 rows, more than OPERATION_BLOCK_MIN_CLAIMS, so the chunk's claims are one
  // block row and its approved captures' and voids' answers are kept in it (operation-blocks.ts).
  const EACH = 6;
  const MANY = EACH * 4;
  async function chunkOfMany() {
    const auths = await Promise.all(Array.from({ length: EACH * 3 }, () => create(AUTHORIZE)));
    const sales = await Promise.all(Array.from({ length: EACH }, () => create({ ...AUTHORIZE, transaction_type: 'sale' })));
    await settleNow();
    const rows = [
      ...auths.slice(0, EACH).map((a) => ['capture', String(a.id), '']),
      ...auths.slice(EACH, EACH * 2).map((a) => ['capture', String(a.id), '400']),
      ...auths.slice(EACH * 2).map((a) => ['void', String(a.id), '']),
      ...sales.map((s) => ['refund', String(s.id), '250']),
    ];
    // A second chunk of rows refused before any read (no transaction named), delivered last: until
    // then the batch is running and a redelivered first chunk runs again rather than being skipped.
    const filler = Array.from({ length: 500 }, () => ['capture', '', '']);
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, [...rows, ...filler]));
    expect(messages).toHaveLength(2);
    await markQueuedWithoutSending(id);
    return { id, messages, auths: auths.map((a) => String(a.id)), sales: sales.map((s) => String(s.id)) };
  }

  async function expectActedOnce(batchId: string, last: unknown, auths: string[], sales: string[]) {
    expect((await deliver('binbatch-chunks', [last])).retryMessages).toEqual([]);
    expect((await status(shop.secretKey, batchId)).status).toBe('completed');
    const rows = parseResult(await (await call('GET', `/api/filebatch/${batchId}/download`, { key: shop.secretKey })).text()).rows.slice(0, MANY);
    expect(rows.map((r) => r.response)).toEqual(Array.from({ length: MANY }, () => 'approved'));
    for (const [i, txn] of auths.entries()) {
      const kind = i < EACH * 2 ? 'capture' : 'void';
      expect(await sandboxCalls(`${txn}:${kind}`)).toEqual([{ type: kind, chargeCalls: 1 }]);
      expect(await get(txn)).toMatchObject(i < EACH ? { amount_captured: 1000 } : i < EACH * 2 ? { amount_captured: 400 } : { status: 'voided' });
    }
    for (const txn of sales) {
      expect(await sandboxCalls(`${txn}:refund`)).toEqual([{ type: 'refund', chargeCalls: 1 }]);
      expect(await get(txn)).toMatchObject({ amount_refunded: 250 });
    }
    // The search index says what the ledger says: each transaction as the rows left it.
    for (const [i, txn] of auths.entries()) {
      const found = await searchOne(txn);
      expect(found).toMatchObject(i < EACH ? { status: 'pending_settlement', amount_captured: 1000 } : i < EACH * 2 ? { status: 'pending_settlement', amount_captured: 400 } : { status: 'voided' });
    }
    for (const txn of sales) expect(await searchOne(txn)).toMatchObject({ status: 'partially_refunded' });
  }

  async function searchOne(id: string): Promise<TxRecord | undefined> {
    const response = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { transaction_id: { operator: '=', value: id } } });
    expect(response.status).toBe(200);
    const { data } = await response.json<{ data: TxRecord[] }>();
    expect(data).toHaveLength(1);
    return data[0];
  }

  it('one after the other: each row acts once, its result line the first answer', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const { id, messages, auths, sales } = await chunkOfMany();
    expect((await deliver('binbatch-chunks', [messages[0]])).retryMessages).toEqual([]);
    const first = await (await env.FILES.get(resultPartKey(id, 0)))?.text();
    expect((await deliver('binbatch-chunks', [messages[0]], 2)).retryMessages).toEqual([]);
    const again = await (await env.FILES.get(resultPartKey(id, 0)))?.text();
    // The approved rows' lines are their first answers again (the refused filler's carry the time they were refused).
    expect(again?.split('\n').slice(0, MANY)).toEqual(first?.split('\n').slice(0, MANY));
    await expectActedOnce(id, messages[1], auths, sales);
  });

  it('twice at once: each row acts once', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const { id, messages, auths, sales } = await chunkOfMany();
    const both = await Promise.all([deliver('binbatch-chunks', [messages[0]]), deliver('binbatch-chunks', [messages[0]], 2)]);
    // A delivery that met the other's claims is tried again; then every row has its answer.
    if (both.some((d) => d.retryMessages.length > 0)) expect((await deliver('binbatch-chunks', [messages[0]], 3)).retryMessages).toEqual([]);
    await expectActedOnce(id, messages[1], auths, sales);
  });
});
