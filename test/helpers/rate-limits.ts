/**
 * The per-key rate limits docs/limits.md promises: which route counts against which
 * wrangler.toml binding, with which key. test/node/rate-limit-config.test.ts holds wrangler.toml
 * to these numbers; test/security/limits.test.ts holds the routes to them.
 */
export interface RateLimit {
  path: string;
  binding: 'LOOKUP_RATE_LIMITER' | 'TOKENIZER_RATE_LIMITER' | 'TRANSACTION_RATE_LIMITER' | 'UPLOAD_RATE_LIMITER';
  /** Requests per window per API key. */
  limit: number;
  /** The window in seconds, and the Retry-After a client over the limit is given. */
  period: 60;
  type: 'secret' | 'public';
}

export const RATE_LIMITS: readonly RateLimit[] = [
  { path: '/api/lookup/bin/protected', binding: 'LOOKUP_RATE_LIMITER', limit: 1200, period: 60, type: 'secret' },
  { path: '/api/tokenizer/token', binding: 'TOKENIZER_RATE_LIMITER', limit: 600, period: 60, type: 'public' },
  { path: '/api/transaction', binding: 'TRANSACTION_RATE_LIMITER', limit: 600, period: 60, type: 'secret' },
  { path: '/api/filebatch', binding: 'UPLOAD_RATE_LIMITER', limit: 120, period: 60, type: 'secret' },
];

/**
 * A rate-limit binding's rule (at most `limit` calls per key in each `period`-second window) on a
 * clock the test holds, to stand in for the binding with vi.spyOn. The local binding counts in
 * wall-clock windows, so a test that spent a budget on it could cross a window's end midway and
 * find a fresh one: that made a rate-limit test fail once in CI (601 calls of 600 allowed).
 */
export function limiterOnClock(limit: number, period: number, now: () => number): (options: RateLimitOptions) => Promise<RateLimitOutcome> {
  const windows = new Map<string, { window: number; count: number }>();
  return async ({ key }) => {
    const window = Math.floor(now() / (period * 1_000));
    const seen = windows.get(key);
    const count = seen?.window === window ? seen.count : 0;
    if (count >= limit) return { success: false };
    windows.set(key, { window, count: count + 1 });
    return { success: true };
  };
}
