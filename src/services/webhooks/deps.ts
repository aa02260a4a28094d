/** What the webhook services touch, built from the Worker's env; tests may swap `fetch`, `clock`, `random`, `timeoutSignal`. */
import type { Env } from '../../env';
import { systemClock, type Clock } from '../../lib/time';
import type { WebhookDeliveryMessage } from '../../schemas/webhooks';
import { webhookConfig, type WebhookConfig } from './config';

export type OutgoingFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface WebhookDeps {
  db: D1Database;
  queue: Queue<WebhookDeliveryMessage>;
  /** CARD_DATA_KEY: signing secrets are sealed under a key derived from it (services/webhooks/secrets.ts). */
  dataKey: string;
  config: WebhookConfig;
  clock: Clock;
  fetch: OutgoingFetch;
  /** In [0, 1): the retry jitter. */
  random: () => number;
  /** A signal that aborts with a TimeoutError after `ms`: an attempt's time limit (a test fires it itself). */
  timeoutSignal: (ms: number) => AbortSignal;
}

export function webhookDeps(env: Env, clock: Clock = systemClock): WebhookDeps {
  return {
    db: env.DB,
    queue: env.WEBHOOK_QUEUE,
    dataKey: env.CARD_DATA_KEY,
    config: webhookConfig(env),
    clock,
    // Looked up at call time, so a test that intercepts globalThis.fetch intercepts deliveries too.
    fetch: (url, init) => fetch(url, init),
    random: Math.random,
    timeoutSignal: (ms) => AbortSignal.timeout(ms),
  };
}
