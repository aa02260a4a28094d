/**
 * POST /api/transaction/{id}/capture | void | refund through the Worker's fetch handler: the states
 * they allow, their amounts, their Idempotency-Key, one operation at a time per transaction.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { apiShardName } from '../helpers/ledger';
import { LEDGER_SCHEMA_VERSION } from '../../src/storage/ledger-shard';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

type TxRecord = Record<string, string | number | boolean | null>;

const VISA = '4111111111111111';
const AUTHORIZE = { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: 1000 };
const SALE = { ...AUTHORIZE, transaction_type: 'sale' };

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Lifecycle Shop' });
  other = await createMerchant({ name: 'Lifecycle Other' });
});

async function create(body: unknown): Promise<TxRecord> {
  const response = await call('POST', '/api/transaction', { key: shop.secretKey, body });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<TxRecord>>()).data;
}

function operate(id: string, kind: 'capture' | 'void' | 'refund', body?: unknown, options: { key?: string; idempotencyKey?: string } = {}) {
  const headers: Record<string, string> = {};
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  return call('POST', `/api/transaction/${id}/${kind}`, { key: options.key ?? shop.secretKey, body, headers });
}

async function get(id: string): Promise<TxRecord> {
  const response = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function settleNow(merchant: TestMerchant = shop): Promise<Record<string, unknown>[]> {
  const response = await admin('POST', `/admin/merchants/${merchant.id}/settle`);
  expect(response.status).toBe(200);
  return (await response.json<Envelope<Record<string, unknown>[]>>()).data;
}

/** The sandbox's memory of a key: how often it was asked to act under it. */
async function sandboxCalls(merchant: TestMerchant, keyPart: string): Promise<{ type: string; chargeCalls: number }[]> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(merchant.id), utcDay(new Date())));
  return (await acquirer.list()).filter((row) => row.idempotencyKey.includes(keyPart)).map((row) => ({ type: row.type, chargeCalls: row.chargeCalls }));
}

describe('capture', () => {
  it('captures all of an authorization by default: 200, pending_settlement, amount_captured and captured_at; GET agrees', async () => {
    const auth = await create(AUTHORIZE);
    expect(auth.status).toBe('authorized');
    const response = await operate(String(auth.id), 'capture');
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<TxRecord>>();
    expect(data).toMatchObject({ id: auth.id, status: 'pending_settlement', amount_authorized: 1000, amount_captured: 1000, amount_refunded: 0 });
    expect(typeof data.captured_at).toBe('string');
    // GET adds the email receipts (none asked for here).
    expect(await get(String(auth.id))).toEqual({ ...data, receipts: [] });
  });

  it('captures part of it: the rest is released (amount_captured below amount_authorized)', async () => {
    const auth = await create(AUTHORIZE);
    const response = await operate(String(auth.id), 'capture', { amount: 600 });
    expect(response.status).toBe(200);
    expect((await response.json<Envelope<TxRecord>>()).data).toMatchObject({ status: 'pending_settlement', amount_authorized: 1000, amount_captured: 600 });
  });

  it('refuses more than authorized with a 400 naming the limit, and changes nothing', async () => {
    const auth = await create(AUTHORIZE);
    const response = await operate(String(auth.id), 'capture', { amount: 1001 });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toContain('at most 1000');
    expect((await get(String(auth.id))).status).toBe('authorized');
  });

  it('refuses a wrong state with a 409 naming the status and what capture allows: a sale, a captured authorization', async () => {
    const sale = await create(SALE);
    const refused = await operate(String(sale.id), 'capture');
    expect(refused.status).toBe(409);
    expect((await refused.json<Envelope>()).msg).toBe('transaction is pending_settlement: capture is allowed only while authorized');
    const auth = await create(AUTHORIZE);
    expect((await operate(String(auth.id), 'capture')).status).toBe(200);
    const again = await operate(String(auth.id), 'capture');
    expect(again.status).toBe(409);
    expect((await again.json<Envelope>()).msg).toContain('pending_settlement');
  });

  it('refuses an unknown body field and a non-integer amount (400)', async () => {
    const auth = await create(AUTHORIZE);
    expect((await operate(String(auth.id), 'capture', { amount: 10, tip: 5 })).status).toBe(400);
    expect((await operate(String(auth.id), 'capture', { amount: 10.5 })).status).toBe(400);
    expect((await get(String(auth.id))).status).toBe('authorized');
  });

  it('20 concurrent captures of one authorization: one capture, the others 409, the processor asked once', async () => {
    const auth = await create(AUTHORIZE);
    const answers = await Promise.all(Array.from({ length: 20 }, () => operate(String(auth.id), 'capture')));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    const captures = (await sandboxCalls(shop, `${String(auth.id)}:capture`)).filter((row) => row.type === 'capture');
    expect(captures).toHaveLength(1);
    expect((await get(String(auth.id))).amount_captured).toBe(1000);
  });

  it('is declined by the sandbox on 303: 402, and the authorization stays as it was', async () => {
    const auth = await create({ ...AUTHORIZE, amount: 303 });
    const response = await operate(String(auth.id), 'capture');
    expect(response.status).toBe(402);
    expect((await response.json<Envelope>()).msg).toContain('CAPTURE DECLINED');
    expect((await get(String(auth.id))).status).toBe('authorized');
  });
});

describe('void', () => {
  it('voids an authorization and a sale before settlement (200, voided); then nothing else is allowed', async () => {
    const auth = await create(AUTHORIZE);
    const voided = await operate(String(auth.id), 'void');
    expect(voided.status).toBe(200);
    expect((await voided.json<Envelope<TxRecord>>()).data.status).toBe('voided');
    const capture = await operate(String(auth.id), 'capture');
    expect(capture.status).toBe(409);
    expect((await capture.json<Envelope>()).msg).toBe('transaction is voided: capture is allowed only while authorized');
    const sale = await create(SALE);
    expect((await operate(String(sale.id), 'void', {})).status).toBe(200);
    expect((await get(String(sale.id))).status).toBe('voided');
    const again = await operate(String(sale.id), 'void');
    expect(again.status).toBe(409);
    expect((await again.json<Envelope>()).msg).toBe('transaction is voided: void is allowed only while authorized or pending_settlement');
  });

  it('a voided sale never settles', async () => {
    const merchant = await createMerchant({ name: 'Void Settle Shop' });
    const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: SALE });
    const sale = (await response.json<Envelope<TxRecord>>()).data;
    expect((await call('POST', `/api/transaction/${String(sale.id)}/void`, { key: merchant.secretKey })).status).toBe(200);
    expect(await settleNow(merchant)).toEqual([]);
    const after = await call('GET', `/api/transaction/${String(sale.id)}`, { key: merchant.secretKey });
    expect((await after.json<Envelope<TxRecord>>()).data).toMatchObject({ status: 'voided', settlement_batch_id: null, settled_at: null });
  });

  it('refuses a settled transaction (409)', async () => {
    const merchant = await createMerchant({ name: 'Void Settled Shop' });
    const sale = (await (await call('POST', '/api/transaction', { key: merchant.secretKey, body: SALE })).json<Envelope<TxRecord>>()).data;
    await settleNow(merchant);
    const response = await call('POST', `/api/transaction/${String(sale.id)}/void`, { key: merchant.secretKey });
    expect(response.status).toBe(409);
    expect((await response.json<Envelope>()).msg).toBe('transaction is settled: void is allowed only while authorized or pending_settlement');
  });
});

describe('refund', () => {
  it('only once settled (409 before); then partial refunds while their sum ≤ amount_settled; more than left is a 400', async () => {
    const sale = await create(SALE);
    const early = await operate(String(sale.id), 'refund');
    expect(early.status).toBe(409);
    expect((await early.json<Envelope>()).msg).toBe('transaction is pending_settlement: refund is allowed only once settled (settled or partially_refunded)');

    await settleNow();
    const settled = await get(String(sale.id));
    expect(settled).toMatchObject({ status: 'settled', amount_settled: 1000 });
    expect(String(settled.settlement_batch_id)).toMatch(/^stl_[0-9]{8}_/);

    const half = await operate(String(sale.id), 'refund', { amount: 500 });
    expect(half.status).toBe(201);
    const refund = (await half.json<Envelope<TxRecord>>()).data;
    expect(refund).toMatchObject({ type: 'refund', amount: 500, referenced_transaction_id: sale.id, status: 'pending_settlement', response: 'approved' });
    expect(refund.id).not.toBe(sale.id);
    expect(await get(String(refund.id))).toEqual({ ...refund, receipts: [] });
    expect(await get(String(sale.id))).toMatchObject({ status: 'partially_refunded', amount_refunded: 500, amount_settled: 1000 });

    const tooMuch = await operate(String(sale.id), 'refund', { amount: 501 });
    expect(tooMuch.status).toBe(400);
    expect((await tooMuch.json<Envelope>()).msg).toBe('amount must be at most 500, what is left to refund of amount_settled 1000');

    const rest = await operate(String(sale.id), 'refund');
    expect(rest.status).toBe(201);
    expect((await rest.json<Envelope<TxRecord>>()).data.amount).toBe(500);
    expect(await get(String(sale.id))).toMatchObject({ status: 'refunded', amount_refunded: 1000 });
    const after = await operate(String(sale.id), 'refund', { amount: 1 });
    expect(after.status).toBe(409);
    expect((await after.json<Envelope>()).msg).toContain('transaction is refunded');
  });

  it('refunds a settled capture up to what was captured; a refund itself cannot be refunded or voided', async () => {
    const auth = await create(AUTHORIZE);
    await operate(String(auth.id), 'capture', { amount: 700 });
    await settleNow();
    expect(await get(String(auth.id))).toMatchObject({ status: 'settled', amount_settled: 700 });
    const over = await operate(String(auth.id), 'refund', { amount: 701 });
    expect(over.status).toBe(400);
    expect((await over.json<Envelope>()).msg).toContain('at most 700');
    const refund = (await (await operate(String(auth.id), 'refund', { amount: 200 })).json<Envelope<TxRecord>>()).data;
    expect((await operate(String(refund.id), 'refund')).status).toBe(409);
    expect((await operate(String(refund.id), 'void')).status).toBe(409);
  });

  it('a credit cannot be refunded (409)', async () => {
    const credit = await create({ ...SALE, transaction_type: 'credit', amount: 100 });
    await settleNow();
    const response = await operate(String(credit.id), 'refund');
    expect(response.status).toBe(409);
    expect((await response.json<Envelope>()).msg).toContain('refund is allowed only for a settled sale or capture');
  });

  it('a declined refund (303) is a 201 with response declined; the original is unchanged', async () => {
    const sale = await create(SALE);
    await settleNow();
    const response = await operate(String(sale.id), 'refund', { amount: 303 });
    expect(response.status).toBe(201);
    expect((await response.json<Envelope<TxRecord>>()).data).toMatchObject({ type: 'refund', response: 'declined', status: 'declined' });
    expect(await get(String(sale.id))).toMatchObject({ status: 'settled', amount_refunded: 0 });
  });
});

describe('Idempotency-Key on each operation', () => {
  for (const kind of ['capture', 'void', 'refund'] as const) {
    it(`${kind}: the same key and body answer the first answer (Idempotent-Replayed), no second processor call; another body is a 409`, async () => {
      const original = kind === 'refund' ? await create(SALE) : await create(AUTHORIZE);
      if (kind === 'refund') await settleNow();
      const body = kind === 'void' ? undefined : { amount: 400 };
      const key = `key-${kind}-${crypto.randomUUID()}`;
      const first = await operate(String(original.id), kind, body, { idempotencyKey: key });
      expect(first.status).toBe(kind === 'refund' ? 201 : 200);
      const firstBody = await first.json<Envelope<TxRecord>>();
      const second = await operate(String(original.id), kind, body, { idempotencyKey: key });
      // A replay is 200 on every route, as POST /api/transaction answers (issue 30, item 7; a refund's was 201).
      expect(second.status).toBe(200);
      expect(second.headers.get('Idempotent-Replayed')).toBe('true');
      expect(await second.json()).toEqual(firstBody);
      const calls = (await sandboxCalls(shop, key)).filter((row) => row.type === kind);
      expect(calls).toEqual([{ type: kind, chargeCalls: 1 }]);
      if (kind !== 'void') {
        const conflict = await operate(String(original.id), kind, { amount: 300 }, { idempotencyKey: key });
        expect(conflict.status).toBe(409);
        expect((await conflict.json<Envelope>()).msg).toContain('Idempotency-Key');
      }
    });
  }
});

describe('who may act on a transaction', () => {
  it("another merchant's transaction is a 404 for every operation, and is left as it was", async () => {
    const auth = await create(AUTHORIZE);
    for (const kind of ['capture', 'void', 'refund'] as const) {
      const response = await operate(String(auth.id), kind, undefined, { key: other.secretKey });
      expect(response.status).toBe(404);
    }
    expect((await get(String(auth.id))).status).toBe('authorized');
  });

  it('a malformed id is a 400; an unknown one a 404; the public key a 401', async () => {
    expect((await operate('not-an-id', 'capture')).status).toBe(400);
    expect((await operate('txn_a20261125aaaaaaaaaaaaaaaaaaaa', 'capture')).status).toBe(404);
    const auth = await create(AUTHORIZE);
    expect((await operate(String(auth.id), 'capture', undefined, { key: shop.publicKey })).status).toBe(401);
  });
});

describe('a shard written by the version before the lifecycle', () => {
  it('gets the lifecycle tables on its next call; its authorization is captured', async () => {
    const auth = await create(AUTHORIZE);
    const stub = env.LEDGER_SHARD.getByName(apiShardName(shop.id));
    // Back to schema version 1 (no states, operations, page settlement columns).
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec('DROP TABLE states; DROP TABLE operations; DROP INDEX pages_unsettled; DROP TABLE handoff');
      for (const column of ['at', 'unsettled', 'settled_on', 'settled_at']) sql.exec(`ALTER TABLE pages DROP COLUMN ${column}`);
      for (const column of ['indexed', 'index_generation', 'handoff_seq', 'settle_cursor', 'retention_cursor']) sql.exec(`ALTER TABLE meta DROP COLUMN ${column}`);
      sql.exec('UPDATE meta SET schema_version = 1');
    });
    const response = await operate(String(auth.id), 'capture', { amount: 100 });
    expect(response.status).toBe(200);
    expect((await response.json<Envelope<TxRecord>>()).data).toMatchObject({ status: 'pending_settlement', amount_captured: 100 });
    const version = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec<{ v: number }>('SELECT schema_version AS v FROM meta').one().v);
    expect(version).toBe(LEDGER_SCHEMA_VERSION);
    // The capture registered the shard in the merchant's settlement index.
    expect(await settlementObject(env, shop.id).indexedShards()).toContain(apiShardName(shop.id));
  });
});
