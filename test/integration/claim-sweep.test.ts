/**
 * An API claim left open by a crash between the charge and its record is swept by its shard's
 * alarm (durable-objects/ledger-shard/claim-sweep.ts), never left charged and invisible: charged,
 * it is recorded from the processor's record (readable, searchable, settled); never received, it
 * is released. The processor is asked what it did, never to charge again.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TransactionInput } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { settleMerchantNow } from '../../src/services/settlement/runs';
import { processTransactions } from '../../src/services/recorded';
import { apiTransactionId, utcDay } from '../../src/services/transactions/ledger';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { CLAIM_TIMEOUT_SECONDS } from '../../src/services/transactions/claims';
import { CLAIM_SWEEP_GRACE_MS, CLAIMS_PER_SWEEP } from '../../src/durable-objects/ledger-shard/claim-sweep';
import type { LedgerShard } from '../../src/durable-objects/ledger-shard';
import type { TransactionEventMessage } from '../../src/schemas/webhooks';
import { CLAIMED_STATUS } from '../../src/storage/ledger-shard';
import { call, createMerchant, type Envelope } from '../helpers/api';
import { clockAt, ledger } from '../helpers/claims';
import { apiShardName, failShardWrites, shardEntries, shardRowCounts } from '../helpers/ledger';
import { createEndpoint, receiver } from '../helpers/webhooks';
import { address, receiptMerchant } from '../helpers/receipts';

const SALE: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };
const TWO_MINUTES = 120_000;
const TEN_MINUTES = 600_000;

beforeEach(() => {
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'log').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('the sweep of abandoned API claims', () => {
  it('a claim charged and then left by a crash (an auto key, never sent again) is recorded by the alarm: readable, searchable, settled; charged once', async () => {
    const shop = await createMerchant({ name: 'Sweep Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('unknown key');
    const key = 'auto_sweep_charged';
    const at = clockAt(-TWO_MINUTES);
    const day = utcDay(at());
    const id = await apiTransactionId(shop.id, key, day);
    const heal = await failShardWrites(apiShardName(shop.id, day), 'INSERT', 'pages', `NEW.page = '${id}'`);
    await expect(processTransactions(env, caller, [{ input: SALE, idempotencyKey: key }], { source: 'api', ipAddress: null }, at)).rejects.toThrow(/injected storage fault/);
    await heal();
    expect((await shardEntries(apiShardName(shop.id, day))).get(key)?.record.status).toBe(CLAIMED_STATUS);
    expect((await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).status).toBe(404);

    // The claim armed the shard's alarm for when it counts as abandoned, and a grace more.
    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, day));
    const alarm = await runInDurableObject(shard, (_i, state) => state.storage.getAlarm());
    expect(alarm).toBe(at().getTime() + CLAIM_TIMEOUT_SECONDS * 1000 + CLAIM_SWEEP_GRACE_MS);

    // The alarm's sweep, at its time.
    const swept = await shard.sweepClaims(new Date(Number(alarm)).toISOString());
    expect(swept).toEqual({ completed: 1, released: 0, open: 0, more: false });
    const read = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
    expect(read.status).toBe(200);
    expect((await read.json<Envelope<{ status: string; response: string }>>()).data).toMatchObject({ status: 'pending_settlement', response: 'approved' });
    expect((await ledger(shop.id, key)).get(key)).toMatchObject({ chargeCalls: 1, lookupCalls: 1 });
    const found = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { transaction_id: { operator: '=', value: id } } });
    expect((await found.json<{ total_count: number }>()).total_count).toBe(1);
    const settled = await settleMerchantNow(env, shop.id, () => new Date());
    expect(settled.batches.map((b) => b.num_transactions)).toEqual([1]);
  });

  it('a claim the processor never received is released by the sweep (nothing charged); a young claim is left to its client', async () => {
    const shop = await createMerchant({ name: 'Sweep Unsent Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('unknown key');
    // The charge fails on its way and the processor cannot even be asked about it: the claim stays open.
    const unsent = async (key: string, offsetMs: number) => {
      vi.spyOn(SandboxProcessor.prototype, 'charge').mockRejectedValueOnce(new Error('processor connection refused'));
      vi.spyOn(SandboxProcessor.prototype, 'lookup').mockRejectedValueOnce(new Error('processor connection refused'));
      await expect(processTransactions(env, caller, [{ input: SALE, idempotencyKey: key }], { source: 'api', ipAddress: null }, clockAt(offsetMs))).rejects.toThrow(/connection refused/);
    };
    // The young claim first: the old one's alarm is due at once, and its sweep must not meet the
    // young attempt's injected failures.
    await unsent('auto_sweep_young', 0);
    await unsent('auto_sweep_old', -TEN_MINUTES);
    const day = utcDay(new Date());
    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, day));
    // Whether the alarm (due already for the old claim) or this call sweeps first, the outcome is one.
    await shard.sweepClaims(new Date().toISOString());
    const left = await shardEntries(apiShardName(shop.id, day));
    expect(left.has('auto_sweep_old')).toBe(false);
    expect(left.get('auto_sweep_young')?.record.status).toBe(CLAIMED_STATUS);
    expect((await ledger(shop.id, 'auto_sweep')).size).toBe(0);
    // The young claim's sweep is armed for when it counts as abandoned, and a grace more.
    const alarm = await runInDurableObject(shard, (_i, state) => state.storage.getAlarm());
    expect(Number(alarm)).toBeGreaterThan(Date.now() + CLAIM_SWEEP_GRACE_MS - 5_000);
    expect(Number(alarm)).toBeLessThanOrEqual(Date.now() + CLAIM_TIMEOUT_SECONDS * 1000 + CLAIM_SWEEP_GRACE_MS);
  });

  it('more abandoned claims than one step settles are swept over several alarms: each step settles at most CLAIMS_PER_SWEEP and sets the next alarm at once', async () => {
    const shop = await createMerchant({ name: 'Sweep Many Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('unknown key');
    const count = CLAIMS_PER_SWEEP * 2 + 30;
    // Two minutes ago: abandoned now (past CLAIM_TIMEOUT_SECONDS), and the alarm they armed is not due
    // yet, so no sweep runs while the requests are still charging.
    const at = clockAt(-TWO_MINUTES);
    const day = utcDay(at());
    const name = apiShardName(shop.id, day);
    // Every record write fails after its charge: a crash at an API day's peak leaves them all open.
    const heal = await failShardWrites(name, 'INSERT', 'pages');
    const requests = Array.from({ length: count }, (_, i) => ({ input: SALE, idempotencyKey: `auto_many_${String(i).padStart(4, '0')}` }));
    await expect(processTransactions(env, caller, requests, { source: 'api', ipAddress: null }, at)).rejects.toThrow(/injected storage fault/);
    await heal();
    expect([...(await shardEntries(name)).values()].filter((stored) => stored.record.status === CLAIMED_STATUS)).toHaveLength(count);
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);

    // One step settles a bounded part, says there is more, and sets the next alarm for now.
    const shard = env.LEDGER_SHARD.getByName(name);
    const first = await runInDurableObject(shard, async (instance: LedgerShard, state) => {
      const swept = await instance.sweepClaims(new Date().toISOString());
      return { swept, alarm: await state.storage.getAlarm(), now: Date.now() };
    });
    expect(first.swept).toEqual({ completed: CLAIMS_PER_SWEEP, released: 0, open: 0, more: true });
    expect(Number(first.alarm)).toBeLessThanOrEqual(first.now);

    // The alarms finish it.
    for (let i = 0; i < 10 && (await shardRowCounts(name)).claims !== 0; i++) await runDurableObjectAlarm(shard);
    expect((await shardRowCounts(name)).claims).toBe(0);
    const steps = log.mock.calls
      .map(([line]) => JSON.parse(String(line)) as { event?: string; completed?: number })
      .filter((line) => line.event === 'abandoned_claims_swept');
    expect(steps.length).toBeGreaterThanOrEqual(3);
    for (const step of steps) expect(step.completed).toBeLessThanOrEqual(CLAIMS_PER_SWEEP);
    // The runtime may also run an alarm set for now on its own (and cancel it when the test's own
    // run replaces it), so the logged steps may not cover every claim: no claim is counted twice,
    // and the records below show every claim settled.
    expect(steps.reduce((sum, step) => sum + (step.completed ?? 0), 0)).toBeLessThanOrEqual(count);
    const recorded = [...(await shardEntries(name)).values()];
    expect(recorded.filter((stored) => stored.record.status === 'pending_settlement')).toHaveLength(count);
    // Each was charged once, and only looked up after.
    const charges = await ledger(shop.id, 'auto_many_');
    expect(charges.size).toBe(count);
    for (const row of charges.values()) expect(row.chargeCalls).toBe(1);
  });

  it('a swept charge is announced as transaction_create, searchable and its receipt queued, like a charge its request recorded; a step that dies before announcing is made good by the next', async () => {
    const shop = await receiptMerchant('Sweep Event Shop');
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('unknown key');
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const endpoint = await createEndpoint(shop.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const captured: TransactionEventMessage[] = [];
    // The first send fails (the queue refused it, or the step died there); later ones are captured.
    vi.spyOn(env.TRANSACTION_EVENT_QUEUE, 'sendBatch')
      .mockRejectedValueOnce(new Error('queue unavailable'))
      .mockImplementation(async (messages) => {
        for (const message of messages) captured.push(message.body as TransactionEventMessage);
        return undefined as never;
      });
    const key = 'auto_sweep_event';
    const at = clockAt(-TWO_MINUTES);
    const day = utcDay(at());
    const id = await apiTransactionId(shop.id, key, day);
    const heal = await failShardWrites(apiShardName(shop.id, day), 'INSERT', 'pages', `NEW.page = '${id}'`);
    const input = { ...SALE, email_receipt: 'true', email_address: address('swept') };
    await expect(processTransactions(env, caller, [{ input, idempotencyKey: key }], { source: 'api', ipAddress: null }, at)).rejects.toThrow(/injected storage fault/);
    await heal();

    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, day));
    // The alarm's step records the charge, then its send fails: the alarm is set again.
    await runDurableObjectAlarm(shard);
    expect(log.mock.calls.some(([line]) => String(line).includes('ledger_shard_alarm_failed') && String(line).includes('queue unavailable'))).toBe(true);
    // Recorded by that step. The claim is closed, so only the follow-ups it noted can announce it
    // now: the next step (this call, or the alarm the receipt queued, whichever runs first).
    expect((await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).status).toBe(200);
    // Two steps at once (the runtime may also run the alarm meanwhile): announced once, not once each.
    await Promise.all([shard.sweepClaims(new Date().toISOString()), shard.sweepClaims(new Date().toISOString())]);
    expect(captured).toHaveLength(1);
    expect(captured[0]).toMatchObject({ endpointId: endpoint.id, merchantId: shop.id, event: { id: `evt_${id}`, type: 'transaction_create', transaction_id: id } });
    const found = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { transaction_id: { operator: '=', value: id } } });
    expect((await found.json<{ total_count: number }>()).total_count).toBe(1);
    const read = await call('GET', `/api/transaction/${id}`, { key: shop.secretKey });
    expect((await read.json<Envelope<{ receipts: { kind: string }[] }>>()).data.receipts).toHaveLength(1);
    // Announced once: a later step has nothing left to follow up.
    await shard.sweepClaims(new Date().toISOString());
    expect(captured).toHaveLength(1);
  });
});
