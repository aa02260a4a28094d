/** Webhook settings from the Worker's vars (docs/configuration.md), read once per call site. */
import type { Env } from '../../env';

export interface WebhookConfig {
  /** Seconds to wait after failed attempt 1, 2, …; one more attempt than there are delays. */
  retryDelaysSeconds: number[];
  /** http(s)://localhost and 127.0.0.1 allowed as endpoint URLs (local development only). */
  allowLocal: boolean;
  /** An attempt not answered within this is a failure. */
  timeoutMs: number;
}

/** Production: 8 attempts over about 22 hours (30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 12 h apart, ±20 %). */
export const DEFAULT_RETRY_DELAYS_SECONDS = [30, 120, 600, 3_600, 10_800, 21_600, 43_200];
export const ATTEMPT_TIMEOUT_MS = 10_000;

export function parseRetryDelays(text: string | undefined): number[] {
  if (text === undefined || text.trim() === '') return DEFAULT_RETRY_DELAYS_SECONDS;
  const delays = text.split(',').map((part) => Number(part.trim()));
  // A misconfigured list must not stop deliveries: fall back to the documented schedule.
  if (delays.length > 20 || !delays.every((delay) => Number.isInteger(delay) && delay >= 0 && delay <= 7 * 86_400)) {
    console.error(JSON.stringify({ level: 'error', event: 'webhook_retry_delays_invalid', value: text.slice(0, 200) }));
    return DEFAULT_RETRY_DELAYS_SECONDS;
  }
  return delays;
}

export function webhookConfig(env: Env): WebhookConfig {
  return {
    retryDelaysSeconds: parseRetryDelays(env.WEBHOOK_RETRY_DELAYS),
    allowLocal: env.WEBHOOK_ALLOW_LOCAL === 'true',
    timeoutMs: ATTEMPT_TIMEOUT_MS,
  };
}

export function maxAttempts(config: WebhookConfig): number {
  return config.retryDelaysSeconds.length + 1;
}

/**
 * Seconds before the attempt after failed attempt `attemptsMade`, with ±20 % jitter so that the
 * deliveries of one outage do not all come back at the same second; null when none is left.
 */
export function retryDelaySeconds(config: WebhookConfig, attemptsMade: number, random: () => number): number | null {
  const base = config.retryDelaysSeconds[attemptsMade - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.8 + 0.4 * random()));
}
