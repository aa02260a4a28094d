// Applies schema.sql (read on the Node side by vitest.config.ts) to this test file's D1, then the
// surcharge rules the release ships: what `npm run dev` and the deploy steps do.
import { env } from 'cloudflare:workers';
import { afterAll } from 'vitest';
import { applySchema, applyShippedSurchargeRules } from './helpers/schema';
import { emptyRecordedObjects, fetchModulesOnce, keepPrebundledPackages, recordStubs, resetStorage } from './helpers/shared-runtime';

if (env.TEST_SHARED_WORKERD === '1') {
  // One workerd runs the workerd files one after another (vitest.config.ts). What is kept from one
  // file to the next: the pre-bundled packages, evaluated, and every module's code, fetched once.
  keepPrebundledPackages();
  fetchModulesOnce();
  // First delete whatever the files before stored (test/helpers/shared-runtime.ts says why
  // `reset()` alone is not enough),
  recordStubs();
  await resetStorage();
  // and put back the global fetch as workerd made it (test/helpers/webhooks.ts routes it to its receivers).
  const workerdFetch = Symbol.for('binbatch.test.workerdFetch');
  const global = globalThis as typeof globalThis & { [workerdFetch]?: typeof fetch };
  global[workerdFetch] ??= globalThis.fetch;
  globalThis.fetch = global[workerdFetch];
  // Queued messages outlive reset() (the queue broker is an object it leaves alone): one the file
  // before sent, or is retrying, is acknowledged unread instead of consumed against this file's storage.
  const fileStart = Date.now();
  const worker: { queue(batch: MessageBatch<unknown>, bindings: Env): Promise<void> } = (await import('../src/index')).default;
  const consume = worker.queue.bind(worker);
  const handle = async (batch: MessageBatch<unknown>, bindings: Env): Promise<void> => {
    const fresh = batch.messages.filter((message) => message.timestamp.getTime() >= fileStart);
    if (fresh.length === batch.messages.length) return consume(batch, bindings);
    for (const message of batch.messages) if (message.timestamp.getTime() < fileStart) message.ack();
    if (fresh.length === 0) return;
    const ackAll = () => fresh.forEach((message) => message.ack());
    const retryAll = (options?: QueueRetryOptions) => fresh.forEach((message) => message.retry(options));
    return consume({ queue: batch.queue, metadata: batch.metadata, messages: fresh, ackAll, retryAll }, bindings);
  };
  // What the file leaves running (queue batches being consumed, waitUntil work) ends before the
  // file's objects are emptied: awaited here, at most 15 s, its failures no longer anyone's.
  const running = new Set<Promise<void>>();
  worker.queue = (batch, bindings) => {
    const consumed = handle(batch, bindings);
    running.add(consumed);
    consumed.then(() => running.delete(consumed), () => running.delete(consumed));
    return consumed;
  };
  const internal = (await import('cloudflare:test-internal' as string)) as { waitForGlobalWaitUntil(): Promise<void> };
  afterAll(async () => {
    const settled = Promise.allSettled([...running]).then(() => internal.waitForGlobalWaitUntil().catch(() => undefined));
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    // Every object the file made a stub for, emptied while this file's modules are still the ones
    // its objects were built from (the next file's would refuse an object built from these).
    const { failed } = await emptyRecordedObjects();
    if (failed.length > 0) throw new Error(`objects this file used could not be emptied, the next file may see them: ${failed.slice(0, 5).join('; ')}`);
  });
}
await applySchema(env.DB, env.TEST_SCHEMA ?? '');
await applyShippedSurchargeRules(env.DB);
