/** Helpers for batch-file tests: building CSVs, uploading them, waiting on the real queue. */
import { env } from 'cloudflare:workers';
import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject, type QueueResult } from 'cloudflare:test';
import { vi } from 'vitest';
import worker from '../../src/index';
import { systemClock } from '../../src/lib/time';
import type { Env } from '../../src/env';
import type { ChunkMessage } from '../../src/schemas/queue';
import { uploadBatch } from '../../src/services/batches/upload';
import { authenticateKey } from '../../src/services/merchants';
import { call } from './api';
import { batchShardName, shardEntryList } from './ledger';

/** Tests that wait on the real queue get room for a busy machine (vitest's default is 5 s). */
export const QUEUE_TEST_TIMEOUT = 60_000;

export interface BatchRecord {
  id: string;
  user_id: string;
  file_name: string;
  status: string;
  num_lines: number;
  processed_lines: number;
  created_at: string;
  updated_at: string;
  failure_reason?: string;
}

/** A file in SPEC.md's format: every field quoted, "\n" line ends. */
export function csv(header: string[], rows: string[][], lineEnd = '\n'): string {
  const line = (fields: string[]) => fields.map((field) => `"${field}"`).join(',') + lineEnd;
  return line(header) + rows.map(line).join('');
}

export const CARD_HEADER = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'order_id'];

/** `count` valid card sales with distinct order ids (amounts 1000, 1001, ...: clear of the sandbox's decline amounts). */
export function saleRows(count: number): string[][] {
  return Array.from({ length: count }, (_, i) => ['sale', String(1000 + i), '4111111111111111', '12/30', `ord${i + 1}`]);
}

/**
 * The upload helpers say ?allow_duplicate=true: the tests using them upload the same few files
 * again for one merchant on purpose (test/integration/filebatch-repeats.test.ts tests the refusal).
 */
export function uploadMultipart(key: string, text: string | Uint8Array, fileName = 'batch.csv'): Promise<Response> {
  const form = new FormData();
  form.append('file', new File([text], fileName, { type: 'text/csv' }));
  return call('POST', '/api/filebatch?allow_duplicate=true', { key, body: form });
}

export function uploadRaw(key: string, text: string, fileName = 'raw.csv'): Promise<Response> {
  return call('POST', `/api/filebatch?allow_duplicate=true&file_name=${encodeURIComponent(fileName)}`, {
    key,
    body: text,
    headers: { 'Content-Type': 'text/csv' },
  });
}

export async function uploadOk(key: string, text: string, fileName?: string): Promise<string> {
  const response = await uploadMultipart(key, text, fileName);
  if (response.status !== 200) throw new Error(`upload failed: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: { id: string } }>()).data.id;
}

export async function status(key: string, id: string): Promise<BatchRecord> {
  const response = await call('GET', `/api/filebatch/${id}`, { key });
  if (response.status !== 200) throw new Error(`status failed: ${response.status} ${await response.text()}`);
  return response.json<BatchRecord>();
}

/**
 * Waits for the real queue and Durable Object to move the batch to `wanted` (the test config flushes
 * queue batches every 50 ms). Statuses are collected to check the path taken.
 * It asks every 50 ms, the queue's own pace: each ask is a whole GET (its key check, the batch's
 * record, the contract check of the answer) run in the same isolate as the batch it waits for, and
 * asking every 10 ms spent about a tenth of the CPU of the files that wait on batches (four such
 * files: 25.5 s against 22.8 s of CPU, user + sys). The path is still seen in order
 * (test/integration/filebatch.test.ts checks the statuses it collects).
 */
export async function waitForStatus(key: string, id: string, wanted: string, seen: string[] = []): Promise<BatchRecord> {
  return vi.waitFor(
    async () => {
      const record = await status(key, id);
      if (seen[seen.length - 1] !== record.status) seen.push(record.status);
      if (record.status !== wanted) throw new Error(`batch ${id} is ${record.status}, waiting for ${wanted}`);
      return record;
    },
    { timeout: QUEUE_TEST_TIMEOUT - 2_000, interval: 50 },
  );
}

/** Parses a result CSV (every field quoted, no quote inside) into header + rows. */
export function parseResult(text: string): { header: string[]; rows: Record<string, string>[] } {
  const lines = text.split('\n').filter((line) => line.length > 0);
  const split = (line: string) => line.slice(1, -1).split('","');
  const header = split(lines[0] ?? '');
  const rows = lines.slice(1).map((line) => Object.fromEntries(split(line).map((value, i) => [header[i] ?? `?${i}`, value])));
  return { header, rows };
}

/**
 * Creates a batch through the upload service without sending its chunk messages, so a test can
 * deliver them itself (to the consumer directly) while the real queue stays out of the way.
 */
export async function createUnqueuedBatch(
  secretKey: string,
  text: string,
  fileName = 'batch.csv',
): Promise<{ id: string; messages: ChunkMessage[] }> {
  const caller = await authenticateKey(env, secretKey);
  if (!caller) throw new Error('unknown key');
  const bytes = new TextEncoder().encode(text);
  async function* source() {
    yield bytes;
  }
  const outcome = await uploadBatch(env, caller, { fileName, bytes: source() }, '203.0.113.7', systemClock, { allowDuplicate: true });
  if (!outcome.ok) throw new Error(outcome.msg);
  return { id: outcome.batch.id, messages: outcome.messages };
}

/**
 * Moves a batch made by `createUnqueuedBatch` to `queued` as its start would, without sending any
 * chunk message: the test delivers them itself, and the real queue must stay out of the way.
 */
export async function markQueuedWithoutSending(batchId: string): Promise<void> {
  await runInDurableObject(env.BATCH_PROGRESS.getByName(batchId), (_instance, state) => {
    state.storage.sql.exec("UPDATE state SET status = 'queued' WHERE status = 'pending'");
  });
}

let messageSeq = 0;
/** Delivers messages to the Worker's queue handler as `queue` would; answers the ack/retry result. */
export async function deliver(queue: string, bodies: unknown[], attempts = 1): Promise<DeliveryResult> {
  const batch = createMessageBatch(
    queue,
    bodies.map((body) => ({ id: `msg-${++messageSeq}`, timestamp: new Date(), attempts, body })),
  );
  // The pool's result names the retried messages but not the delay each asked for (the platform's
  // QueueRetryMessage has it): each message's retry() is watched to record it.
  const delays = new Map<string, number | undefined>();
  for (const message of batch.messages) {
    const retry = message.retry.bind(message);
    vi.spyOn(message, 'retry').mockImplementation((options) => {
      delays.set(message.id, options?.delaySeconds);
      retry(options);
    });
  }
  const ctx = createExecutionContext();
  const handler: ExportedHandler<Env> = worker;
  await handler.queue?.(batch, env, ctx);
  const result = await getQueueResult(batch, ctx);
  return { ...result, retryMessages: result.retryMessages.map(({ msgId }) => ({ msgId, delaySeconds: delays.get(msgId) })) };
}

/** A delivery's acks and retries, each retry with the delay it asked for (undefined: the queue's default). */
export type DeliveryResult = QueueResult & { retryMessages: { msgId: string; delaySeconds: number | undefined }[] };

/** Transactions the engine recorded for a batch, and how many distinct rows (idempotency keys) they cover. */
export async function recordedTransactions(batchId: string): Promise<{ count: number; keys: number }> {
  const merchantId = await env.DB.prepare('SELECT merchant_id FROM batches WHERE id = ?1').bind(batchId).first<string>('merchant_id');
  if (merchantId === null) return { count: 0, keys: 0 };
  // The batch's ledger shard: its records and open claims (a key claimed or recorded twice would count twice).
  const entries = (await shardEntryList(batchShardName(merchantId, batchId))).filter((stored) => stored.batchId === batchId);
  return { count: entries.length, keys: new Set(entries.map((stored) => stored.record.idempotency_key)).size };
}
