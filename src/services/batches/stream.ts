/**
 * The live progress stream of one batch (GET /api/filebatch/{id}/events), as Server-Sent Events:
 *
 *   retry: 3000
 *
 *   id: processing:1500
 *   data: {"id":"bat_…","user_id":"…","file_name":"…","status":"processing","num_lines":10000,"processed_lines":1500,…}
 *
 * One event per change of `status`, `processed_lines` or `paused` (at most 4 a second; in between, only the
 * latest state is sent), each carrying the batch record exactly as GET /api/filebatch/{id}
 * answers it; the stream ends after `completed` or `failed`. The states come from the batch's
 * Durable Object as it changes them (BatchProgress.watch), not from polling D1.
 *
 * An EventSource reconnects by itself when a stream ends; it sends the last event id, and a
 * reconnection after the final state is answered 204, which tells it to stop.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { mintStreamToken, verifyStreamToken } from '../../lib/stream-token';
import { listActiveKeyIds } from '../../storage/api-keys';
import { findBatchWithCaller, findMerchantBatch, type BatchRow } from '../../storage/batches';
import { toRecord } from './records';
import type { BatchSnapshot } from './state';

/** A stream token opens the stream for this long after it is minted (a stream already open runs on). */
export const STREAM_TOKEN_TTL_SECONDS = 600;
/** How long an EventSource waits before reconnecting after a dropped connection. */
const RETRY_MS = 3_000;

export type BatchStreamOutcome = { ok: true; body: ReadableStream<Uint8Array> } | { ok: false; reason: 'not_found' | 'ended' };

const encoder = new TextEncoder();

function eventId(snapshot: Pick<BatchSnapshot, 'status' | 'processedLines' | 'paused'>): string {
  return `${snapshot.status}:${snapshot.processedLines}${snapshot.paused ? ':paused' : ''}`;
}

export async function openBatchStream(
  env: Env,
  merchantId: string,
  batchId: string,
  lastEventId: string | null,
): Promise<BatchStreamOutcome> {
  const row = await findMerchantBatch(env.DB, merchantId, batchId);
  if (!row) return { ok: false, reason: 'not_found' };
  if (lastEventId !== null && /^(completed|failed):/.test(lastEventId)) return { ok: false, reason: 'ended' };
  const feed = await env.BATCH_PROGRESS.getByName(batchId).watch();
  if (!feed) {
    // A D1 row without its object (an upload that stopped half way): its record is all there is.
    const record = toRecord(row, null);
    const text = `retry: ${RETRY_MS}\n\n${sseEvent(`${record.status}:${record.processed_lines}`, JSON.stringify(record))}`;
    return { ok: true, body: new Blob([text]).stream() };
  }
  return { ok: true, body: feed.pipeThrough(snapshotsToEvents(row)) };
}

function sseEvent(id: string, data: string): string {
  return `id: ${id}\ndata: ${data}\n\n`;
}

/** The object's JSON lines (a blank line is a heartbeat) as SSE events carrying batch records. */
function snapshotsToEvents(row: BatchRow): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  let buffered = '';
  return new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`retry: ${RETRY_MS}\n\n`));
    },
    transform(chunk, controller) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line === '') {
          controller.enqueue(encoder.encode(': keepalive\n\n'));
        } else {
          const snapshot = JSON.parse(line) as BatchSnapshot;
          controller.enqueue(encoder.encode(sseEvent(eventId(snapshot), JSON.stringify(toRecord(row, snapshot)))));
        }
        newline = buffered.indexOf('\n');
      }
    },
  });
}

/**
 * A token that opens this batch's stream without the secret key, for a browser's EventSource:
 * minted by the merchant's server (secret key) and handed to its page. Null for a batch the
 * merchant does not have.
 */
export async function mintBatchStreamToken(
  env: Env,
  caller: { merchantId: string; keyId: string },
  batchId: string,
  clock: Clock,
): Promise<{ token: string; expires_at: string; url: string } | null> {
  if (!(await findMerchantBatch(env.DB, caller.merchantId, batchId))) return null;
  const expires = Math.floor(clock().getTime() / 1_000) + STREAM_TOKEN_TTL_SECONDS;
  const token = await mintStreamToken(env.CARD_DATA_KEY, caller.merchantId, batchId, expires, caller.keyId);
  return {
    token,
    expires_at: isoTimestamp(new Date(expires * 1_000)),
    url: `/api/filebatch/${batchId}/events?token=${token}`,
  };
}

/**
 * The merchant a stream token was minted for, if it is valid for this batch now and the key that
 * minted it is still active (read from D1 at each opening, as a console session's key is); else null.
 */
export async function merchantForStreamToken(env: Env, batchId: string, token: string, clock: Clock): Promise<string | null> {
  const found = await findBatchWithCaller(env.DB, batchId);
  if (!found) return null;
  const merchantId = found.batch.merchant_id;
  const activeKeyIds = await listActiveKeyIds(env.DB, merchantId, 'secret');
  const valid = await verifyStreamToken(env.CARD_DATA_KEY, token, merchantId, batchId, Math.floor(clock().getTime() / 1_000), activeKeyIds);
  return valid ? merchantId : null;
}
