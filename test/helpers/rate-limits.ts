/**
 * The rate limits docs/limits.md promises: which route counts against which wrangler.toml binding,
 * with which key (the API key, or the merchant for the per-merchant limits and rate tiers). test/node/rate-limit-config.test.ts holds wrangler.toml
 * to these numbers; test/security/limits.test.ts holds the routes to them.
 */
export interface RateLimit {
  path: string;
  binding:
    | 'LOOKUP_RATE_LIMITER'
    | 'TOKENIZER_RATE_LIMITER'
    | 'TRANSACTION_RATE_LIMITER'
    | 'UPLOAD_RATE_LIMITER'
    | 'TRANSACTION_RATE_HIGH'
    | 'TRANSACTION_RATE_MAX'
    | 'SEARCH_RATE_LIMITER'
    | 'EXPORT_RATE_LIMITER';
  /** Requests per window per API key, or per merchant. */
  limit: number;
  per: 'key' | 'merchant';
  /** The merchant's rate tier, for the tier bindings. */
  tier?: 'high' | 'max';
  /** What `{}` is answered once past the limiter. */
  past: number;
  /** The window in seconds, and the Retry-After a client over the limit is given. */
  period: 60;
  type: 'secret' | 'public';
}

export const RATE_LIMITS: readonly RateLimit[] = [
  { path: '/api/lookup/bin/protected', binding: 'LOOKUP_RATE_LIMITER', limit: 1200, period: 60, type: 'secret', per: 'key', past: 400 },
  { path: '/api/tokenizer/token', binding: 'TOKENIZER_RATE_LIMITER', limit: 600, period: 60, type: 'public', per: 'key', past: 400 },
  { path: '/api/transaction', binding: 'TRANSACTION_RATE_LIMITER', limit: 3000, period: 60, type: 'secret', per: 'merchant', past: 400 },
  { path: '/api/filebatch', binding: 'UPLOAD_RATE_LIMITER', limit: 120, period: 60, type: 'secret', per: 'key', past: 415 },
  { path: '/api/transaction', binding: 'TRANSACTION_RATE_HIGH', limit: 15000, period: 60, type: 'secret', per: 'merchant', tier: 'high', past: 400 },
  { path: '/api/transaction', binding: 'TRANSACTION_RATE_MAX', limit: 60000, period: 60, type: 'secret', per: 'merchant', tier: 'max', past: 400 },
  { path: '/api/transaction/search', binding: 'SEARCH_RATE_LIMITER', limit: 300, period: 60, type: 'secret', per: 'merchant', past: 200 },
  { path: '/api/transaction/export', binding: 'EXPORT_RATE_LIMITER', limit: 10, period: 60, type: 'secret', per: 'merchant', past: 202 },
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
