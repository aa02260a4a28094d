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

-- Temp tokens live in the TOKENS KV namespace (sealed, 15-minute TTL), not here.
-- Customer ids are the merchant's own (or generated): unique per merchant, not globally.
CREATE TABLE IF NOT EXISTS vault_customers (
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  id TEXT NOT NULL,
  description TEXT,
  email TEXT,
  surcharge_exempt INTEGER NOT NULL DEFAULT 0,
  default_payment_method_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, id)
);

-- One row per card or bank account. `sealed_number` is the card number or ACH account number
-- sealed with card-crypto (associated data = merchant id); every other column is safe to show:
-- `masked` keeps first 6 + last 4 of a card, last 4 of an account. No CVC column, by design.
CREATE TABLE IF NOT EXISTS vault_payment_methods (
  merchant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('card', 'ach')),
  sealed_number TEXT NOT NULL,
  masked TEXT NOT NULL,
  expiration TEXT,
  routing_number TEXT,
  account_type TEXT CHECK (account_type IS NULL OR account_type IN ('checking', 'savings')),
  sec_code TEXT CHECK (sec_code IS NULL OR sec_code IN ('WEB', 'CCD', 'PPD')),
  created_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, id),
  FOREIGN KEY (merchant_id, customer_id) REFERENCES vault_customers(merchant_id, id)
);
CREATE INDEX IF NOT EXISTS vault_payment_methods_customer ON vault_payment_methods(merchant_id, customer_id, created_at);


-- == Transactions and processors =============================================================


-- == Batches =================================================================================

