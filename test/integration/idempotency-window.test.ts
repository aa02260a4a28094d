/**
 * request_hash, the fingerprint that tells a retry from a different request under one key: it
 * leaves the CVC out (PCI DSS: no sensitive authentication data after authorisation, hashed or
 * not), and it lives only for the 24-hour idempotency window. After the window an API key may be
 * used again, and the day's ledger shard drops its fingerprints once the window of its last
 * transaction is over (its own alarm, no sweep); the transaction records stay.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { requestFingerprint } from '../../src/lib/request-hash';
import type { TransactionContext, TransactionInput, TransactionOutcome } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/recorded';
import { randomId } from '../../src/lib/crypto';
import { parseTransactionId } from '../../src/services/transactions/ledger';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { ledgerAuthCode, ledgerOfDay } from '../helpers/claims';
import { apiShardName, batchShardName, shardEntryList } from '../helpers/ledger';

const HOUR = 3_600_000;
// Noon, three days from now: the day shards these tests make have their retention alarms in the
// future, so the real alarm never runs during a test (it would, at once, for a day already past).
const T0 = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 3 * 86_400_000 + 12 * 3_600_000);
const day = (offset: number) => new Date(T0.getTime() + offset * 86_400_000).toISOString().slice(0, 10);
const at = (ms: number) => () => new Date(T0.getTime() + ms);
const SALE: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };
const API: TransactionContext = { source: 'api', ipAddress: null };

let merchant: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  merchant = await createMerchant({ name: 'Window Shop' });
  const found = await authenticateKey(env, merchant.secretKey);
  if (!found) throw new Error('no caller');
  caller = found;
});

async function one(input: TransactionInput, key: string, clock: () => Date, context: TransactionContext = API): Promise<TransactionOutcome> {
  const [outcome] = await processTransactions(env, caller, [{ input, idempotencyKey: key }], context, clock);
  if (!outcome) throw new Error('no outcome');
  return outcome;
}

function idOf(outcome: TransactionOutcome): string {
  if (!outcome.ok) throw new Error(`not recorded: ${JSON.stringify(outcome)}`);
  return String(outcome.record.id);
}

/** A transaction's key and fingerprint as its ledger shard keeps them (the id names the shard). */
async function storedRow(id: string, batchId?: string) {
  const parsed = parseTransactionId(id);
  if (!parsed || parsed.kind === 'refund') throw new Error(`malformed id ${id}`);
  const name = parsed.kind === 'api' ? apiShardName(merchant.id, parsed.day) : batchShardName(merchant.id, batchId ?? parsed.batchId);
  const stored = (await shardEntryList(name)).find((s) => s.record.id === id);
  return stored ? { idempotency_key: String(stored.record.idempotency_key), request_hash: stored.requestHash } : null;
}

function dayShard(day: string) {
  return env.LEDGER_SHARD.getByName(apiShardName(merchant.id, day));
}

describe('request_hash leaves the CVC out', () => {
  it('a retry that differs only in its CVC is the same request: 200 with the original, nothing charged again', async () => {
    const body = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1250 };
    const headers = { 'Idempotency-Key': 'cvc-retry-1' };
    const first = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { ...body, cc_cvc: '123' }, headers });
    expect(first.status).toBe(201);
    const again = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { ...body, cc_cvc: '987' }, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    const [a, b] = [await first.json<{ data: { id: string } }>(), await again.json<{ data: { id: string } }>()];
    expect(b.data.id).toBe(a.data.id);
  });

  it('the stored fingerprint is the one of the request without its CVC', async () => {
    const outcome = await one({ ...SALE, cc_cvc: '456' }, 'cvc-stored-1', at(0));
    const row = await storedRow(idOf(outcome));
    expect(row?.request_hash).toBe(await requestFingerprint(env.CARD_DATA_KEY, SALE));
    expect(await requestFingerprint(env.CARD_DATA_KEY, { ...SALE, cc_cvc: '111' })).toBe(row?.request_hash);
  });
});

describe('the 24-hour idempotency window', () => {
  it('within 24 h a key answers its transaction or a conflict; after, it takes a new request; the old record keeps its key', async () => {
    const original = await one(SALE, 'window-1', at(0));
    const first = idOf(original);
    expect(await one({ ...SALE, amount: '2000' }, 'window-1', at(24 * HOUR - 1))).toMatchObject({ ok: false, reason: 'idempotency_conflict' });
    expect(await one(SALE, 'window-1', at(24 * HOUR - 1))).toMatchObject({ ok: true, replayed: true, record: { id: first } });

    const reused = await one({ ...SALE, amount: '2000' }, 'window-1', at(24 * HOUR + 1));
    expect(reused).toMatchObject({ ok: true, replayed: false, record: { amount: 2000, idempotency_key: 'window-1' } });
    const second = idOf(reused);
    expect(second).not.toBe(first);
    expect(await one({ ...SALE, amount: '2000' }, 'window-1', at(24 * HOUR + 2))).toMatchObject({ ok: true, replayed: true, record: { id: second } });
    // The processor was asked for the new charge under the key (in the new day's memory), not answered its old one.
    const newCharge = (await ledgerOfDay(merchant.id, day(1))).find((e) => e.idempotencyKey === 'window-1');
    expect(newCharge).toMatchObject({ amount: 2000, chargeCalls: 1 });
    expect(ledgerAuthCode(newCharge)).toBe((reused as { record: { auth_code: string } }).record.auth_code);
    expect((await ledgerOfDay(merchant.id, day(0))).find((e) => e.idempotencyKey === 'window-1')).toMatchObject({ amount: 1000, chargeCalls: 1 });

    // The first transaction is still there, showing the key it was made with.
    const read = await call('GET', `/api/transaction/${first}`, { key: merchant.secretKey });
    expect((await read.json<{ data: { idempotency_key: string; amount: number } }>()).data).toMatchObject({ idempotency_key: 'window-1', amount: 1000 });
  });

  it("a day shard drops its fingerprints once its last window is over, keeps the records and can do it twice; batch rows keep none", async () => {
    const api = idOf(await one(SALE, 'cron-api', at(0)));
    const batchId = randomId(20, 'bat_');
    const batchContext: TransactionContext = { source: 'batch', ipAddress: null, batchId, chunkFirstLine: 2 };
    const row = idOf(await one(SALE, `${batchId}:2`, at(0), batchContext));
    const fresh = idOf(await one(SALE, 'cron-fresh', at(20 * HOUR)));
    expect(await storedRow(row, batchId)).toEqual({ idempotency_key: `${batchId}:2`, request_hash: '' });
    expect((await storedRow(api))?.request_hash).toMatch(/^[0-9a-f]{64}$/);

    // The first day's last transaction can be made at 23:59:59.999; its window ends 24 hours later.
    expect(await dayShard(day(0)).runRetention(`${day(1)}T23:59:59.999Z`)).toMatchObject({ hashesCleared: 0, archived: false });
    expect((await storedRow(api))?.request_hash).toMatch(/^[0-9a-f]{64}$/);
    const hashed = (await shardEntryList(apiShardName(merchant.id, day(0)))).filter((s) => s.requestHash !== '').length;
    expect(hashed).toBeGreaterThan(0);
    expect(await dayShard(day(0)).runRetention(`${day(2)}T00:00:00.000Z`)).toMatchObject({ hashesCleared: hashed, archived: false });
    expect(await storedRow(api)).toEqual({ idempotency_key: 'cron-api', request_hash: '' });
    expect((await shardEntryList(apiShardName(merchant.id, day(0)))).every((s) => s.requestHash === '')).toBe(true);
    // The next day's shard keeps its own until its own window ends.
    expect((await storedRow(fresh))?.request_hash).toMatch(/^[0-9a-f]{64}$/);
    const before = await shardEntryList(apiShardName(merchant.id, day(0)));
    expect(await dayShard(day(0)).runRetention(`${day(2)}T00:00:00.000Z`)).toMatchObject({ hashesCleared: 0 });
    expect(await shardEntryList(apiShardName(merchant.id, day(0)))).toEqual(before);

    // Records are kept and read as before.
    const read = await call('GET', `/api/transaction/${api}`, { key: merchant.secretKey });
    expect((await read.json<{ data: { idempotency_key: string } }>()).data.idempotency_key).toBe('cron-api');
    // A batch row's key still names its line: a late redelivery replays it instead of charging again.
    expect(await one(SALE, `${batchId}:2`, at(25 * HOUR), batchContext)).toMatchObject({ ok: true, replayed: true, record: { id: row } });
    // The API key is free for a new request.
    expect(await one({ ...SALE, amount: '3000' }, 'cron-api', at(25 * HOUR))).toMatchObject({ ok: true, replayed: false, record: { amount: 3000 } });
  });
});
