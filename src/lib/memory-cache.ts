/**
 * A small cache in the isolate's memory: bounded (the oldest entry goes first) and, optionally,
 * with a time to live. It saves binding calls on hot paths (a warm lookup, a batch chunk) where
 * the answer is already versioned or may be a few seconds old.
 */
export class MemoryCache<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();

  constructor(
    readonly limit: number,
    readonly ttlMs = Number.POSITIVE_INFINITY,
    readonly now: () => number = Date.now,
  ) {}

  /** The value, or undefined when absent or expired (null is a value: a cached miss). */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.until <= this.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V): V {
    if (!this.#entries.has(key) && this.#entries.size >= this.limit) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, until: this.now() + this.ttlMs });
    return value;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
