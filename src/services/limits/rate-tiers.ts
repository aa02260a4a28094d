/**
 * Rate tiers (docs/limits.md, "Rate tiers"): how many API transactions a merchant may send, counted
 * per merchant, not per key, so a merchant's rate is not the number of keys it holds. The operator
 * sets a merchant's tier through the admin API (`rate_tier`); a merchant without one is `standard`.
 *
 * Each tier is a Rate Limiting binding of its own (a binding's limit is fixed in wrangler.toml), and
 * every binding counts per Cloudflare location, approximately: a guard against a runaway client or a
 * stolen key, sized so the tier's merchants never meet it in normal traffic.
 */
import type { Caller, Env } from '../../env';

import { DEFAULT_RATE_TIER, RATE_TIERS, type RateTier } from '../../schemas/rate-tier';

export { DEFAULT_RATE_TIER, RATE_TIERS, type RateTier };

/** The window of every tier binding (wrangler.toml `period`), the Retry-After a client over it is given. */
export const TIER_PERIOD_SECONDS = 60;

/**
 * API transactions (POST /api/transaction and the operations on one) per merchant per minute:
 * standard 50 a second, high 250, max 1,000 (the peak docs/capacity.md designs one merchant for).
 */
export const TRANSACTION_TIER_LIMITS: Record<RateTier, number> = { standard: 3_000, high: 15_000, max: 60_000 };

export function transactionLimiter(env: Env, tier: RateTier): RateLimit {
  switch (tier) {
    case 'standard':
      return env.TRANSACTION_RATE_LIMITER;
    case 'high':
      return env.TRANSACTION_RATE_HIGH;
    case 'max':
      return env.TRANSACTION_RATE_MAX;
  }
}

/** A caller's tier; a caller cached before tiers existed carries none and is the default. */
export function tierOf(caller: Caller): RateTier {
  return caller.rateTier !== undefined && (RATE_TIERS as readonly string[]).includes(caller.rateTier) ? caller.rateTier : DEFAULT_RATE_TIER;
}

/**
 * Searches and exports have limits of their own, per merchant, whatever the tier: a first page may
 * read up to SEARCH_ROWS_READ_MAX index rows (services/search/limits.ts), so 300 a minute bounds what
 * one merchant's dashboards and integrations can make the index read; an export reads its whole
 * window, so 10 may start a minute and EXPORTS_RUNNING_MAX run at once.
 */
export const SEARCH_RATE_PER_MINUTE = 300;
export const EXPORT_RATE_PER_MINUTE = 10;
