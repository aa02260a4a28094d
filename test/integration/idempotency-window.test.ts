/**
 * request_hash, the fingerprint that tells a retry from a different request under one key: it
 * leaves the CVC out (PCI DSS: no sensitive authentication data after authorisation, hashed or
 * not), and it lives only for the 24-hour idempotency window. After the window an API key may be
 * used again, and the daily cron clears every fingerprint past it; the transaction records stay.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { requestFingerprint } from '../../src/lib/request-hash';
import type { TransactionContext, TransactionInput, TransactionOutcome } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/transactions/engine';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { ledger, ledgerAuthCode } from '../helpers/claims';
import { runDailyCron } from '../helpers/cron';

const HOUR = 3_600_000;
const T0 = new Date('2026-11-21T12:00:00.000Z');
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

async function storedRow(id: string) {
  return env.DB.prepare('SELECT idempotency_key, request_hash FROM transactions WHERE id = ?1').bind(id).first<{ idempotency_key: string; request_hash: string }>();
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
    // The processor was asked for the new charge under the key, not answered its old one.
    expect((await ledger(merchant.id, 'window-1')).get('window-1')).toMatchObject({ amount: 2000, chargeCalls: 1 });
    expect(ledgerAuthCode((await ledger(merchant.id, 'window-1')).get('window-1'))).toBe((reused as { record: { auth_code: string } }).record.auth_code);

    // The first transaction is still there, showing the key it was made with; its fingerprint is gone.
    const read = await call('GET', `/api/transaction/${first}`, { key: merchant.secretKey });
    expect((await read.json<{ data: { idempotency_key: string; amount: number } }>()).data).toMatchObject({ idempotency_key: 'window-1', amount: 1000 });
    expect((await storedRow(first))?.request_hash).toBe('');
  });

  it('the daily cron clears every fingerprint past the window and frees API keys, keeps the records, and can run twice', async () => {
    const api = idOf(await one(SALE, 'cron-api', at(0)));
    const batchContext: TransactionContext = { source: 'batch', ipAddress: null, batchId: 'bat_crontest' };
    const row = idOf(await one(SALE, 'bat_crontest:2', at(0), batchContext));
    const fresh = idOf(await one(SALE, 'cron-fresh', at(20 * HOUR)));

    await runDailyCron(new Date(T0.getTime() + 25 * HOUR));
    expect(await storedRow(api)).toEqual({ idempotency_key: `cron-api#expired:${api}`, request_hash: '' });
    expect(await storedRow(row)).toEqual({ idempotency_key: 'bat_crontest:2', request_hash: '' });
    expect((await storedRow(fresh))?.request_hash).toMatch(/^[0-9a-f]{64}$/);
    const before = await env.DB.prepare('SELECT id, idempotency_key, request_hash FROM transactions ORDER BY id').all();
    await runDailyCron(new Date(T0.getTime() + 25 * HOUR));
    expect((await env.DB.prepare('SELECT id, idempotency_key, request_hash FROM transactions ORDER BY id').all()).results).toEqual(before.results);

    // Records are kept and read as before.
    const read = await call('GET', `/api/transaction/${api}`, { key: merchant.secretKey });
    expect((await read.json<{ data: { idempotency_key: string } }>()).data.idempotency_key).toBe('cron-api');
    // A batch row's key still names its line: a late redelivery replays it instead of charging again.
    expect(await one(SALE, 'bat_crontest:2', at(25 * HOUR), batchContext)).toMatchObject({ ok: true, replayed: true, record: { id: row } });
    // The API key is free for a new request.
    expect(await one({ ...SALE, amount: '3000' }, 'cron-api', at(25 * HOUR))).toMatchObject({ ok: true, replayed: false, record: { amount: 3000 } });
  });
});
