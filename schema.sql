-- binbatch: the one D1 schema. Applied by `npm run dev` and by every test file (test/setup.ts).
-- Every statement is idempotent (IF NOT EXISTS / INSERT OR IGNORE): applying it twice is harmless.
-- Statements end with ";" at the end of a line; test/setup.ts splits on that.
-- Timestamps are ISO 8601 text with milliseconds and Z. Money is INTEGER minor units.
-- No column holds a full card number or a CVC (see README "Security").

-- == Merchants and API keys ==================================================================

CREATE TABLE IF NOT EXISTS merchants (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  enhanced_bin_lookup INTEGER NOT NULL DEFAULT 0,
  surcharge_rate_bps INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Keys are stored as SHA-256 hashes only; the raw key is shown once, at creation.
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  type TEXT NOT NULL CHECK (type IN ('secret', 'public')),
  key_hash TEXT NOT NULL UNIQUE,
  key_prefix TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS api_keys_merchant ON api_keys(merchant_id);

-- == BIN data (BIN lookup) ===================================================================


-- == Tokens and customer vault ===============================================================


-- == Transactions and processors =============================================================


-- == Batches =================================================================================

-- Ownership, listing and retention of batch files. The live state and counters are in the batch's
-- Durable Object (BatchProgress); `status`, `processed_lines` and `failure_reason` here are written
-- by that object at each transition so listing and the retention cron need no object calls.
-- `columns` is the file's header (JSON array of names): chunk consumers map fields with it.
-- The uploaded file itself (card numbers, CVCs) is only in R2, and only until the batch ends.
CREATE TABLE IF NOT EXISTS batches (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  key_id TEXT NOT NULL,
  file_name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'queued', 'processing', 'completed', 'failed')),
  num_lines INTEGER NOT NULL,
  num_chunks INTEGER NOT NULL,
  processed_lines INTEGER NOT NULL DEFAULT 0,
  columns TEXT NOT NULL,
  ip_address TEXT,
  failure_reason TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  ended_at TEXT,
  results_deleted_at TEXT
);
CREATE INDEX IF NOT EXISTS batches_merchant_created ON batches(merchant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS batches_retention ON batches(ended_at) WHERE results_deleted_at IS NULL;
