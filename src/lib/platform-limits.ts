/**
 * The Cloudflare limits this service relies on, each with its source (read 2026-11-25; the audit
 * behind them is docs/limits.md, "Platform limits"). `wrangler dev` and the vitest pool enforce
 * almost none of them (no CPU or memory limit, no KV write rate per key), so the code keeps each
 * invocation inside them by design, and a loop, a whole-table read, an RPC answer or a KV write names
 * the limit it stays under by importing it from here.
 *
 * The service's own budgets are at most half of each limit (`HALF`): headroom for what shares the
 * isolate and for the estimates behind the budgets.
 */

/** The fraction of a platform limit one invocation may plan to use. */
export const HALF = 0.5;

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Workers (HTTP, queue consumers, cron) and Durable Objects (each request and alarm):
 * https://developers.cloudflare.com/workers/platform/limits/ ,
 * https://developers.cloudflare.com/durable-objects/platform/limits/
 */
export const WORKERS = {
  /** CPU time per invocation on Workers Paid, by default (configurable to 300,000 ms; Free: 10 ms). */
  cpuMsPerInvocation: 30_000,
  /** Memory of one isolate, shared by the invocations it runs at once. */
  isolateMemoryBytes: 128 * 1_000_000,
  /** Subrequests per invocation on Workers Paid by default (older pages and the KV/D1 pages say 1,000). */
  subrequestsPerInvocation: 10_000,
  /** Subrequests the service plans on per invocation: the older 1,000 that the D1 and KV pages still state. */
  subrequestsPlanned: 1_000,
  /** Connections open at once per invocation (fetch, KV, R2, Queues, Cache); more wait for a slot. */
  simultaneousConnections: 6,
  /** Request body the edge accepts before the Worker runs: Free and Pro zones (Business 200 MB, Enterprise 500 MB). */
  requestBodyBytesFreePro: 100 * 1_000_000,
  /** Wall time of a cron, an alarm or a queue consumer invocation. */
  backgroundWallMs: 15 * 60_000,
} as const;

/**
 * Workers RPC (Durable Object stubs): arguments and return values are serialized and limited to
 * 32 MiB. https://developers.cloudflare.com/workers/runtime-apis/rpc/
 */
export const RPC = {
  payloadBytes: 32 * MIB,
} as const;

/**
 * SQLite-backed Durable Objects: https://developers.cloudflare.com/durable-objects/platform/limits/ ,
 * alarms: https://developers.cloudflare.com/durable-objects/api/alarms/
 */
export const DURABLE_OBJECTS = {
  storageBytesPerObject: 10 * 1_000_000_000,
  /** A string, BLOB or row of the object's SQLite. */
  rowBytes: 2 * 1_000_000,
  /** Length of one SQL statement. */
  statementBytes: 100 * 1_000,
  boundParameters: 100,
  /** An alarm that throws is retried this many times (exponential backoff from 2 s), then dropped. */
  alarmRetries: 6,
  /** Requests a second one object serves before it is overloaded (soft limit, simple requests). */
  requestsPerSecondSoft: 1_000,
} as const;

/** D1: https://developers.cloudflare.com/d1/platform/limits/ */
export const D1 = {
  boundParameters: 100,
  rowBytes: 2 * 1_000_000,
  statementBytes: 100 * 1_000,
  queriesPerInvocation: 1_000,
  databaseBytes: 10 * 1_000_000_000,
} as const;

/**
 * Workers KV: https://developers.cloudflare.com/kv/platform/limits/ ; the 429 on a second write to
 * one key within a second: https://developers.cloudflare.com/kv/api/write-key-value-pairs/ ("Limits
 * to KV writes to the same key", cloudflare/cloudflare-docs#18041), whose text as thrown is quoted in
 * https://github.com/rhinobase/hono-rate-limiter/issues/34.
 */
export const KV = {
  /** Writes (a put or a delete) to one key: more than one a second throws (429). */
  writesPerKeyPerSecond: 1,
  /** The error a put refused by that limit throws (a delete's says DELETE). */
  throttledWriteMessage: 'KV PUT failed: 429 Too Many Requests',
  operationsPerInvocation: 1_000,
  minExpirationTtlSeconds: 60,
  keyBytes: 512,
  /** How long a write (or a cached miss) may take to be seen in other locations. */
  propagationSeconds: 60,
} as const;

/** R2 multipart uploads: https://developers.cloudflare.com/r2/objects/multipart-objects/ */
export const R2 = {
  /** Every part but the last must be at least this big, and all of them the same size. */
  minPartBytes: 5 * MIB,
  maxParts: 10_000,
  /** Keys one `delete` call may name. */
  keysPerDelete: 1_000,
} as const;

/** Queues: https://developers.cloudflare.com/queues/platform/limits/ */
export const QUEUES = {
  messageBytes: 128 * 1_000,
  messagesPerSendBatch: 100,
  bytesPerSendBatch: 256 * 1_000,
  maxRetries: 100,
  maxDelaySeconds: 24 * 3_600,
} as const;

/**
 * Cloudflare Email Service, the `send_email` binding (public beta since 2026-04-16; Workers Paid):
 * https://developers.cloudflare.com/email-service/platform/limits/ ,
 * https://developers.cloudflare.com/email-service/reference/headers/ . The daily sending limit is
 * per account and set by Cloudflare from the account's standing (no fixed number is published):
 * the service paces itself at RECEIPT_SENDS_PER_MINUTE, which the operator keeps under it
 * (docs/receipts.md, "At the limit").
 */
export const EMAIL_SERVICE = {
  /**
   * The Workers binding's subrequests per request, send operations included (the limits page's
   * "Workers binding limits" table, beside 50 ms CPU and 128 MB). Whether that row means Free plans
   * only is not said, so the sender keeps under it on every plan: a run is one alarm invocation with
   * at most RECEIPT_SENDS_PER_RUN (40) sends and a few calls besides.
   */
  subrequestsPerRequest: 50,
  /** Recipients of one message, to, cc and bcc combined (a receipt has one). */
  recipientsPerMessage: 50,
  subjectChars: 998,
  /** One message, attachments included (25 MiB only to verified addresses). */
  messageBytes: 5 * MIB,
  /** All custom headers of one message together. */
  customHeaderBytes: 16 * 1_000,
  /** One custom header's value. */
  headerValueBytes: 2_048,
} as const;
