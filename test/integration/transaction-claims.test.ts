/**
 * Claim before charge through POST /api/transaction: however many requests carry one
 * Idempotency-Key, at once or after a crash, the processor is asked once. Counted in the sandbox
 * processor's own memory (what it was asked under each key), faults injected into the real storage
 * (the merchant's ledger shard, the sandbox acquirer's SQLite).
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../src/env';
import type { TransactionInput } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/recorded';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { clockAt, ledger, ledgerAuthCode } from '../helpers/claims';
import { apiShardName, failSandboxCharges, failShardWrites, shardEntries } from '../helpers/ledger';
import { apiTransactionId, utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

type TxRecord = Record<string, string | number | boolean | null>;

const SALE: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };
const TWO_MINUTES = 120_000;

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Claim Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('setup: unknown key');
  caller = found;
});
beforeEach(() => {
  // Failed attempts are logged on purpose here.
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
});

function post(idempotencyKey: string, body: unknown = SALE): Promise<Response> {
  return call('POST', '/api/transaction', { key: shop.secretKey, body, headers: { 'Idempotency-Key': idempotencyKey } });
}

/** An engine call for one request that dies: at `offsetMs` from now, through the API's door. */
function attempt(idempotencyKey: string, offsetMs: number, input: TransactionInput = SALE) {
  return processTransactions(env, caller, [{ input, idempotencyKey }], { source: 'api', ipAddress: null }, clockAt(offsetMs));
}

/** The attempt is charged by the processor, then its ledger shard refuses to write the answer (as a crash right after the charge). */
async function chargedThenCrashed(idempotencyKey: string, offsetMs: number): Promise<void> {
  const day = utcDay(clockAt(offsetMs)());
  const id = await apiTransactionId(shop.id, idempotencyKey, day);
  const heal = await failShardWrites(apiShardName(shop.id, day), 'INSERT', 'pages', `NEW.page = '${id}'`);
  try {
    await expect(attempt(idempotencyKey, offsetMs)).rejects.toThrow(/injected storage fault/);
  } finally {
    await heal();
  }
}

/** The key's record or claim in the merchant's day shards (today's, and yesterday's for attempts dated back). */
async function claimRows(idempotencyKey: string): Promise<{ status: string; n: number }[]> {
  const days = [utcDay(clockAt(-TWO_MINUTES)()), utcDay(new Date())];
  const found = [];
  for (const day of new Set(days)) {
    const stored = (await shardEntries(apiShardName(shop.id, day))).get(idempotencyKey);
    if (stored) found.push({ status: String(stored.record.status), n: 1 });
  }
  return found;
}

describe('one Idempotency-Key, one processor call', () => {
  it('20 concurrent requests with one key: the processor is asked once; the others wait (409) or replay (200)', async () => {
    // One request first, so the key's authentication is cached and the 20 reach the engine together.
    expect((await post('warm-up')).status).toBe(201);
    const responses = await Promise.all(Array.from({ length: 20 }, () => post('concurrent-1')));
    const bodies = await Promise.all(responses.map((r) => r.json<Envelope<TxRecord>>()));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.every((s) => s === 201 || s === 200 || s === 409)).toBe(true);
    const created = bodies[statuses.indexOf(201)]?.data;
    responses.forEach((response, i) => {
      if (response.status === 200) expect(bodies[i]?.data).toEqual(created);
      if (response.status === 409) {
        expect(response.headers.get('Retry-After')).toBe('1');
        expect(bodies[i]).toEqual({
          status: 'failed',
          msg: 'Idempotency-Key: is in use by a request that is still being processed; retry later',
          data: null,
          errors: [{ field: 'Idempotency-Key', msg: 'is in use by a request that is still being processed; retry later' }],
        });
      }
    });
    const entry = (await ledger(shop.id, 'concurrent-1')).get('concurrent-1');
    expect(entry).toMatchObject({ chargeCalls: 1, lookupCalls: 0, amount: 1000, type: 'sale' });
    expect(ledgerAuthCode(entry)).toBe(created?.auth_code);
    expect(await claimRows('concurrent-1')).toEqual([{ status: 'pending_settlement', n: 1 }]);

    // Afterwards every retry replays it.
    const later = await post('concurrent-1');
    expect(later.status).toBe(200);
    expect((await ledger(shop.id, 'concurrent-1')).get('concurrent-1')?.chargeCalls).toBe(1);
  });

  it('20 engine calls with one key at the same instant: one claim wins and charges; the others never reach the processor', async () => {
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const outcomes = (await Promise.all(Array.from({ length: 20 }, () => attempt('race-1', 0)))).map(([outcome]) => outcome);
    expect(charge).toHaveBeenCalledTimes(1);
    const fresh = outcomes.filter((o) => o?.ok && !o.replayed);
    expect(fresh).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome?.ok) expect(outcome.record).toEqual(fresh[0]?.record);
      else expect(outcome).toMatchObject({ reason: 'in_progress', record: null });
    }
    expect((await ledger(shop.id, 'race-1')).get('race-1')).toMatchObject({ chargeCalls: 1 });
    expect(await claimRows('race-1')).toEqual([{ status: 'pending_settlement', n: 1 }]);
  });

  it('while the first attempt holds the key, a retry answers 409 with Retry-After and asks the processor nothing', async () => {
    // Charged just now, answer not written yet: the claim is fresh, its holder may still be running.
    await chargedThenCrashed('held-1', 0);
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const lookup = vi.spyOn(SandboxProcessor.prototype, 'lookup');
    const retry = await post('held-1');
    expect(retry.status).toBe(409);
    expect(retry.headers.get('Retry-After')).toBe('1');
    expect((await retry.json<Envelope>()).errors).toEqual([
      { field: 'Idempotency-Key', msg: 'is in use by a request that is still being processed; retry later' },
    ]);
    // Another body under the held key is the usual conflict, known already.
    const other = await post('held-1', { ...SALE, amount: '2000' });
    expect(other.status).toBe(409);
    expect(other.headers.get('Retry-After')).toBeNull();
    expect((await other.json<Envelope>()).msg).toBe('Idempotency-Key: was already used with a different request');
    expect(charge).not.toHaveBeenCalled();
    expect(lookup).not.toHaveBeenCalled();
    expect(await claimRows('held-1')).toEqual([{ status: 'processing', n: 1 }]);
  });

  it('a claim abandoned after the processor charged it is completed from the processor record, never charged again', async () => {
    await chargedThenCrashed('crash-charged', -TWO_MINUTES);
    expect(await claimRows('crash-charged')).toEqual([{ status: 'processing', n: 1 }]);

    const retry = await post('crash-charged');
    expect(retry.status).toBe(200);
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    const record = (await retry.json<Envelope<TxRecord>>()).data;
    const entry = (await ledger(shop.id, 'crash-charged')).get('crash-charged');
    expect(entry).toMatchObject({ chargeCalls: 1, lookupCalls: 1 });
    expect(record).toMatchObject({
      idempotency_key: 'crash-charged',
      response: 'approved',
      response_code: 100,
      status: 'pending_settlement',
      amount_authorized: 1000,
      amount_captured: 1000,
      auth_code: ledgerAuthCode(entry),
    });
    // The record is an ordinary one from now on: readable by id, replayed without asking anyone.
    const read = await call('GET', `/api/transaction/${String(record.id)}`, { key: shop.secretKey });
    // GET adds the transaction's email receipts (none asked for here).
    expect((await read.json<Envelope<TxRecord>>()).data).toEqual({ ...record, receipts: [] });
    const again = await post('crash-charged');
    expect((await again.json<Envelope<TxRecord>>()).data).toEqual(record);
    expect((await ledger(shop.id, 'crash-charged')).get('crash-charged')).toMatchObject({ chargeCalls: 1, lookupCalls: 1 });
  });

  it('a claim abandoned before the processor received the charge is released, and the retry charges it once', async () => {
    // The charge fails on its way and the processor cannot even be asked about it: the claim stays open.
    vi.spyOn(SandboxProcessor.prototype, 'charge').mockRejectedValueOnce(new Error('processor connection refused'));
    vi.spyOn(SandboxProcessor.prototype, 'lookup').mockRejectedValueOnce(new Error('processor connection refused'));
    await expect(attempt('crash-unsent', -TWO_MINUTES)).rejects.toThrow(/connection refused/);
    vi.restoreAllMocks();
    expect(await claimRows('crash-unsent')).toEqual([{ status: 'processing', n: 1 }]);
    expect((await ledger(shop.id, 'crash-unsent')).size).toBe(0);

    const retry = await post('crash-unsent');
    expect(retry.status).toBe(201);
    expect((await retry.json<Envelope<TxRecord>>()).data).toMatchObject({ response: 'approved', idempotency_key: 'crash-unsent' });
    expect((await ledger(shop.id, 'crash-unsent')).get('crash-unsent')).toMatchObject({ chargeCalls: 1, lookupCalls: 0 });
  });

  it('a charge that fails before reaching the processor is released at once: the API answers 500, the retry charges it once', async () => {
    // The sandbox's own storage refuses the charge: it never happened.
    const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(shop.id), utcDay(new Date())));
    const heal = await failSandboxCharges(acquirer, 'unsent-now');
    const failed = await post('unsent-now');
    await heal();
    expect(failed.status).toBe(500);
    expect(await claimRows('unsent-now')).toEqual([]);
    const retry = await post('unsent-now');
    expect(retry.status).toBe(201);
    expect((await ledger(shop.id, 'unsent-now')).get('unsent-now')).toMatchObject({ chargeCalls: 1 });
  });

  it('a claim abandoned with another body than the retry: the charge made is recorded, the retry is a conflict', async () => {
    await chargedThenCrashed('crash-other-body', -TWO_MINUTES);
    const retry = await post('crash-other-body', { ...SALE, amount: '2000' });
    expect(retry.status).toBe(409);
    expect((await retry.json<Envelope>()).msg).toBe('Idempotency-Key: was already used with a different request');
    const entry = (await ledger(shop.id, 'crash-other-body')).get('crash-other-body');
    expect(entry).toMatchObject({ chargeCalls: 1, lookupCalls: 1, amount: 1000 });
    expect(await claimRows('crash-other-body')).toEqual([{ status: 'pending_settlement', n: 1 }]);
  });
});
