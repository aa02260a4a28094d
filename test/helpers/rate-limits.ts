/**
 * The per-key rate limits the README's Limits table promises: which route counts against which
 * wrangler.toml binding, with which key. test/node/rate-limit-config.test.ts holds wrangler.toml
 * to these numbers; test/security/limits.test.ts holds the routes to them.
 */
export interface RateLimit {
  path: string;
  binding: 'LOOKUP_RATE_LIMITER' | 'TOKENIZER_RATE_LIMITER' | 'TRANSACTION_RATE_LIMITER';
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
];
