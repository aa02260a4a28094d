/**
 * Writing to Workers KV under its limit of one write per key per second (platform-limits.ts, `KV`):
 * a cache write is best-effort (its failure is logged and the caller goes on), and a write that
 * must land (an event changing what every isolate reads) waits a second and tries again when KV
 * refuses it for that limit.
 */
import { KV } from './platform-limits';

/** Whether KV refused a write because the key was written less than a second ago. */
export function isKvThrottled(err: unknown): boolean {
  return err instanceof Error && /\b429\b/.test(err.message);
}

/** How long to wait before trying a refused write again: past the one-second window. */
export const THROTTLE_WAIT_MS = Math.ceil(1_000 / KV.writesPerKeyPerSecond) + 100;

/** Waits `ms` (production: the runtime's scheduler; tests pass one that moves their clock). */
export type Wait = (ms: number) => Promise<void>;

export const realWait: Wait = (ms) => scheduler.wait(ms);

/**
 * Runs `write`, and again after THROTTLE_WAIT_MS each time KV refuses it for the per-key limit,
 * `attempts` times at most; any other failure, or the last refusal, is thrown.
 */
export async function writeThroughThrottle(write: () => Promise<void>, wait: Wait = realWait, attempts = 3): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!isKvThrottled(err) || attempt >= attempts) throw err;
      await wait(THROTTLE_WAIT_MS);
    }
  }
}

/**
 * A cache operation that must not fail its caller: its failure (a 429 because another isolate wrote
 * the same key this second, or KV unavailable) is logged by `what` (never the key: cache keys hold
 * card digits) and answered as `fallback`.
 */
export async function bestEffort<T>(operation: Promise<T>, what: string, fallback: T): Promise<T> {
  try {
    return await operation;
  } catch (err) {
    console.warn(
      JSON.stringify({
        level: 'warn',
        event: 'cache_operation_failed',
        cache: what,
        throttled: isKvThrottled(err),
        error: err instanceof Error ? err.name : 'unknown',
      }),
    );
    return fallback;
  }
}
