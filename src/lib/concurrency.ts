/** Maps with at most `limit` calls in flight, answers in input order. */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Caches a promise per key: concurrent callers with the same key share one call. */
export function memoise<A, R>(key: (arg: A) => string, fn: (arg: A) => Promise<R>): (arg: A) => Promise<R> {
  const cache = new Map<string, Promise<R>>();
  return (arg) => {
    const k = key(arg);
    let hit = cache.get(k);
    if (!hit) {
      hit = fn(arg);
      cache.set(k, hit);
    }
    return hit;
  };
}
