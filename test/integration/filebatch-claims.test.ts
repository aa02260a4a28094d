/**
 * Claim before charge for batch rows (keys `{batch}:{line}`): a chunk delivered twice at once, or
 * retried after it failed midway, asks the processor once per row. Counted in the sandbox
 * processor's ledger; deliveries go to the real chunk consumer, with its clock chosen by the test.
 */
import { env } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChunkMessage } from '../../src/schemas/queue';
import { CLAIM_TIMEOUT_SECONDS } from '../../src/services/transactions/claims';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, parseResult, recordedTransactions, saleRows, status } from '../helpers/batch';
import { clockAt, deliverChunksAt, ledger, ledgerAuthCode } from '../helpers/claims';
import { batchShardName, failShardWrites } from '../helpers/ledger';

const CHUNKS = 'binbatch-chunks';

let warnings: string[] = [];
beforeEach(() => {
  // Failed attempts are logged on purpose here; warnings are kept to read the retry delays.
  warnings = [];
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'warn').mockImplementation((line: string) => void warnings.push(line));
});

/** The delays the consumer asked for when a chunk's rows were held by another delivery (its log). */
function inFlightDelays(): number[] {
  return warnings
    .map((line) => JSON.parse(line) as { event?: string; delay_seconds?: number })
    .filter((entry) => entry.event === 'chunk_rows_in_flight')
    .map((entry) => entry.delay_seconds ?? -1);
}
afterEach(() => {
  vi.restoreAllMocks();
});

async function oneChunkBatch(rows: number): Promise<{ merchant: TestMerchant; id: string; message: ChunkMessage }> {
  const merchant = await createMerchant();
  const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(rows)));
  const [message] = messages;
  if (!message || messages.length !== 1) throw new Error('expected one chunk');
  return { merchant, id, message };
}

const lines = (id: string, count: number) => Array.from({ length: count }, (_, i) => `${id}:${i + 2}`);

async function download(key: string, id: string) {
  const response = await call('GET', `/api/filebatch/${id}/download`, { key });
  expect(response.status).toBe(200);
  return parseResult(await response.text()).rows;
}

describe('a batch chunk asks the processor once per row', () => {
  it('delivered twice at the same time: one delivery charges, the other finds the rows held and is retried later', async () => {
    const { merchant, id, message } = await oneChunkBatch(300);
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const results = await Promise.all([deliver(CHUNKS, [message]), deliver(CHUNKS, [message])]);
    const acks = results.flatMap((r) => r.explicitAcks);
    const retries = results.flatMap((r) => r.retryMessages);
    expect(acks.length).toBeGreaterThanOrEqual(1);
    expect(acks.length + retries.length).toBe(2);
    // A retried copy waits at least the backoff; its next delivery replays the recorded rows.
    expect(inFlightDelays()).toHaveLength(retries.length);
    for (const delay of inFlightDelays()) expect(delay).toBeGreaterThanOrEqual(5);
    if (retries.length > 0) expect((await deliver(CHUNKS, [message], 2)).explicitAcks).toHaveLength(1);

    expect(charge).toHaveBeenCalledTimes(300);
    const entries = await ledger(merchant.id, `${id}:`);
    expect([...entries.keys()].sort()).toEqual(lines(id, 300).sort());
    expect([...entries.values()].every((e) => e.chargeCalls === 1)).toBe(true);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 300 });
    expect(await recordedTransactions(id)).toEqual({ count: 300, keys: 300 });
  });

  it('twice in one delivery: run once, both copies acked', async () => {
    const { merchant, id, message } = await oneChunkBatch(20);
    const result = await deliver(CHUNKS, [message, message]);
    expect(result.explicitAcks).toHaveLength(2);
    const entries = await ledger(merchant.id, `${id}:`);
    expect(entries.size).toBe(20);
    expect([...entries.values()].every((e) => e.chargeCalls === 1)).toBe(true);
  });

  it('the processor fails partway: rows it answered are recorded, the rest are charged once by the retry', async () => {
    const { merchant, id, message } = await oneChunkBatch(10);
    const charge = SandboxProcessor.prototype.charge;
    const sent: string[] = [];
    let first = true;
    vi.spyOn(SandboxProcessor.prototype, 'charge').mockImplementation(async function (this: SandboxProcessor, request) {
      sent.push(request.idempotencyKey);
      // Lines 7 to 11 fail on the first attempt, before reaching the processor.
      if (first && Number(request.idempotencyKey.split(':')[1]) >= 7) throw new Error('processor connection reset');
      return charge.call(this, request);
    });
    const failed = await deliverChunksAt(clockAt(0), [message]);
    expect(failed.retryMessages).toHaveLength(1);
    first = false;
    // The attempt asked the processor about the failed calls at once: never received, so released.
    expect(await recordedTransactions(id)).toEqual({ count: 5, keys: 5 });

    const retried = await deliverChunksAt(clockAt(0), [message], 2);
    expect(retried.explicitAcks).toHaveLength(1);
    expect(sent).toHaveLength(15);
    const entries = await ledger(merchant.id, `${id}:`);
    expect(entries.size).toBe(10);
    expect([...entries.values()].every((e) => e.chargeCalls === 1)).toBe(true);
    const rows = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.idempotency_key)).toEqual(lines(id, 10));
    expect(rows.every((r) => r.response === 'approved' && r.auth_code === ledgerAuthCode(entries.get(r.idempotency_key ?? '')))).toBe(true);
  });

  it('a crash after some rows were charged: the retry waits for the claims to be abandoned, then settles them from the processor and charges only the rest', async () => {
    const { merchant, id, message } = await oneChunkBatch(10);
    const crashAt = -10 * 60_000;
    // The crashed attempt: lines 2-5 are charged, lines 6-11 fail on their way to the processor,
    // and the batch's ledger shard refuses every answer write. All 10 claims stay open, 4 of them charged.
    const charge = SandboxProcessor.prototype.charge;
    const spy = vi.spyOn(SandboxProcessor.prototype, 'charge').mockImplementation(async function (this: SandboxProcessor, request) {
      if (Number(request.idempotencyKey.split(':')[1]) >= 6) throw new Error('processor connection reset');
      return charge.call(this, request);
    });
    const heal = await failShardWrites(batchShardName(merchant.id, id), 'INSERT', 'pages');
    const crashed = await deliverChunksAt(clockAt(crashAt), [message]);
    await heal();
    spy.mockRestore();
    expect(crashed.retryMessages).toHaveLength(1);
    expect((await ledger(merchant.id, `${id}:`)).size).toBe(4);

    // Ten seconds later the claims are fresh: their holder may be running. Nothing is asked.
    const lookup = vi.spyOn(SandboxProcessor.prototype, 'lookup');
    const recharge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const early = await deliverChunksAt(clockAt(crashAt + 10_000), [message], 2);
    expect(early.explicitAcks).toEqual([]);
    expect(early.retryMessages).toHaveLength(1);
    // It asks to be delivered again when the claims will count as abandoned.
    expect(inFlightDelays()).toEqual([CLAIM_TIMEOUT_SECONDS - 10]);
    expect(lookup).not.toHaveBeenCalled();
    expect(recharge).not.toHaveBeenCalled();

    // Once abandoned: the 4 charged rows are completed from the processor's record, the 6 it never
    // received are released and charged now.
    const late = await deliverChunksAt(clockAt(crashAt + (CLAIM_TIMEOUT_SECONDS + 1) * 1000), [message], 3);
    expect(late.explicitAcks).toHaveLength(1);
    expect(lookup).toHaveBeenCalledTimes(10);
    expect(recharge).toHaveBeenCalledTimes(6);
    const entries = await ledger(merchant.id, `${id}:`);
    expect(entries.size).toBe(10);
    expect([...entries.values()].every((e) => e.chargeCalls === 1)).toBe(true);
    expect(lines(id, 10).map((key) => entries.get(key)?.lookupCalls)).toEqual([1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);

    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 10 });
    const rows = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.idempotency_key)).toEqual(lines(id, 10));
    expect(rows.every((r) => r.response === 'approved' && r.auth_code === ledgerAuthCode(entries.get(r.idempotency_key ?? '')))).toBe(true);
    expect(await recordedTransactions(id)).toEqual({ count: 10, keys: 10 });
  });

  it('the ledger shard fails after every row was charged: the retry completes the rows from the processor record, charging none again', async () => {
    const { merchant, id, message } = await oneChunkBatch(8);
    const crashAt = -10 * 60_000;
    const heal = await failShardWrites(batchShardName(merchant.id, id), 'INSERT', 'pages');
    const crashed = await deliverChunksAt(clockAt(crashAt), [message]);
    await heal();
    expect(crashed.retryMessages).toHaveLength(1);
    const charged = await ledger(merchant.id, `${id}:`);
    expect(charged.size).toBe(8);

    const recharge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const retried = await deliverChunksAt(clockAt(crashAt + (CLAIM_TIMEOUT_SECONDS + 1) * 1000), [message], 2);
    expect(retried.explicitAcks).toHaveLength(1);
    expect(recharge).not.toHaveBeenCalled();
    const entries = await ledger(merchant.id, `${id}:`);
    expect([...entries.values()].map((e) => [e.chargeCalls, e.lookupCalls])).toEqual(Array.from({ length: 8 }, () => [1, 1]));
    const rows = await download(merchant.secretKey, id);
    expect(rows.map((r) => r.auth_code)).toEqual(lines(id, 8).map((key) => ledgerAuthCode(charged.get(key))));
  });
});
