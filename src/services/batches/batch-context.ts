/**
 * What every chunk of a batch needs and is the same for the whole batch: the batch row (its columns,
 * uploader's address, creation time), the caller it runs as (the merchant's settings), and the
 * merchant's processors. Read from D1 once per batch per isolate, not once per chunk: D1 runs one
 * query at a time per database, and the chunk queue's consumers together run hundreds of chunks a
 * second service-wide (docs/capacity.md, "Batches").
 *
 * The cache is per isolate and bounded: at most BATCH_CONTEXTS entries (a few KB each, so well
 * under a hundredth of WORKERS.isolateMemoryBytes), each kept BATCH_CONTEXT_TTL_MS. So a change to
 * the merchant's settings or processors reaches a running batch's chunks within that time (decision:
 * a batch of 500,000 rows runs for minutes; the alternative, carrying them in each message, would
 * fix them for the batch's whole run and grow every message).
 */
import type { Caller, Env } from '../../env';
import { WORKERS } from '../../lib/platform-limits';
import type { Clock } from '../../lib/time';
import { findBatchWithCaller, type BatchRow } from '../../storage/batches';
import type { ProcessorRecord } from '../../storage/processors';
import { merchantProcessors } from '../transactions/processors/registry';

export const BATCH_CONTEXTS = 256;
export const BATCH_CONTEXT_TTL_MS = 60_000;
/** An entry is a batch row, a caller and a handful of processors: a few KB (4 KB planned). */
if (BATCH_CONTEXTS * 4_096 > WORKERS.isolateMemoryBytes / 100) throw new Error('the batch context cache could pass a hundredth of the isolate memory');

export interface BatchContext {
  batch: BatchRow;
  caller: Caller;
  processors: ProcessorRecord[];
}

const cache = new Map<string, { at: number; context: Promise<BatchContext | null> }>();

/** The batch's context: from this isolate's cache while fresh, else from D1 (concurrent chunks share one read). */
export function batchContext(env: Env, batchId: string, clock: Clock): Promise<BatchContext | null> {
  const now = Date.now();
  const hit = cache.get(batchId);
  if (hit && now - hit.at < BATCH_CONTEXT_TTL_MS) return hit.context;
  const context = readContext(env, batchId, clock);
  cache.delete(batchId);
  cache.set(batchId, { at: now, context });
  // A failed or empty read is not kept: the next chunk asks again.
  context.then(
    (value) => {
      if (value === null && cache.get(batchId)?.context === context) cache.delete(batchId);
    },
    () => {
      if (cache.get(batchId)?.context === context) cache.delete(batchId);
    },
  );
  // The oldest entries go first (a Map keeps insertion order).
  while (cache.size > BATCH_CONTEXTS) {
    const oldest = cache.keys().next().value;
    if (oldest === undefined) break;
    cache.delete(oldest);
  }
  return context;
}

async function readContext(env: Env, batchId: string, clock: Clock): Promise<BatchContext | null> {
  const found = await findBatchWithCaller(env.DB, batchId);
  if (!found) return null;
  return { ...found, processors: await merchantProcessors(env.DB, found.caller.merchantId, clock) };
}

/** Forgets every entry (tests that change a merchant between chunks). */
export function forgetBatchContexts(): void {
  cache.clear();
}
