/**
 * Pause, resume and cancel (POST /api/filebatch/{id}/pause|resume|cancel) and the window of chunks
 * a batch keeps in flight, through the real queue and object. The test config sets
 * BATCH_CHUNKS_IN_FLIGHT to 2 (chunks of 500 rows), so a file of a few thousand rows has chunks
 * waiting behind its window.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ChunkMessage } from '../../src/schemas/queue';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import {
  CARD_HEADER,
  QUEUE_TEST_TIMEOUT,
  createUnqueuedBatch,
  csv,
  deliver,
  parseResult,
  recordedTransactions,
  saleRows,
  status,
  uploadOk,
  waitForStatus,
  type BatchRecord,
} from '../helpers/batch';
import { createEndpoint, receiver } from '../helpers/webhooks';

const WINDOW = 2;
const ROWS_PER_CHUNK = 500;

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Control Shop' });
  other = await createMerchant({ name: 'Other Control Shop' });
});

afterEach(() => {
  vi.restoreAllMocks();
});

type Action = 'pause' | 'resume' | 'cancel';

async function act(key: string, id: string, action: Action): Promise<Response> {
  return call('POST', `/api/filebatch/${id}/${action}`, { key });
}

async function actOk(key: string, id: string, action: Action): Promise<BatchRecord & { paused: boolean }> {
  const response = await act(key, id, action);
  const body = await response.json<{ status: string; msg: string; data: BatchRecord & { paused: boolean } }>();
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body).toMatchObject({ status: 'success', msg: 'success' });
  return body.data;
}

/** The object's chunk map: which chunks were sent and which are done. */
async function chunkStates(id: string): Promise<{ chunk: number; sent: boolean; done: boolean }[]> {
  return runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) =>
    state.storage.sql
      .exec<{ chunk: number; sent_at: string | null; done_at: string | null }>('SELECT chunk, sent_at, done_at FROM chunks ORDER BY chunk')
      .toArray()
      .map((row) => ({ chunk: row.chunk, sent: row.sent_at !== null, done: row.done_at !== null })),
  );
}

/** The chunk messages of these chunks, as the object sends them (from its chunk map). */
async function chunkMessagesOf(id: string, chunks: number[]): Promise<ChunkMessage[]> {
  const all = await runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) =>
    state.storage.sql
      .exec<{ chunk: number; byte_offset: number; byte_length: number; first_line: number }>('SELECT chunk, byte_offset, byte_length, first_line FROM chunks')
      .toArray(),
  );
  return all
    .filter((row) => chunks.includes(row.chunk))
    .map((row) => ({ batchId: id, chunk: row.chunk, offset: row.byte_offset, length: row.byte_length, firstLine: row.first_line }));
}

const inFlight = <T extends { sent: boolean; done: boolean }>(chunks: T[]): T[] => chunks.filter((c) => c.sent && !c.done);

/** Waits until the batch has recorded at least `lines` rows (its chunks run on the real queue). */
async function waitForProcessed(id: string, lines: number): Promise<BatchRecord> {
  return vi.waitFor(
    async () => {
      const record = await status(shop.secretKey, id);
      if (record.processed_lines < lines) throw new Error(`batch ${id} at ${record.processed_lines} of ${lines}`);
      return record;
    },
    { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 5 },
  );
}

/** Waits until no chunk the object sent is still unrecorded. */
async function waitForNothingInFlight(id: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const flying = inFlight(await chunkStates(id));
      if (flying.length > 0) throw new Error(`chunks ${flying.map((c) => c.chunk).join(', ')} still in flight`);
    },
    { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 10 },
  );
}

/** The partial download, once the chunks still running at the cancel have settled. */
async function partialDownload(key: string, id: string): Promise<ReturnType<typeof parseResult>> {
  return vi.waitFor(
    async () => {
      const response = await call('GET', `/api/filebatch/${id}/download?partial=true`, { key });
      if (response.status !== 200) throw new Error(`partial download: ${response.status} ${await response.text()}`);
      return parseResult(await response.text());
    },
    { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 20 },
  );
}

describe('the window of chunks in flight', () => {
  it('sends no more than BATCH_CHUNKS_IN_FLIGHT chunk messages at the start, the next as each is recorded', async () => {
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(5 * ROWS_PER_CHUNK)));
    expect((await chunkStates(id)).filter((c) => c.sent)).toHaveLength(0);
    // Paused before it starts, so the start sends nothing the queue could record meanwhile.
    await actOk(shop.secretKey, id, 'pause');
    await env.BATCH_PROGRESS.getByName(id).start();
    expect((await chunkStates(id)).filter((c) => c.sent)).toHaveLength(0);
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'queued', paused: true, processed_lines: 0 });
    // Resumed: the first window goes out, and never more than it at once until the end.
    const resumed = await actOk(shop.secretKey, id, 'resume');
    expect(resumed.paused).toBe(false);
    let maxInFlight = 0;
    await vi.waitFor(
      async () => {
        const chunks = await chunkStates(id);
        maxInFlight = Math.max(maxInFlight, inFlight(chunks).length);
        if (!chunks.every((c) => c.done)) throw new Error('not done yet');
      },
      { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 5 },
    );
    expect(maxInFlight).toBeGreaterThan(0);
    expect(maxInFlight).toBeLessThanOrEqual(WINDOW);
    expect(await waitForStatus(shop.secretKey, id, 'completed')).toMatchObject({ processed_lines: 5 * ROWS_PER_CHUNK, paused: false });
  }, QUEUE_TEST_TIMEOUT);
});

describe('pause and resume', () => {
  it('pause: the chunks in flight finish, then processed_lines stays put (the watchdog too); resume: completed with exact counts', async () => {
    const rows = 8 * ROWS_PER_CHUNK;
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(rows)), 'pause-me.csv');
    await waitForProcessed(id, ROWS_PER_CHUNK);
    const paused = await actOk(shop.secretKey, id, 'pause');
    expect(paused).toMatchObject({ id, paused: true, file_name: 'pause-me.csv' });
    expect(['queued', 'processing']).toContain(paused.status);
    expect(inFlight(await chunkStates(id)).length).toBeLessThanOrEqual(WINDOW);

    await waitForNothingInFlight(id);
    const held = await status(shop.secretKey, id);
    expect(held).toMatchObject({ status: 'processing', paused: true });
    expect(held.processed_lines).toBeLessThan(rows);
    const chunks = await chunkStates(id);
    // Nothing was sent after the pause beyond what was already in flight: every chunk sent is done.
    expect(chunks.filter((c) => c.sent).length).toBe(held.processed_lines / ROWS_PER_CHUNK);
    // The stall watchdog fires: a paused batch is not stalled (nothing re-sent, not failed).
    expect(await runDurableObjectAlarm(env.BATCH_PROGRESS.getByName(id))).toBe(true);
    expect(await chunkStates(id)).toEqual(chunks);
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'processing', paused: true, processed_lines: held.processed_lines });
    expect(await recordedTransactions(id)).toEqual({ count: held.processed_lines, keys: held.processed_lines });

    const resumed = await actOk(shop.secretKey, id, 'resume');
    expect(resumed).toMatchObject({ paused: false, processed_lines: held.processed_lines });
    const done = await waitForStatus(shop.secretKey, id, 'completed');
    expect(done).toMatchObject({ num_lines: rows, processed_lines: rows, paused: false });
    // Each row charged exactly once.
    expect(await recordedTransactions(id)).toEqual({ count: rows, keys: rows });
    const download = await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey });
    const result = parseResult(await download.text());
    expect(result.rows.map((row) => row.idempotency_key)).toEqual(Array.from({ length: rows }, (_, i) => `${id}:${i + 2}`));
  }, QUEUE_TEST_TIMEOUT);

  it('pausing a paused batch and resuming a running one answer 200 and change nothing', async () => {
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(3)));
    const running = await status(shop.secretKey, id);
    const resumedRunning = await actOk(shop.secretKey, id, 'resume');
    expect(resumedRunning).toEqual(running);

    const first = await actOk(shop.secretKey, id, 'pause');
    expect(first.paused).toBe(true);
    const again = await actOk(shop.secretKey, id, 'pause');
    expect(again).toEqual(first);
    expect(await status(shop.secretKey, id)).toEqual(first);

    const resumed = await actOk(shop.secretKey, id, 'resume');
    expect(resumed.paused).toBe(false);
    expect(await actOk(shop.secretKey, id, 'resume')).toEqual(resumed);
  });

  it('shows paused in the batch list and the progress stream too', async () => {
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(3)));
    await actOk(shop.secretKey, id, 'pause');
    const list = await call('GET', '/api/filebatch?limit=100', { key: shop.secretKey });
    const listed = (await list.json<{ data: (BatchRecord & { paused: boolean })[] }>()).data.find((batch) => batch.id === id);
    expect(listed).toMatchObject({ id, paused: true });
    const stream = await call('GET', `/api/filebatch/${id}/events`, { key: shop.secretKey });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while (!text.includes('data: ')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    const data = text.split('\n').find((line) => line.startsWith('data: '))?.slice('data: '.length) ?? '{}';
    expect(JSON.parse(data)).toMatchObject({ id, paused: true });
    expect(text).toContain(':paused\n');
  });

  it('cancels a batch left paused for BATCH_RETENTION_DAYS; a shorter pause is left alone', async () => {
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(3)));
    await actOk(shop.secretKey, id, 'pause');
    const stub = env.BATCH_PROGRESS.getByName(id);
    const pausedAgo = (days: number) =>
      runInDurableObject(stub, (_instance, state) => {
        state.storage.sql.exec('UPDATE state SET paused_at = ?', new Date(Date.now() - days * 86_400_000).toISOString());
      });
    await pausedAgo(9);
    await runDurableObjectAlarm(stub);
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'pending', paused: true });
    await pausedAgo(10.01);
    await runDurableObjectAlarm(stub);
    expect(await status(shop.secretKey, id)).toMatchObject({
      status: 'failed',
      paused: false,
      failure_reason: 'cancelled: paused for 10 days without being resumed',
    });
  });
});

describe('cancel', () => {
  it('halfway: failed with the reason; the chunks running then land and are counted, so processed_lines equals the rows the partial download shows charged', async () => {
    const hook = receiver();
    await createEndpoint(shop.secretKey, { url: hook.url, events: ['batch.failed'] });
    const rows = 8 * ROWS_PER_CHUNK;
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(rows)), 'wrong-file.csv');
    await waitForProcessed(id, ROWS_PER_CHUNK);

    const cancelled = await actOk(shop.secretKey, id, 'cancel');
    // What the object had sent and recorded when it answered.
    const atCancel = await chunkStates(id);
    expect(cancelled).toMatchObject({ id, status: 'failed', failure_reason: 'cancelled by the merchant', paused: false });
    expect(cancelled.processed_lines).toBeGreaterThanOrEqual(ROWS_PER_CHUNK);
    expect(cancelled.processed_lines).toBeLessThan(rows);
    expect(inFlight(atCancel).length).toBeLessThanOrEqual(WINDOW);
    // Only chunks done or in flight at the answer may have charged rows: never one sent after it.
    const mayRun = new Set(atCancel.filter((c) => c.sent).map((c) => c.chunk));

    // The partial download waits (409, Retry-After) until the chunks running at the cancel landed.
    const result = await partialDownload(shop.secretKey, id);
    expect(result.rows).toHaveLength(rows);
    expect(result.rows.map((row) => row.idempotency_key)).toEqual(Array.from({ length: rows }, (_, i) => `${id}:${i + 2}`));
    const ran = result.rows.filter((row) => row.response !== 'error');
    const notRun = result.rows.filter((row) => row.response === 'error');
    expect(notRun.length).toBeGreaterThan(0);
    for (const row of notRun) expect(row.processor_response_text).toBe('not processed: the batch was cancelled; nothing was charged');
    for (const row of ran) {
      const line = Number(row.idempotency_key?.split(':')[1]);
      expect(mayRun.has(Math.floor((line - 2) / ROWS_PER_CHUNK)), `line ${line} ran after the cancel`).toBe(true);
    }
    // Rows charged: those counted before the cancel, plus the window's chunks that were running,
    // and processed_lines counts every one of them.
    expect(ran.length).toBeGreaterThanOrEqual(cancelled.processed_lines);
    expect(ran.length).toBeLessThanOrEqual(cancelled.processed_lines + WINDOW * ROWS_PER_CHUNK);
    expect(await recordedTransactions(id)).toEqual({ count: ran.length, keys: ran.length });
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'failed', processed_lines: ran.length, paused: false });
    // The uploaded file (card numbers) went once they had landed.
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
    // The chunks that were in flight delivered again (delivery is at least once), now, to the
    // consumer itself: nothing new is charged or counted, and the object sends no chunk after its answer.
    const charged = await recordedTransactions(id);
    await deliver('binbatch-chunks', await chunkMessagesOf(id, inFlight(atCancel).map((c) => c.chunk)));
    expect(await recordedTransactions(id)).toEqual(charged);
    expect((await chunkStates(id)).filter((c) => c.sent).map((c) => c.chunk)).toEqual(atCancel.filter((c) => c.sent).map((c) => c.chunk));
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'failed', processed_lines: ran.length, paused: false });

    // batch.failed was recorded once the batch settled: it carries the final count.
    const event = await env.DB.prepare("SELECT payload FROM webhook_events WHERE batch_id = ?1 AND type = 'batch.failed'")
      .bind(id)
      .first<string>('payload');
    expect(JSON.parse(event ?? '{}')).toMatchObject({
      type: 'batch.failed',
      data: { id, status: 'failed', failure_reason: 'cancelled by the merchant', paused: false, processed_lines: ran.length },
    });
  }, QUEUE_TEST_TIMEOUT);

  it('a chunk charged while the cancel is answered lands afterwards: counted, and the download and the record agree', async () => {
    const rows = 3 * ROWS_PER_CHUNK;
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(rows)));
    // The object has sent chunks 0 and 1 (the test delivers them itself; nothing else is sent).
    await runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) => {
      state.storage.sql.exec("UPDATE state SET status = 'queued'");
      state.storage.sql.exec('UPDATE chunks SET sent_at = ? WHERE chunk IN (0, 1)', new Date().toISOString());
    });
    await deliver('binbatch-chunks', [messages[0]]);
    expect((await status(shop.secretKey, id)).processed_lines).toBe(ROWS_PER_CHUNK);

    // Chunk 1 is charged, then held just before its result part is written.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached = () => {};
    const atHold = new Promise<void>((resolve) => (reached = resolve));
    const put = env.FILES.put.bind(env.FILES);
    vi.spyOn(env.FILES, 'put').mockImplementation(async (key, value, options) => {
      if (key === `results/${id}/000001.csv`) {
        reached();
        await held;
      }
      return put(key, value, options);
    });
    const landing = deliver('binbatch-chunks', [messages[1]]);
    await atHold;
    const cancelled = await actOk(shop.secretKey, id, 'cancel');
    expect(cancelled).toMatchObject({ status: 'failed', processed_lines: ROWS_PER_CHUNK });
    // Still running: the partial download waits for it.
    const early = await call('GET', `/api/filebatch/${id}/download?partial=true`, { key: shop.secretKey });
    expect(early.status).toBe(409);
    expect(early.headers.get('Retry-After')).toBe('5');
    release();
    await landing;

    const result = await partialDownload(shop.secretKey, id);
    const ran = result.rows.filter((row) => row.response !== 'error');
    expect(ran).toHaveLength(2 * ROWS_PER_CHUNK);
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'failed', processed_lines: 2 * ROWS_PER_CHUNK });
    expect(await recordedTransactions(id)).toEqual({ count: 2 * ROWS_PER_CHUNK, keys: 2 * ROWS_PER_CHUNK });
  });

  it('cancels a paused batch that never started: every row "not processed", nothing charged', async () => {
    const rows = 3 * ROWS_PER_CHUNK;
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(rows)));
    await actOk(shop.secretKey, id, 'pause');
    const cancelled = await actOk(shop.secretKey, id, 'cancel');
    expect(cancelled).toMatchObject({ status: 'failed', processed_lines: 0, paused: false, failure_reason: 'cancelled by the merchant' });
    // The uploaded file (card numbers) goes with the end of the batch.
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();
    const result = await partialDownload(shop.secretKey, id);
    expect(result.rows).toHaveLength(rows);
    expect(new Set(result.rows.map((row) => row.processor_response_text))).toEqual(new Set(['not processed: the batch was cancelled; nothing was charged']));
    expect(await recordedTransactions(id)).toEqual({ count: 0, keys: 0 });
  });
});

describe('refusals', () => {
  it('answers 409 naming the status for a batch that has ended', async () => {
    const completed = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
    await waitForStatus(shop.secretKey, completed, 'completed');
    const { id: cancelled } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
    await actOk(shop.secretKey, cancelled, 'cancel');
    for (const [id, ended] of [
      [completed, 'completed'],
      [cancelled, 'failed'],
    ] as const) {
      for (const action of ['pause', 'resume', 'cancel'] as const) {
        const response = await act(shop.secretKey, id, action);
        expect(response.status, `${action} on a ${ended} batch`).toBe(409);
        const body = await response.json<{ status: string; msg: string; data: unknown }>();
        expect(body).toMatchObject({ status: 'failed', data: null });
        expect(body.msg).toContain(`batch is ${ended}`);
      }
      expect((await status(shop.secretKey, id)).status).toBe(ended);
    }
  }, QUEUE_TEST_TIMEOUT);

  it("answers 404 for another merchant's batch and leaves it alone; 400 for a malformed id; 401 for a public key", async () => {
    const { id } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
    for (const action of ['pause', 'resume', 'cancel'] as const) {
      const response = await act(other.secretKey, id, action);
      expect(response.status, action).toBe(404);
      expect(await response.json()).toMatchObject({ status: 'failed', msg: 'batch not found', data: null });
      expect((await act(shop.secretKey, 'Not-An-Id!', action)).status).toBe(400);
      expect((await act(shop.publicKey, id, action)).status).toBe(401);
      expect((await act(shop.secretKey, 'bat_nosuchbatch000000', action)).status).toBe(404);
    }
    expect(await status(shop.secretKey, id)).toMatchObject({ status: 'pending', paused: false });
  });
});
