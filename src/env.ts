/**
 * The Worker's environment. Bindings, vars and secrets are typed by `worker-configuration.d.ts`,
 * generated from wrangler.toml by `npm run types` (the typecheck fails when it is stale); this file
 * adds only what that file cannot know: who the caller is, and Hono's context variables.
 */

/** Every binding, var and secret of the Worker (see wrangler.toml and docs/configuration.md). */
export type Env = Cloudflare.Env;

export type KeyType = 'secret' | 'public';

/** Who is calling, derived from the API key by the auth middleware. */
export interface Caller {
  merchantId: string;
  merchantName: string;
  keyId: string;
  keyType: KeyType;
  enhancedBinLookup: boolean;
  surchargeRateBps: number;
  /** The merchant's max_credit_amount: the largest unreferenced credit, in minor units (0: none). */
  maxCreditAmount: number;
  /** The merchant's rate tier (services/limits/rate-tiers.ts); absent in callers cached before tiers: the default. */
  rateTier?: 'standard' | 'high' | 'max';
  /** How many ledger sub-shards each of its API days has (services/transactions/api-shards.ts); absent: one. */
  apiShards?: import('./schemas/rate-tier').ApiShardSchedule;
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    caller: Caller;
    requestId: string;
  };
}
