/**
 * A batch chunk's claims of captures, voids and refunds kept as one row while they are with their
 * processors (storage/ledger-shard/operation-blocks.ts): in flight exactly as claims in rows (another
 * operation on the transaction waits, settlement leaves them out, they count), each answer its own
 * row, a crashed holder's claims found abandoned and settled one by one, and the open blocks bounded.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { locateTransaction } from '../../src/services/transactions/engine';
import { sha256Hex } from '../../src/lib/crypto';
import { APPROVED_OPERATION } from '../helpers/ledger';
import {
  MAX_OPEN_OPERATION_BLOCKS,
  OPERATION_BLOCK_MIN_CLAIMS,
  OpenOperationBlocks,
  operationCountsOf,
  transactionsInFlight,
  type OperationCompletion,
  type OperationRequest,
} from '../../src/storage/ledger-shard';

const AUTHORIZE = { transaction_type: 'authorize', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 };
const LONG_AGO = '2000-01-01T00:00:00.000Z';

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Operation Blocks Shop' });
});

/** `n` authorizations by API (one API-day shard), and a capture claim request for each under `tag`. */
async function authorizations(n: number, tag: string) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: AUTHORIZE });
    expect(response.status).toBe(201);
    ids.push(String((await response.json<Envelope<{ id: string }>>()).data.id));
  }
  const now = new Date();
  const located = await Promise.all(ids.map((id) => locateTransaction(env, shop.id, id, now)));
  const first = located[0];
  if (!first?.ok) throw new Error('not found');
  const requestHash = await sha256Hex(JSON.stringify({ amount: null }));
  const requests: OperationRequest[] = located.map((l, i) => {
    if (!l.ok || l.shard.identity.name !== first.shard.identity.name) throw new Error('not in one shard');
    const id = ids[i] ?? '';
    return { transactionId: id, query: l.query, kind: 'capture', key: `${id}:capture:${tag}${i}`, requestHash, amount: null, now: now.toISOString(), expiredBefore: LONG_AGO, staleBefore: LONG_AGO };
  });
  const completion = (request: OperationRequest, i: number): OperationCompletion => ({
    key: request.key,
    query: request.query,
    result: APPROVED_OPERATION,
    now: new Date().toISOString(),
    expiredBefore: LONG_AGO,
    idempotencyKey: `${tag}${i}`,
    ipAddress: null,
    claimed: { transactionId: request.transactionId, kind: 'capture' },
  });
  return { ids, requests, completion, stub: first.shard.stub, identity: first.shard.identity };
}

/**
 * Where the operations under `keys` are: the `operations` rows holding them (with whether each is
 * answered), the blocks holding any of them (and how many of those have claims open), and their
 * block entries, open (7 values) and answered (8).
 */
async function stored(stub: DurableObjectStub, keys: readonly string[]) {
  return runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    const rows = sql
      .exec<{ key: string; answered: number }>('SELECT key, answer IS NOT NULL AS answered FROM operations WHERE key IN (SELECT value FROM json_each(?))', JSON.stringify(keys))
      .toArray();
    const wanted = new Set(keys);
    let blocks = 0;
    let openBlocks = 0;
    let open = 0;
    let answered = 0;
    for (const block of sql.exec<{ open: number; entries: string }>('SELECT open, entries FROM operation_blocks').toArray()) {
      const mine = (JSON.parse(block.entries) as unknown[][]).filter((entry) => wanted.has(String(entry[0])));
      if (mine.length === 0) continue;
      blocks += 1;
      if (block.open > 0) openBlocks += 1;
      open += mine.filter((entry) => entry.length === 7).length;
      answered += mine.filter((entry) => entry.length === 8).length;
    }
    return { rows, blocks, openBlocks, open, answered };
  });
}

describe("a chunk's claims of operations", () => {
  it('are one row while with their processors, in flight as claims in rows are; approved, their answers stay in it and a replay gets them', async () => {
    const { ids, requests, completion, stub, identity } = await authorizations(OPERATION_BLOCK_MIN_CLAIMS + 4, 'blk');
    const keys = requests.map((r) => r.key);
    const begun = await stub.beginOperations(identity, requests);
    if (!Array.isArray(begun)) throw new Error(begun.failed);
    expect(begun.map((b) => b.outcome)).toEqual(requests.map(() => 'claimed'));
    // One block of 20 entries, no row per claim.
    expect(await stored(stub, keys)).toEqual({ rows: [], blocks: 1, openBlocks: 1, open: requests.length, answered: 0 });

    // In flight: an API capture of one of them is told to ask again; a settlement run would leave
    // them out; each counts as an operation of its transaction.
    const racing = await call('POST', `/api/transaction/${ids[0]}/capture`, { key: shop.secretKey, body: {} });
    expect(racing.status).toBe(409);
    expect(racing.headers.get('Retry-After')).toBe('1');
    const inFlight = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      return { ids: [...transactionsInFlight(sql, ids)].sort(), counts: operationCountsOf(sql, ids.slice(0, 1)).get(ids[0] ?? '') };
    });
    expect(inFlight.ids).toEqual([...ids].sort());
    expect(inFlight.counts).toEqual({ operations: 1, refunds: 0 });
    // The same chunk sent again while it is held: in progress, nothing claimed twice.
    const again = await stub.beginOperations(identity, requests);
    if (!Array.isArray(again)) throw new Error(again.failed);
    expect(new Set(again.map((b) => b.outcome))).toEqual(new Set(['in_progress']));

    const answers = await stub.completeOperations(identity, requests.map(completion));
    if (!Array.isArray(answers)) throw new Error(answers.failed);
    // The answers are in the block, which has no claim open now; no row was written for any.
    expect(await stored(stub, keys)).toEqual({ rows: [], blocks: 1, openBlocks: 0, open: 0, answered: requests.length });
    // Each key answers its first answer, as a redelivered chunk gets it; the records read captured.
    const replayed = await stub.beginOperations(identity, requests);
    if (!Array.isArray(replayed)) throw new Error(replayed.failed);
    expect(new Set(replayed.map((b) => b.outcome))).toEqual(new Set(['answered']));
    const read = await call('GET', `/api/transaction/${ids[1]}`, { key: shop.secretKey });
    expect((await read.json<Envelope<{ status: string; amount_captured: number }>>()).data).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
    // No longer in flight: the API's capture of the same authorization meets its new state.
    expect((await call('POST', `/api/transaction/${ids[0]}/capture`, { key: shop.secretKey, body: {} })).status).toBe(409);
    const counted = await runInDurableObject(stub, (_instance, state) => operationCountsOf(state.storage.sql, ids.slice(0, 1)).get(ids[0] ?? ''));
    expect(counted).toEqual({ operations: 1, refunds: 0 });
    const replayAnswer = (begun: unknown) => JSON.parse((begun as { answer: string }).answer) as { status: number; record: { status: string } };
    expect(replayAnswer(replayed[0])).toMatchObject({ status: 200, record: { status: 'pending_settlement' } });

    // A second chunk on the same transactions (voids): each state names its capture's block already,
    // so these answers are rows; both kinds replay, and each transaction counts two operations.
    const voids = requests.map((r, i) => ({ ...r, kind: 'void' as const, key: `${r.transactionId}:void:blk${i}` }));
    const voidKeys = voids.map((v) => v.key);
    const claimedVoids = await stub.beginOperations(identity, voids);
    if (!Array.isArray(claimedVoids)) throw new Error(claimedVoids.failed);
    expect(new Set(claimedVoids.map((b) => b.outcome))).toEqual(new Set(['claimed']));
    const voided = await stub.completeOperations(identity, voids.map((v, i) => ({ ...completion(v, i), claimed: { transactionId: v.transactionId, kind: 'void' as const } })));
    if (!Array.isArray(voided)) throw new Error(voided.failed);
    const afterVoids = await stored(stub, voidKeys);
    expect(afterVoids.blocks).toBe(0);
    expect(afterVoids.rows.map((r) => [r.key, r.answered]).sort()).toEqual(voidKeys.map((k) => [k, 1]).sort());
    const both = await stub.beginOperations(identity, [...requests, ...voids]);
    if (!Array.isArray(both)) throw new Error(both.failed);
    expect(new Set(both.map((b) => b.outcome))).toEqual(new Set(['answered']));
    expect(replayAnswer(both[0])).toMatchObject({ status: 200, record: { status: 'pending_settlement' } });
    expect(replayAnswer(both[requests.length])).toMatchObject({ status: 200, record: { status: 'voided' } });
    const twice = await runInDurableObject(stub, (_instance, state) => operationCountsOf(state.storage.sql, ids.slice(0, 1)).get(ids[0] ?? ''));
    expect(twice).toEqual({ operations: 2, refunds: 0 });
  });

  it('left by a crashed holder are found abandoned, each settled or released on its own', async () => {
    const { requests, completion, stub, identity } = await authorizations(OPERATION_BLOCK_MIN_CLAIMS, 'crash');
    const keys = requests.map((r) => r.key);
    const begun = await stub.beginOperations(identity, requests);
    if (!Array.isArray(begun)) throw new Error(begun.failed);
    // The holder crashed; its chunk comes back after the claim timeout.
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const retried = await stub.beginOperations(identity, requests.map((r) => ({ ...r, staleBefore: later })));
    if (!Array.isArray(retried)) throw new Error(retried.failed);
    expect(new Set(retried.map((b) => b.outcome))).toEqual(new Set(['abandoned']));
    // A step that dropped claims and then failed (rolled back) leaves them held, whatever this
    // object remembers of the block it rewrote (one claim dropped: rewritten; all: deleted).
    const kept = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      return [keys.slice(0, 1), keys].map((drop) => {
        expect(() =>
          state.storage.transactionSync(() => {
            const open = OpenOperationBlocks.read(sql);
            for (const key of drop) open.drop(key);
            open.flush();
            throw new Error('a later write failed');
          }),
        ).toThrow('a later write failed');
        const open = OpenOperationBlocks.read(sql);
        return keys.filter((key) => open.operation(key) !== null).length;
      });
    });
    expect(kept).toEqual([keys.length, keys.length]);
    // Half never reached the processor: released, one at a time; the other half did: answered one at a time.
    const half = requests.length / 2;
    for (const request of requests.slice(0, half)) expect(await stub.releaseOperation(identity, request.key)).toBe(true);
    expect(await stored(stub, keys)).toEqual({ rows: [], blocks: 1, openBlocks: 1, open: half, answered: 0 });
    for (const [i, request] of requests.entries()) {
      if (i < half) continue;
      const done = await stub.completeOperation(identity, completion(request, i));
      if ('failed' in done) throw new Error(done.failed);
    }
    expect(await stored(stub, keys)).toEqual({ rows: [], blocks: 1, openBlocks: 0, open: 0, answered: half });
    // A released claim's key may be sent again (claimed anew); it stayed counted.
    const [released] = requests;
    if (!released) throw new Error('no request');
    const [reclaimed] = (await stub.beginOperations(identity, [released])) as { outcome: string }[];
    expect(reclaimed?.outcome).toBe('claimed');
    const counted = await runInDurableObject(stub, (_instance, state) => operationCountsOf(state.storage.sql, [released.transactionId]).get(released.transactionId));
    expect(counted).toMatchObject({ operations: 2, refunds: 0 });
  });

  it('of voids of captured transactions keep them out of a settlement run that goes by; answered, they read voided', async () => {
    const { ids, requests, completion, stub, identity } = await authorizations(OPERATION_BLOCK_MIN_CLAIMS, 'held');
    for (const id of ids) expect((await call('POST', `/api/transaction/${id}/capture`, { key: shop.secretKey, body: {} })).status).toBe(200);
    const voids = requests.map((r, i) => ({ ...r, kind: 'void' as const, key: `${r.transactionId}:void:held${i}` }));
    const begun = await stub.beginOperations(identity, voids);
    if (!Array.isArray(begun)) throw new Error(begun.failed);
    expect(new Set(begun.map((b) => b.outcome))).toEqual(new Set(['claimed']));
    expect(await stored(stub, voids.map((v) => v.key))).toMatchObject({ rows: [], openBlocks: 1, open: voids.length });
    // A run while the voids are with their processor: it settles none of them.
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const status = async (id: string) => (await (await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).json<Envelope<{ status: string }>>()).data.status;
    for (const id of ids) expect(await status(id)).toBe('pending_settlement');
    const answers = await stub.completeOperations(identity, voids.map((v, i) => ({ ...completion(v, i), claimed: { transactionId: v.transactionId, kind: 'void' as const } })));
    if (!Array.isArray(answers)) throw new Error(answers.failed);
    for (const id of ids) expect(await status(id)).toBe('voided');
    expect(await stored(stub, voids.map((v) => v.key))).toMatchObject({ rows: [], openBlocks: 0, answered: voids.length });
  });

  it('are rows once the shard holds its bound of open blocks, so what a call reads of them stays bounded', async () => {
    const { requests, stub, identity } = await authorizations(OPERATION_BLOCK_MIN_CLAIMS, 'full');
    // Blocks left open (of transactions elsewhere), up to the bound.
    await runInDurableObject(stub, (_instance, state) => {
      for (let i = 0; i < MAX_OPEN_OPERATION_BLOCKS; i++) {
        state.storage.sql.exec(
          'INSERT INTO operation_blocks (token, open, entries) VALUES (?, 1, ?)',
          `t${i}`,
          JSON.stringify([[`txn_elsewhere${i}:void:k`, `txn_elsewhere${i}`, 'void', 'h', 0, null, LONG_AGO]]),
        );
      }
    });
    const begun = await stub.beginOperations(identity, requests);
    if (!Array.isArray(begun)) throw new Error(begun.failed);
    expect(new Set(begun.map((b) => b.outcome))).toEqual(new Set(['claimed']));
    const held = await stored(stub, requests.map((r) => r.key));
    expect(held.blocks).toBe(0);
    expect(held.rows).toHaveLength(requests.length);
    const open = await runInDurableObject(stub, (_instance, state) => OpenOperationBlocks.read(state.storage.sql).count);
    expect(open).toBe(MAX_OPEN_OPERATION_BLOCKS);
    await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec("DELETE FROM operation_blocks WHERE entries LIKE '%txn_elsewhere%'"));
  });
});
