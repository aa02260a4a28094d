import type { BatchProgress } from './durable-objects/batch-progress';
import type { ChunkMessage } from './schemas/queue';
import type { WebhookDeliveryMessage } from './schemas/webhooks';

/** Every binding, var and secret of the Worker (see wrangler.toml and README "Configuration"). */
export interface Env {
  DB: D1Database;
  BIN_CACHE: KVNamespace;
  TOKENS: KVNamespace;
  FILES: R2Bucket;
  BATCH_QUEUE: Queue<ChunkMessage>;
  BATCH_PROGRESS: DurableObjectNamespace<BatchProgress>;
  WEBHOOK_QUEUE: Queue<WebhookDeliveryMessage>;
  LOOKUP_RATE_LIMITER: RateLimit;
  TOKENIZER_RATE_LIMITER: RateLimit;
  TRANSACTION_RATE_LIMITER: RateLimit;

  BATCH_CHUNK_ROWS: string;
  BATCH_MAX_BYTES: string;
  BATCH_MAX_ROWS: string;
  BATCH_STALL_MINUTES: string;
  BATCH_RETENTION_DAYS: string;
  BIN_CACHE_TTL_SECONDS: string;
  WEBHOOK_ALLOW_LOCAL: string;
  WEBHOOK_RETRY_DELAYS: string;

  /** Secret: operators' token for /admin/*. */
  ADMIN_TOKEN: string;
  /** Secret: base64 of 32 random bytes, the AES-256-GCM key for card numbers at rest. */
  CARD_DATA_KEY: string;
}

export type KeyType = 'secret' | 'public';

/** Who is calling, derived from the API key by the auth middleware. */
export interface Caller {
  merchantId: string;
  merchantName: string;
  keyId: string;
  keyType: KeyType;
  enhancedBinLookup: boolean;
  surchargeRateBps: number;
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    caller: Caller;
    requestId: string;
  };
}

type WorkerEnv = Env;

declare global {
  namespace Cloudflare {
    // Lets `env` from `cloudflare:workers` (used in tests) carry our bindings.
    interface Env extends WorkerEnv {
      TEST_SCHEMA?: string;
    }
    // Types `exports` from `cloudflare:workers` (tests call exports.default.fetch / .queue).
    interface GlobalProps {
      mainModule: typeof import('./index');
      durableNamespaces: 'BatchProgress';
    }
  }
}
