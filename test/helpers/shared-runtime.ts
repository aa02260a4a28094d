/**
 * One workerd for many test files (vitest.config.ts, `oneRuntimePerWorker`): what test/setup.ts
 * does so that each file starts from empty storage and nothing of the file before reaches it.
 *
 * `reset()` from cloudflare:test (workerd's `deleteAllDurableObjects()`) deletes only the Durable
 * Objects that are in memory when it runs. workerd evicts an object after about 10 s without a
 * request, and an evicted object keeps its storage and its alarm through `reset()`: a file whose
 * search objects went quiet 10 s before its end left them, full, to the next file (D1, KV, R2 and
 * the rate limiters are Durable Objects too, inside Miniflare). So:
 * - every stub made in the isolate is recorded (`recordStubs`, on the namespaces' shared prototype),
 *   and at the end of a file every object a stub was made for is emptied from inside (its storage
 *   and its alarm), evicted or not (`emptyRecordedObjects`);
 * - just before `reset()`, D1, KV, R2 and the rate limiters are each sent a request, so they are in
 *   memory and `reset()` deletes them (`wakeBindings`).
 * The queue broker is an object `reset()` leaves alone (Miniflare keeps it from being evicted):
 * `ackStaleMessages` acknowledges unread what the files before queued.
 */
import { reset, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

const RECORDED = Symbol.for('binbatch.test.recordedDurableObjects');
type Recorded = Set<string>;

function isNamespace(value: unknown): value is DurableObjectNamespace {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value)?.constructor?.name === 'DurableObjectNamespace';
}

/** The Worker's own Durable Object namespaces (the pool's runner object is of another class). */
function namespaces(): DurableObjectNamespace[] {
  return Object.values(env).filter(isNamespace);
}

/**
 * The ids of every Durable Object a stub was made for in this isolate since the last
 * `emptyRecordedObjects`, whoever made it (a test, a route, another object, a queue consumer).
 * Recorded once per isolate: the prototype outlives the modules vitest evaluates afresh per file.
 */
export function recordStubs(): Recorded {
  const global = globalThis as typeof globalThis & { [RECORDED]?: Recorded };
  const existing = global[RECORDED];
  if (existing) return existing;
  const recorded: Recorded = new Set();
  global[RECORDED] = recorded;
  const [first] = namespaces();
  if (!first) return recorded;
  const prototype = Object.getPrototypeOf(first) as DurableObjectNamespace;
  const { get, getByName } = prototype;
  prototype.get = function (this: DurableObjectNamespace, id, options) {
    recorded.add(id.toString());
    return get.call(this, id, options);
  };
  prototype.getByName = function (this: DurableObjectNamespace, name, options) {
    const stub = getByName.call(this, name, options);
    recorded.add(stub.id.toString());
    return stub;
  };
  return recorded;
}

/** The namespace an id string belongs to (an id names its namespace: another one refuses it). */
function stubOf(id: string): DurableObjectStub | null {
  for (const namespace of namespaces()) {
    try {
      return namespace.get(namespace.idFromString(id));
    } catch {
      // Not this namespace's id.
    }
  }
  return null;
}

/** At most this many objects emptied at once: each is a request into the one isolate. */
const EMPTY_CONCURRENCY = 16;

/**
 * Empties, from inside, every object recorded since the last call: its storage (SQL tables and
 * key-value pairs) and its alarm, loaded or evicted. The objects stay in memory, so the
 * `reset()` before the next file also drops them. Returns how many it emptied and which failed.
 */
export async function emptyRecordedObjects(): Promise<{ emptied: number; failed: string[] }> {
  const recorded = recordStubs();
  const ids = [...recorded];
  recorded.clear();
  const failed: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++] as string;
      const stub = stubOf(id);
      if (!stub) continue;
      try {
        await runInDurableObject(stub, async (_instance, state) => {
          await state.storage.deleteAlarm();
          await state.storage.deleteAll();
        });
      } catch (err) {
        failed.push(`${id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(EMPTY_CONCURRENCY, ids.length) }, worker));
  // The stubs made above were recorded again: they are emptied, nothing to do for them next time.
  for (const id of ids) recorded.delete(id);
  return { emptied: ids.length, failed };
}

/** One request to each binding Miniflare keeps in a Durable Object, so `reset()` finds it in memory. */
async function wakeBindings(): Promise<void> {
  const wakes: Promise<unknown>[] = [];
  for (const value of Object.values(env) as unknown[]) {
    const name = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value)?.constructor?.name : undefined;
    if (name === 'D1Database') wakes.push((value as D1Database).prepare('SELECT 1').first());
    else if (name === 'KvNamespace') wakes.push((value as KVNamespace).get('\u0000wake'));
    else if (name === 'R2Bucket') wakes.push((value as R2Bucket).head('\u0000wake'));
    else if (name === 'Ratelimit') wakes.push((value as RateLimit).limit({ key: '\u0000wake' }));
  }
  await Promise.all(wakes);
}

/** Deletes everything the files before stored: what `emptyRecordedObjects` missed, then every binding. */
export async function resetStorage(): Promise<void> {
  // Objects a stub was made for after the file before ended (its stragglers): emptied too.
  await emptyRecordedObjects();
  await wakeBindings();
  await reset();
}

const KEPT = Symbol.for('binbatch.test.keepPrebundledPackages');

/**
 * Keeps the packages Vite pre-bundled (zod, hono, fast-check, ...: vitest.config.ts) evaluated from
 * one file to the next; `src/` and the tests are still evaluated afresh for every file. Evaluating
 * them again was most of a file's start (about 0.7 s of its 0.9 s, measured with six one-test
 * files): the bundles are megabytes of code holding no state of the app's. (zod's one registry
 * of schema ids already lives on `globalThis`, shared by every evaluation; a file's schemas
 * replace the previous file's under the same ids.) vitest resets every module it evaluated before
 * each file (`resetModules`, which walks its module map with `forEach`): on that map, the walk
 * passes over the pre-bundled modules.
 */
export function keepPrebundledPackages(): void {
  const worker = (globalThis as { __vitest_worker__?: { evaluatedModules?: { idToModuleMap?: Map<string, unknown> } } }).__vitest_worker__;
  const modules = worker?.evaluatedModules?.idToModuleMap as (Map<string, unknown> & { [KEPT]?: true }) | undefined;
  if (!modules || modules[KEPT]) return;
  modules[KEPT] = true;
  const forEach = modules.forEach;
  modules.forEach = function (this: Map<string, unknown>, callback, thisArg) {
    forEach.call(this, (node, id, map) => {
      if (!id.includes('/node_modules/.vite/')) callback.call(thisArg, node, id, map);
    });
  };
}

const NO_REFETCH = Symbol.for('binbatch.test.noModuleRefetch');

interface RunnerModule {
  meta?: object;
}
interface Runner {
  [NO_REFETCH]?: true;
  getModuleInformation(url: string, importer: string | undefined, cached: RunnerModule | undefined): Promise<RunnerModule>;
}

/**
 * A module evaluated afresh for the next file is not fetched from Vite again: vitest's module
 * runner keeps what it fetched (the transformed code) and asked Vite, over the pool's socket, once
 * per module and per file, whether it had changed; during a run nothing changes, and the 300 round
 * trips were part of a file's start. Not in watch mode, where a file edited between two runs must
 * be fetched again.
 */
export function fetchModulesOnce(): void {
  if (env.TEST_FETCH_MODULES_ONCE !== '1') return;
  const runner = (globalThis as { __vitest_mocker__?: { moduleRunner?: Runner } }).__vitest_mocker__?.moduleRunner;
  if (!runner || runner[NO_REFETCH]) return;
  runner[NO_REFETCH] = true;
  const fetch = runner.getModuleInformation.bind(runner);
  runner.getModuleInformation = (url, importer, cached) => (cached?.meta ? Promise.resolve(cached) : fetch(url, importer, cached));
}
