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

-- A merchant's processors; exactly one is the default. A merchant without any gets the built-in
-- sandbox processor "sandbox_<merchant id>" on first use (src/services/processors/registry.ts).
CREATE TABLE IF NOT EXISTS processors (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  type TEXT NOT NULL CHECK (type IN ('sandbox')),
  name TEXT NOT NULL,
  is_default INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS processors_merchant ON processors(merchant_id);
CREATE UNIQUE INDEX IF NOT EXISTS processors_one_default ON processors(merchant_id) WHERE is_default = 1;

-- One row per processed transaction: the result CSV's columns plus what the CSV cannot show.
-- masked_account keeps the first 6 (or 8) and last 4 digits; no full card number, no CVC.
CREATE TABLE IF NOT EXISTS transactions (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  idempotency_key TEXT NOT NULL,
  -- HMAC-SHA256 (key derived from CARD_DATA_KEY) of the canonical request: a replay with another body is refused.
  request_hash TEXT NOT NULL,
  batch_id TEXT,
  line INTEGER,
  user_name TEXT,
  type TEXT NOT NULL,
  transaction_source TEXT NOT NULL,
  ip_address TEXT,
  amount INTEGER NOT NULL,
  amount_authorized INTEGER NOT NULL,
  amount_captured INTEGER NOT NULL,
  amount_settled INTEGER NOT NULL,
  tip INTEGER NOT NULL,
  service_fee INTEGER NOT NULL,
  tax_amount INTEGER NOT NULL,
  tax_exempt INTEGER NOT NULL,
  shipping_amount INTEGER NOT NULL,
  po_number TEXT,
  order_id TEXT,
  settlement_batch_id TEXT,
  referenced_transaction_id TEXT,
  payment_method TEXT NOT NULL,
  payment_type TEXT NOT NULL,
  response TEXT NOT NULL,
  response_code INTEGER NOT NULL,
  status TEXT NOT NULL,
  processor_type TEXT,
  processor_id TEXT,
  processor_name TEXT,
  subscription_id TEXT,
  currency_iso_code TEXT NOT NULL,
  customer_id TEXT,
  email_address TEXT,
  billing_first_name TEXT,
  billing_last_name TEXT,
  billing_company TEXT,
  billing_address_line_1 TEXT,
  billing_address_line_2 TEXT,
  billing_city TEXT,
  billing_state TEXT,
  billing_postal_code TEXT,
  billing_country TEXT,
  billing_email TEXT,
  billing_phone TEXT,
  billing_fax TEXT,
  shipping_first_name TEXT,
  shipping_last_name TEXT,
  shipping_company TEXT,
  shipping_address_line_1 TEXT,
  shipping_address_line_2 TEXT,
  shipping_city TEXT,
  shipping_state TEXT,
  shipping_postal_code TEXT,
  shipping_country TEXT,
  shipping_email TEXT,
  shipping_phone TEXT,
  shipping_fax TEXT,
  created_at TEXT NOT NULL,
  captured_at TEXT,
  settled_at TEXT,
  card_type TEXT,
  entry_type TEXT,
  masked_account TEXT,
  expiration TEXT,
  auth_code TEXT,
  processor_response_code TEXT,
  processor_response_text TEXT,
  sec_code TEXT,
  account_type TEXT,
  avs_response_code TEXT,
  cvv_response_code TEXT,
  -- Request fields the result CSV has no column for.
  base_amount INTEGER,
  surcharge INTEGER NOT NULL,
  discount_amount INTEGER NOT NULL,
  surcharge_exempt INTEGER NOT NULL,
  email_receipt INTEGER NOT NULL,
  description TEXT,
  card_brand TEXT,
  UNIQUE (merchant_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS transactions_batch ON transactions(batch_id) WHERE batch_id IS NOT NULL;


-- == Batches =================================================================================

