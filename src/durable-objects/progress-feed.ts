/**
 * Live feeds of one object's state for its open streams (the batch progress stream). Each reader
 * gets the current state at once, then the latest state at most once per `minIntervalMs` while it
 * changes (intermediate states are skipped, never reordered), the final state as soon as it
 * happens, and then the end of the stream. A blank line every `heartbeatMs` keeps idle
 * connections open through proxies.
 *
 * Output: one JSON document per line (`encode(state)`), a blank line as heartbeat; bytes, so the
 * stream can be handed across an RPC boundary.
 */

export interface FeedTimers {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(run: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const systemTimers: FeedTimers = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as number),
  setInterval: (run, ms) => setInterval(run, ms),
  clearInterval: (handle) => clearInterval(handle as number),
};

export interface FeedOptions<T> {
  minIntervalMs: number;
  heartbeatMs: number;
  isFinal: (state: T) => boolean;
  encode: (state: T) => string;
  timers?: FeedTimers;
}

interface Reader {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** The last line sent, so an unchanged state is not sent twice. */
  last: string;
}

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode('\n');

export class ProgressFeed<T> {
  readonly #options: FeedOptions<T>;
  readonly #timers: FeedTimers;
  readonly #readers = new Set<Reader>();
  #latest: T | null = null;
  #lastFlushAt = Number.NEGATIVE_INFINITY;
  #flushTimer: unknown = null;
  #heartbeat: unknown = null;

  constructor(options: FeedOptions<T>) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
  }

  /** How many streams are open. */
  get readers(): number {
    return this.#readers.size;
  }

  /** A stream that starts with `current`; it ends at once if `current` is final. */
  open(current: T): ReadableStream<Uint8Array> {
    let reader: Reader | null = null;
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        const line = this.#options.encode(current);
        controller.enqueue(encoder.encode(`${line}\n`));
        if (this.#options.isFinal(current)) {
          controller.close();
          return;
        }
        reader = { controller, last: line };
        this.#readers.add(reader);
        this.#startHeartbeat();
      },
      cancel: () => {
        if (reader) this.#remove(reader);
      },
    });
  }

  /** A new state: sent now, or at the end of the current interval, or (final) now and then the end. */
  publish(state: T): void {
    if (this.#readers.size === 0) return;
    this.#latest = state;
    if (this.#options.isFinal(state)) {
      this.#flush();
      return;
    }
    const wait = this.#lastFlushAt + this.#options.minIntervalMs - this.#timers.now();
    if (wait <= 0) {
      this.#flush();
    } else if (this.#flushTimer === null) {
      this.#flushTimer = this.#timers.setTimeout(() => this.#flush(), wait);
    }
  }

  #flush(): void {
    if (this.#flushTimer !== null) {
      this.#timers.clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    const state = this.#latest;
    if (state === null) return;
    this.#latest = null;
    this.#lastFlushAt = this.#timers.now();
    const line = this.#options.encode(state);
    const final = this.#options.isFinal(state);
    for (const reader of [...this.#readers]) {
      try {
        if (reader.last !== line) reader.controller.enqueue(encoder.encode(`${line}\n`));
        reader.last = line;
        if (final) {
          reader.controller.close();
          this.#remove(reader);
        }
      } catch {
        // The reader went away between two states.
        this.#remove(reader);
      }
    }
  }

  #remove(reader: Reader): void {
    this.#readers.delete(reader);
    if (this.#readers.size > 0) return;
    if (this.#heartbeat !== null) {
      this.#timers.clearInterval(this.#heartbeat);
      this.#heartbeat = null;
    }
    if (this.#flushTimer !== null) {
      this.#timers.clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    this.#latest = null;
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== null) return;
    this.#heartbeat = this.#timers.setInterval(() => {
      for (const reader of [...this.#readers]) {
        try {
          reader.controller.enqueue(HEARTBEAT);
        } catch {
          this.#remove(reader);
        }
      }
    }, this.#options.heartbeatMs);
  }
}
