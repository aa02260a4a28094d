/**
 * Faults in the batch pipeline: the consumer dying mid-chunk, R2, D1 or the ledger shard failing once, messages
 * delivered twice or out of order, the Durable Object evicted between deliveries, a chunk that
 * never succeeds, messages that are lost. Every batch either completes with exact counts and each
 * row charged once, or fails with a reason; none stays in `processing`.
 *
 * Messages are delivered to the Worker's real queue handler (`deliver`) as the queue would, with
 * the retry loop of wrangler.toml (max_retries 5, then the dead-letter queue) played by `settle`.
 * Faults are injected with vi.spyOn on the real bindings and the sandbox processor.
 */
import { env } from 'cloudflare:workers';
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChunkMessage } from '../../src/schemas/queue';
import { STALL_GIVE_UP_HOURS } from '../../src/services/batches/limits';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, parseResult, saleRows, status } from '../helpers/batch';
import { clockAt, deliverChunksAt, ledger as processorLedger } from '../helpers/claims';
import { fuzzRuns } from '../helpers/fuzz';
import { batchShardName, failLedgerCallOnce, shardEntryList } from '../helpers/ledger';

const CHUNKS = 'binbatch-chunks';
const DEAD_LETTERS = 'binbatch-chunks-dlq';
/** wrangler.toml `max_retries` of the chunk queue. */
const MAX_RETRIES = 5;
const ROWS_PER_CHUNK = 4;

let merchant: TestMerchant;
let chunkRows: string;
beforeAll(async () => {
  merchant = await createMerchant({ name: 'Faulty Shop' });
  // Small chunks, so a dozen rows make several messages.
  chunkRows = env.BATCH_CHUNK_ROWS;
  env.BATCH_CHUNK_ROWS = String(ROWS_PER_CHUNK);
});
afterAll(() => {
  env.BATCH_CHUNK_ROWS = chunkRows;
});
beforeEach(() => {
  // The consumer logs each failed attempt; these tests cause them on purpose.
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A batch of `rows` approved card sales, created without sending its messages. */
async function newBatch(rows: number): Promise<{ id: string; messages: ChunkMessage[] }> {
  const batch = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(rows)));
  expect(batch.messages).toHaveLength(Math.ceil(rows / ROWS_PER_CHUNK));
  await markQueuedWithoutSending(batch.id);
  return batch;
}

/**
 * Delivers `schedule` (messages, repeats allowed, one per delivery), then keeps re-delivering
 * what the consumer asked to retry, with rising `attempts`, as the queue does; a message out of
 * retries goes to the dead-letter consumer. `before` runs before each delivery (to inject faults).
 */
async function settle(schedule: ChunkMessage[], before: (n: number) => Promise<void> = async () => {}): Promise<void> {
  const pending: { body: ChunkMessage; attempts: number }[] = schedule.map((body) => ({ body, attempts: 1 }));
  for (let n = 0; pending.length > 0; n++) {
    if (n > 200) throw new Error('settle: the consumer keeps asking for retries');
    const next = pending.shift();
    if (!next) break;
    await before(n);
    const result = await deliver(CHUNKS, [next.body], next.attempts);
    if (result.retryMessages.length > 0 || result.retryBatch.retry) {
      if (next.attempts > MAX_RETRIES) {
        const dead = await deliver(DEAD_LETTERS, [next.body]);
        expect(dead.explicitAcks).toHaveLength(1);
      } else {
        pending.push({ body: next.body, attempts: next.attempts + 1 });
      }
    } else {
      expect(result.explicitAcks).toHaveLength(1);
    }
  }
}

/** Messages the Worker sends from here on are captured and lost: the queue never delivers them. */
function loseSentMessages(into: ChunkMessage[]): void {
  vi.spyOn(env.BATCH_QUEUE, 'sendBatch').mockImplementation(async (batch) => {
    for (const message of batch) into.push(message.body as ChunkMessage);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
  });
}

/** The batch completed, every row exactly once: in the counters, in its ledger shard and in the result file. */
async function expectCompletedExactlyOnce(id: string, rows: number): Promise<void> {
  expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', num_lines: rows, processed_lines: rows });
  const stored = await shardEntryList(batchShardName(merchant.id, id));
  const counts = {
    n: stored.length,
    keys: new Set(stored.map((s) => s.record.idempotency_key)).size,
    ids: new Set(stored.map((s) => s.record.id)).size,
    open: stored.filter((s) => s.record.status === 'processing').length,
  };
  expect(counts).toEqual({ n: rows, keys: rows, ids: rows, open: 0 });
  const response = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
  expect(response.status).toBe(200);
  const result = parseResult(await response.text());
  expect(result.rows.map((row) => row.idempotency_key)).toEqual(Array.from({ length: rows }, (_, i) => `${id}:${i + 2}`));
  expect(result.rows.every((row) => row.response === 'approved')).toBe(true);
  expect(new Set(result.rows.map((row) => row.id)).size).toBe(rows);
  // The uploaded file (card numbers) is gone once the batch ended.
  expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
}

describe('the consumer fails partway and is retried', () => {
  it('dies mid-chunk after charging some rows: each row recorded once, a re-sent charge carries the same key', async () => {
    const { id, messages } = await newBatch(10);
    const charge = SandboxProcessor.prototype.charge;
    const keys: string[] = [];
    vi.spyOn(SandboxProcessor.prototype, 'charge').mockImplementation(async function (this: SandboxProcessor, request) {
      keys.push(request.idempotencyKey);
      if (keys.length === 3) throw new Error('processor connection reset');
      return charge.call(this, request);
    });
    await settle(messages);
    await expectCompletedExactlyOnce(id, 10);
    // The failed call never reached the processor: the retry sent that row again, under its own
    // key, and no other row (each was claimed before it was charged). The processor's ledger saw
    // every row exactly once.
    expect(keys.length).toBe(11);
    expect(new Set(keys)).toEqual(new Set(Array.from({ length: 10 }, (_, i) => `${id}:${i + 2}`)));
    const ledger = [...(await processorLedger(merchant.id, `${id}:`)).values()];
    expect(ledger.map((e) => e.chargeCalls)).toEqual(Array.from({ length: 10 }, () => 1));
  });

  it('R2 fails once reading the chunk', async () => {
    const { id, messages } = await newBatch(9);
    vi.spyOn(env.FILES, 'get').mockRejectedValueOnce(new Error('R2: internal error'));
    await settle(messages);
    await expectCompletedExactlyOnce(id, 9);
  });

  it('R2 fails once writing the result part, after the rows were recorded: they are replayed, not charged again', async () => {
    const { id, messages } = await newBatch(9);
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    vi.spyOn(env.FILES, 'put').mockRejectedValueOnce(new Error('R2: we encountered an internal error'));
    await settle(messages);
    expect(charge).toHaveBeenCalledTimes(9);
    await expectCompletedExactlyOnce(id, 9);
  });

  it('the ledger shard fails once writing the answers, after the rows were charged: the claims are settled later, nothing charged again', async () => {
    const { id, messages } = await newBatch(9);
    const [first] = messages;
    if (!first) throw new Error('expected chunks');
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const fault = failLedgerCallOnce('complete');
    // Ten minutes ago: chunk 0's rows were claimed and charged, then their answers could not be written.
    const crashed = await deliverChunksAt(clockAt(-10 * 60_000), [first]);
    fault.spy.mockRestore();
    expect(fault.fired()).toBe(true);
    expect(crashed.retryMessages).toHaveLength(1);
    // Now the claims count as abandoned: the retry completes them from the processor's record.
    await settle(messages);
    expect(charge).toHaveBeenCalledTimes(9);
    await expectCompletedExactlyOnce(id, 9);
  });

  it('the ledger shard fails once taking the claims: nothing was charged, the retry charges each row once', async () => {
    const { id, messages } = await newBatch(9);
    const charge = vi.spyOn(SandboxProcessor.prototype, 'charge');
    const fault = failLedgerCallOnce('claim');
    await settle(messages);
    fault.spy.mockRestore();
    expect(fault.fired()).toBe(true);
    expect(charge).toHaveBeenCalledTimes(9);
    await expectCompletedExactlyOnce(id, 9);
  });

  it('D1 fails once on the first query of a chunk', async () => {
    const { id, messages } = await newBatch(9);
    const prepare = env.DB.prepare.bind(env.DB);
    let first = true;
    vi.spyOn(env.DB, 'prepare').mockImplementation((query) => {
      if (first) {
        first = false;
        throw new Error('D1_ERROR: storage caused object to be reset');
      }
      return prepare(query);
    });
    await settle(messages);
    await expectCompletedExactlyOnce(id, 9);
  });
});

describe('delivery order and repetition', () => {
  it('every message twice, last chunk first', async () => {
    const { id, messages } = await newBatch(11);
    const reversed = [...messages].reverse();
    await settle([...reversed, ...messages]);
    await expectCompletedExactlyOnce(id, 11);
  });

  it('two copies of one chunk in the same delivery', async () => {
    const { id, messages } = await newBatch(8);
    const [first, second] = messages;
    if (!first || !second) throw new Error('expected two chunks');
    const result = await deliver(CHUNKS, [first, first, second]);
    expect(result.explicitAcks).toHaveLength(3);
    await expectCompletedExactlyOnce(id, 8);
  });

  it('the Durable Object evicted before every delivery', async () => {
    const { id, messages } = await newBatch(12);
    const stub = env.BATCH_PROGRESS.getByName(id);
    await settle([messages[1], messages[0], messages[1], messages[2]].filter((m) => m !== undefined), async () => {
      await evictDurableObject(stub);
    });
    await expectCompletedExactlyOnce(id, 12);
  });

  it('property: any order, repeats, one fault and evictions: exact counts, each row charged once', async () => {
    // (A lost answer write leaves fresh claims that only time settles: its own test above, with clocks.)
    const faults = ['none', 'r2-get', 'r2-put', 'ledger-claim', 'processor', 'evict'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 13 }),
        fc.array(fc.integer(), { minLength: 4, maxLength: 4 }),
        fc.array(fc.nat(), { minLength: 0, maxLength: 6 }),
        fc.constantFrom(...faults),
        fc.nat(20),
        async (rows, order, extra, fault, at) => {
          const { id, messages } = await newBatch(rows);
          const rank = (m: ChunkMessage) => order[m.chunk] ?? m.chunk;
          const schedule = [...messages].sort((a, b) => rank(a) - rank(b));
          for (const pick of extra) {
            const message = messages[pick % messages.length];
            if (message) schedule.splice(pick % (schedule.length + 1), 0, message);
          }
          const charge = SandboxProcessor.prototype.charge;
          let calls = 0;
          const spies: ({ mockRestore: () => void } | null)[] = [
            fault === 'processor'
              ? vi.spyOn(SandboxProcessor.prototype, 'charge').mockImplementation(async function (this: SandboxProcessor, request) {
                  if (++calls === (at % rows) + 1) throw new Error('processor timeout');
                  return charge.call(this, request);
                })
              : null,
          ];
          // A binding fault goes before the first delivery of a chunk, the one that does the chunk's
          // work (reads it from R2, records its rows in its ledger shard, writes its result part): a repeat of a
          // finished chunk touches none of them, so a fault set there might never fire.
          const firstDeliveries = schedule.flatMap((m, n) => (schedule.findIndex((o) => o.chunk === m.chunk) === n ? [n] : []));
          const faultAt = fault === 'evict' ? at % schedule.length : firstDeliveries[at % firstDeliveries.length];
          // The binding calls made to fail once, to check below that the failure was served.
          const failOnce: { mock: { settledResults: { type: string }[] } }[] = [];
          let evicted = false;
          let ledgerFault: ReturnType<typeof failLedgerCallOnce> | null = null;
          await settle(schedule, async (n) => {
            if (n !== faultAt) return;
            if (fault === 'r2-get') failOnce.push(vi.spyOn(env.FILES, 'get').mockRejectedValueOnce(new Error('R2 down')));
            if (fault === 'r2-put') failOnce.push(vi.spyOn(env.FILES, 'put').mockRejectedValueOnce(new Error('R2 down')));
            if (fault === 'ledger-claim') ledgerFault = failLedgerCallOnce('claim');
            if (fault === 'evict') {
              await evictDurableObject(env.BATCH_PROGRESS.getByName(id));
              evicted = true;
            }
          });
          // The fault fired (a run where it never did would prove nothing): the binding call was made
          // and rejected, the processor was asked for the charge that throws, the object was evicted.
          expect(failOnce.map((spy) => spy.mock.settledResults[0]?.type), fault).toEqual(
            fault === 'r2-get' || fault === 'r2-put' ? ['rejected'] : [],
          );
          expect((ledgerFault as ReturnType<typeof failLedgerCallOnce> | null)?.fired() ?? false, fault).toBe(fault === 'ledger-claim');
          if (fault === 'processor') expect(calls, fault).toBeGreaterThan(at % rows);
          expect(evicted, fault).toBe(fault === 'evict');
          for (const spy of [...spies, ...failOnce, (ledgerFault as ReturnType<typeof failLedgerCallOnce> | null)?.spy ?? null]) (spy as { mockRestore: () => void } | null)?.mockRestore();
          await expectCompletedExactlyOnce(id, rows);
        },
      ),
      fuzzRuns(12),
    );
  });
});

describe('a batch never stays in processing', () => {
  it('a chunk that fails every attempt ends in the dead-letter queue and fails the batch with a reason', async () => {
    const { id, messages } = await newBatch(8);
    const [first, second] = messages;
    if (!first || !second) throw new Error('expected two chunks');
    await settle([first]);
    const get = vi.spyOn(env.FILES, 'get').mockRejectedValue(new Error('R2: bucket unavailable'));
    await settle([second]);
    const record = await status(merchant.secretKey, id);
    expect(record).toMatchObject({ status: 'failed', processed_lines: 4 });
    expect(record.failure_reason).toMatch(/chunk 1 \(from line 6\)/);
    get.mockRestore();
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(download.status).toBe(409);
    expect(await download.json()).toMatchObject({ status: 'failed', msg: 'batch is not in completed status', data: null });
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
  });

  it('lost messages: the watchdog re-sends the missing chunks at every stall, then fails a batch that made no progress for STALL_GIVE_UP_HOURS', async () => {
    const { id, messages } = await newBatch(12);
    const [first] = messages;
    if (!first) throw new Error('expected chunks');
    await settle([first]);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'processing', processed_lines: 4 });

    // The other messages were lost. The watchdog's first alarm sends them again...
    const resent: ChunkMessage[] = [];
    loseSentMessages(resent);
    const stub = env.BATCH_PROGRESS.getByName(id);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(resent.map((m) => m.chunk)).toEqual([1, 2]);
    // ...and they are lost again (another crash): the second alarm sends them once more.
    resent.length = 0;
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(resent.map((m) => m.chunk)).toEqual([1, 2]);
    expect((await status(merchant.secretKey, id)).status).toBe('processing');
    // Lost every time for STALL_GIVE_UP_HOURS (the last progress moved back): the next alarm fails the batch, saying why.
    const longAgo = new Date(Date.now() - STALL_GIVE_UP_HOURS * 3_600_000 - 1).toISOString();
    await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec('UPDATE state SET updated_at = ?', longAgo));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const record = await status(merchant.secretKey, id);
    expect(record.status).toBe('failed');
    expect(record.failure_reason).toMatch(/no progress/);
    // A late delivery of a lost message changes nothing.
    await settle(resent);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'failed', processed_lines: 4 });
  });

  it('the re-sent chunks complete the batch when they arrive, each row still charged once', async () => {
    const { id, messages } = await newBatch(12);
    await settle(messages.slice(0, 1));
    const resent: ChunkMessage[] = [];
    loseSentMessages(resent);
    expect(await runDurableObjectAlarm(env.BATCH_PROGRESS.getByName(id))).toBe(true);
    // The originals turn up late, after the re-sent copies.
    await settle([...resent, ...messages]);
    await expectCompletedExactlyOnce(id, 12);
  });
});
