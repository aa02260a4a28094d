/**
 * A KV namespace that enforces what Miniflare does not: one write (put or delete) per key per
 * second, a faster one throwing as production's KV does (src/lib/platform-limits.ts, `KV`). Reads
 * and listings pass through to the real binding, so the data is the real KV's.
 *
 * Every isolate and location writes to the same KV; wrap once and hand the same wrapper to all the
 * concurrent calls of a test, as they stand for isolates sharing one namespace. The clock is the
 * test's (a refused write is refused until `now` has moved a second past the last accepted one).
 */
import { KV } from '../../src/lib/platform-limits';

export interface ThrottledKv {
  kv: KVNamespace;
  /** Writes refused with a 429, by key. */
  refused: Map<string, number>;
  /** Writes accepted, by key. */
  accepted: Map<string, number>;
}

export function throttledKv(inner: KVNamespace, now: () => number = Date.now): ThrottledKv {
  const lastWrite = new Map<string, number>();
  const refused = new Map<string, number>();
  const accepted = new Map<string, number>();
  const admit = (key: string, verb: 'PUT' | 'DELETE') => {
    const at = now();
    const last = lastWrite.get(key);
    if (last !== undefined && at - last < 1_000 / KV.writesPerKeyPerSecond) {
      refused.set(key, (refused.get(key) ?? 0) + 1);
      throw new Error(KV.throttledWriteMessage.replace('PUT', verb));
    }
    // Taken before the write starts: a second write racing this one is refused, as KV refuses it.
    lastWrite.set(key, at);
    accepted.set(key, (accepted.get(key) ?? 0) + 1);
  };
  const kv = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'put') {
        return async (key: string, value: string, options?: KVNamespacePutOptions) => {
          admit(key, 'PUT');
          return target.put(key, value, options);
        };
      }
      if (property === 'delete') {
        return async (key: string) => {
          admit(key, 'DELETE');
          return target.delete(key);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { kv, refused, accepted };
}
