/**
 * Windowed dispatch for the batch's object (durable-objects/batch-progress.ts): `start` sends the
 * first BATCH_CHUNKS_IN_FLIGHT chunk messages and each chunk recorded sends the next, so a batch
 * never has more than that many in the queue shared by every merchant, and a batch uploaded later
 * waits behind at most a window of each running batch, not behind whole files. The object decides
 * when (never while paused, ended or not started); these functions send.
 */
import { isoTimestamp } from '../lib/time';
import { chunkMessages, sendChunkMessages, type LifecycleDeps } from '../services/batches/lifecycle';
import { countInFlight, markSent, nextUnsentChunks, sentUnrecordedChunks, unmarkSent } from '../storage/batch-progress';

/**
 * Fills the window: sends the next chunks not sent yet until `size` are sent and not recorded. The
 * chunks are marked sent before the send (no other call can pick them meanwhile) and unmarked if it
 * fails. Answers how many it sent.
 */
export async function fillWindow(sql: SqlStorage, lifecycle: LifecycleDeps, batchId: string, size: number): Promise<number> {
  const room = size - countInFlight(sql);
  if (room <= 0) return 0;
  const next = nextUnsentChunks(sql, room);
  if (next.length === 0) return 0;
  const now = isoTimestamp(new Date());
  const first = next[0]?.index ?? 0;
  const last = next[next.length - 1]?.index ?? 0;
  markSent(sql, first, last, now);
  try {
    await sendChunkMessages(lifecycle, chunkMessages(batchId, next));
  } catch (err) {
    // Unmarked so the window sends them again; `ever_sent` stays (a failed send may still have
    // reached the queue: a partial download must look their rows up).
    unmarkSent(sql, first, last, now);
    throw err;
  }
  return next.length;
}

/** The stall watchdog's re-send: the chunks sent but not recorded go again (their messages may have been lost). Answers how many. */
export async function resendUnrecorded(sql: SqlStorage, lifecycle: LifecycleDeps, batchId: string): Promise<number> {
  const lost = sentUnrecordedChunks(sql);
  await sendChunkMessages(lifecycle, chunkMessages(batchId, lost));
  return lost.length;
}
