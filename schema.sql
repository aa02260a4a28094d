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
  -- The largest unreferenced credit (a credit that refunds no earlier sale), in minor units; 0
  -- refuses them. src/services/transactions/payment-resolution.ts, README "Limits".
  max_credit_amount INTEGER NOT NULL DEFAULT 100000,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- A merchant's rate tier (PATCH /admin/merchants/{id} rate_tier; docs/limits.md, "Rate tiers"): which
-- per-merchant limiter counts its API transactions. No row: 'standard'.
CREATE TABLE IF NOT EXISTS merchant_rate_tiers (
  merchant_id TEXT PRIMARY KEY REFERENCES merchants(id),
  rate_tier TEXT NOT NULL CHECK (rate_tier IN ('standard', 'high', 'max')),
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- How many ledger sub-shards a merchant's API days have (src/services/transactions/api-shards.ts;
-- docs/capacity.md, "An API day in sub-shards"): `api_shards_before` for days before
-- `api_shards_from` (a UTC day), `api_shards` from it on. Set with the rate tier. No row: one shard
-- a day. A table of its own rather than columns on merchant_rate_tiers, so that applying this file
-- to a database from before it upgrades it (ALTER TABLE is not idempotent).
CREATE TABLE IF NOT EXISTS merchant_api_shards (
  merchant_id TEXT PRIMARY KEY REFERENCES merchants(id),
  api_shards INTEGER NOT NULL CHECK (api_shards BETWEEN 1 AND 8),
  api_shards_from TEXT NOT NULL,
  api_shards_before INTEGER NOT NULL CHECK (api_shards_before BETWEEN 1 AND 8),
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- A merchant whose tier was raised before this table existed has a tier and no schedule (one shard
-- a day): applying this file gives it its tier's count (TIER_API_SHARDS: high 2, max 8) from the
-- first UTC day starting at least an hour later, the notice of any tier change, so every cached
-- caller learns it first. A merchant with a schedule is left alone, so applying the file again
-- changes nothing.
INSERT INTO merchant_api_shards (merchant_id, api_shards, api_shards_from, api_shards_before, updated_at)
  SELECT merchant_id, CASE rate_tier WHEN 'high' THEN 2 ELSE 8 END, date('now', '+1 hour', '+1 day'), 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  FROM merchant_rate_tiers WHERE rate_tier IN ('high', 'max')
  ON CONFLICT (merchant_id) DO NOTHING;

-- Exports being written now (storage/running-exports.ts): at most a few per merchant at once.
CREATE TABLE IF NOT EXISTS running_exports (
  export_id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL,
  started_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS running_exports_merchant ON running_exports(merchant_id, started_at);

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

-- Web origins allowed to frame the merchant's hosted tokenizer (PATCH /admin/merchants/{id}
-- tokenizer_origins), in the order set. Each is scheme://host[:port] exactly as browsers send it.
-- No row: no page may frame the tokenizer for this merchant.
CREATE TABLE IF NOT EXISTS tokenizer_origins (
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  position INTEGER NOT NULL,
  origin TEXT NOT NULL,
  PRIMARY KEY (merchant_id, origin)
) WITHOUT ROWID;

-- What a merchant's email receipts show besides its name (PATCH /admin/merchants/{id}
-- receipt_settings; docs/receipts.md): the card networks ask for its city and region, a website or
-- customer-service contact, and its refund policy. No row: receipts show the name only. The
-- support_email is the receipts' Reply-To.
CREATE TABLE IF NOT EXISTS merchant_receipt_settings (
  merchant_id TEXT PRIMARY KEY REFERENCES merchants(id),
  city TEXT,
  region TEXT,
  country TEXT,
  website TEXT,
  support_email TEXT,
  support_phone TEXT,
  refund_policy TEXT,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- A merchant's receipt budgets, set by the operator (admin API `receipt_limits`; docs/receipts.md,
-- "Budgets"): receipts a UTC day, a UTC minute, and to one recipient a day. NULL takes the default.
-- The counts themselves live in a ReceiptBudget object per merchant and day, not here. (The
-- service-wide pace is kept in ReceiptPace objects; the former `receipt_send_minutes` table is unused.)
CREATE TABLE IF NOT EXISTS merchant_receipt_limits (
  merchant_id TEXT PRIMARY KEY,
  daily INTEGER,
  per_minute INTEGER,
  per_recipient INTEGER,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- == BIN data (BIN lookup) ===================================================================

-- One row per stored prefix (6 to 11 digits); a lookup takes the longest stored prefix of the
-- card's digits. Columns are the lookup response's fields plus peers' prepaid/commercial/currency.
-- NULL means unknown (the field is left out of the answer).
CREATE TABLE IF NOT EXISTS bins (
  prefix TEXT PRIMARY KEY CHECK (length(prefix) BETWEEN 6 AND 11),
  card_brand TEXT,
  issuing_bank TEXT,
  card_type TEXT,
  card_level_generic TEXT,
  country TEXT,
  payment_method_type TEXT NOT NULL DEFAULT 'card',
  prepaid INTEGER,
  commercial INTEGER,
  currency TEXT,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- Enhanced lookup: account ranges, bounds padded to 19 digits (low with 0s, high with 9s) so that
-- text order is numeric order. bin6 (the first 6 digits, shared by low and high) keeps the
-- lookup on one index range.
CREATE TABLE IF NOT EXISTS bin_account_ranges (
  low TEXT NOT NULL CHECK (length(low) = 19),
  high TEXT NOT NULL CHECK (length(high) = 19),
  bin6 TEXT NOT NULL,
  card_brand TEXT,
  issuing_bank TEXT,
  card_type TEXT,
  card_level_generic TEXT,
  country TEXT,
  prepaid INTEGER,
  commercial INTEGER,
  currency TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (low, high)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bin_account_ranges_bin6 ON bin_account_ranges(bin6, low);

-- The version of the lookup data (BINs, ranges, surcharge rules). Every import or rule change
-- bumps it; cache keys carry it, so answers cached from older data are never served again.
CREATE TABLE IF NOT EXISTS bin_data_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT OR IGNORE INTO bin_data_version (id, version, updated_at) VALUES (1, 1, '2026-01-01T00:00:00.000Z');

-- Surcharge rules (docs/bin-lookup.md "Surcharge rules"): the card networks' rules and the law as
-- data. A rule applies in `country`, in `region` or in the whole country ('*'), from
-- `effective_from` (a local date of the place of sale), to the cards its conditions name (empty =
-- any): `brands` or `except_brands` (comma lists of brand ids), `funding` (credit, debit, prepaid,
-- charge), `card_class` (consumer or commercial) and `issuer_region` (domestic, area, foreign:
-- where the card was issued, relative to the place of sale). The rules of one line (same origin
-- aside, same layer, place and conditions) supersede each other by date; every line in force that
-- names the card must allow a surcharge, and at least one must (no rule: not surchargeable).
-- origin: 'shipped' rows are the release's (scripts/surcharge-rules.mjs upserts them, stamped with
-- shipped_release; rows of an older release are removed); 'operator' rows are PUT
-- /admin/surcharge-rules's and are never touched by a release.
-- (surcharge_rules, the first model's table, could not be altered in place: see below.)
CREATE TABLE IF NOT EXISTS surcharge_rules_v2 (
  origin TEXT NOT NULL CHECK (origin IN ('shipped', 'operator')),
  layer TEXT NOT NULL CHECK (layer IN ('network', 'law')),
  country TEXT NOT NULL,
  region TEXT NOT NULL,
  effective_from TEXT NOT NULL,
  brands TEXT NOT NULL DEFAULT '',
  except_brands TEXT NOT NULL DEFAULT '',
  funding TEXT NOT NULL DEFAULT '',
  card_class TEXT NOT NULL DEFAULT '' CHECK (card_class IN ('', 'consumer', 'commercial')),
  issuer_region TEXT NOT NULL DEFAULT '',
  surcharge TEXT NOT NULL CHECK (surcharge IN ('allowed', 'prohibited', 'commercial_only')),
  max_rate_bps INTEGER CHECK (max_rate_bps IS NULL OR max_rate_bps BETWEEN 0 AND 10000),
  at_cost INTEGER NOT NULL DEFAULT 0 CHECK (at_cost IN (0, 1)),
  note TEXT,
  shipped_release TEXT,
  PRIMARY KEY (origin, country, region, layer, effective_from, brands, except_brands, funding, card_class, issuer_region)
) WITHOUT ROWID;

-- One row: which release of the shipped rules the table holds, and whether the first model's
-- operator rules were copied over.
CREATE TABLE IF NOT EXISTS surcharge_rules_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  shipped_release TEXT,
  shipped_applied_at TEXT,
  legacy_copied_at TEXT
);
INSERT OR IGNORE INTO surcharge_rules_state (id) VALUES (1);

-- The first model's table (one verdict per country, region and date; a region's row replaced its
-- country's). It stays, unread by the current code, so a Worker still running the previous release
-- keeps answering while a deployment upgrades (schema first, then the code). Its rows are copied
-- once into surcharge_rules_v2 as operator rules, except the rows of its own seed (they were that
-- release's, and the shipped rules replace them).
CREATE TABLE IF NOT EXISTS surcharge_rules (
  country TEXT NOT NULL,
  region TEXT NOT NULL,
  effective_from TEXT NOT NULL,
  surcharge TEXT NOT NULL CHECK (surcharge IN ('allowed', 'prohibited', 'commercial_only')),
  max_rate_bps INTEGER,
  note TEXT,
  PRIMARY KEY (country, region, effective_from)
) WITHOUT ROWID;
INSERT OR IGNORE INTO surcharge_rules_v2 (origin, layer, country, region, effective_from, surcharge, max_rate_bps, note)
SELECT 'operator', 'law', country, region, effective_from, surcharge, max_rate_bps, note FROM surcharge_rules
WHERE (SELECT legacy_copied_at FROM surcharge_rules_state WHERE id = 1) IS NULL
  AND (country, region, effective_from, surcharge, IFNULL(max_rate_bps, -1)) NOT IN (VALUES
  ('US', '*', '2013-01-27', 'allowed', 400),
  ('US', '*', '2023-04-15', 'allowed', 300),
  ('US', 'CT', '2000-01-01', 'prohibited', -1),
  ('US', 'MA', '2000-01-01', 'prohibited', -1),
  ('US', 'ME', '2000-01-01', 'prohibited', -1),
  ('US', 'PR', '2000-01-01', 'prohibited', -1),
  ('PR', '*', '2000-01-01', 'prohibited', -1),
  ('US', 'CO', '2000-01-01', 'allowed', 200),
  ('CA', '*', '2022-10-06', 'allowed', 240),
  ('CA', 'QC', '2000-01-01', 'prohibited', -1),
  ('AT', '*', '2018-01-13', 'commercial_only', -1),
  ('BE', '*', '2018-01-13', 'commercial_only', -1),
  ('BG', '*', '2018-01-13', 'commercial_only', -1),
  ('HR', '*', '2018-01-13', 'commercial_only', -1),
  ('CY', '*', '2018-01-13', 'commercial_only', -1),
  ('CZ', '*', '2018-01-13', 'commercial_only', -1),
  ('DK', '*', '2018-01-13', 'commercial_only', -1),
  ('EE', '*', '2018-01-13', 'commercial_only', -1),
  ('FI', '*', '2018-01-13', 'commercial_only', -1),
  ('FR', '*', '2018-01-13', 'commercial_only', -1),
  ('DE', '*', '2018-01-13', 'commercial_only', -1),
  ('GR', '*', '2018-01-13', 'commercial_only', -1),
  ('HU', '*', '2018-01-13', 'commercial_only', -1),
  ('IE', '*', '2018-01-13', 'commercial_only', -1),
  ('IT', '*', '2018-01-13', 'commercial_only', -1),
  ('LV', '*', '2018-01-13', 'commercial_only', -1),
  ('LT', '*', '2018-01-13', 'commercial_only', -1),
  ('LU', '*', '2018-01-13', 'commercial_only', -1),
  ('MT', '*', '2018-01-13', 'commercial_only', -1),
  ('NL', '*', '2018-01-13', 'commercial_only', -1),
  ('PL', '*', '2018-01-13', 'commercial_only', -1),
  ('PT', '*', '2018-01-13', 'commercial_only', -1),
  ('RO', '*', '2018-01-13', 'commercial_only', -1),
  ('SK', '*', '2018-01-13', 'commercial_only', -1),
  ('SI', '*', '2018-01-13', 'commercial_only', -1),
  ('ES', '*', '2018-01-13', 'commercial_only', -1),
  ('SE', '*', '2018-01-13', 'commercial_only', -1),
  ('IS', '*', '2018-01-13', 'commercial_only', -1),
  ('LI', '*', '2018-01-13', 'commercial_only', -1),
  ('NO', '*', '2018-01-13', 'commercial_only', -1),
  ('GB', '*', '2018-01-13', 'commercial_only', -1)
);
UPDATE surcharge_rules_state SET legacy_copied_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = 1 AND legacy_copied_at IS NULL;


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

-- A customer's addresses (FluidPay's vault: POST /api/vault/customer/{id}/address, and the
-- default_billing_address / default_shipping_address of a create). `hash` is of the address's
-- fields: an identical address is refused rather than stored twice. At most 20 a customer
-- (src/services/vault/addresses.ts). New tables rather than new columns, so that applying this
-- file to a database from before them upgrades it (CREATE TABLE IF NOT EXISTS; ALTER TABLE is not
-- idempotent).
CREATE TABLE IF NOT EXISTS vault_addresses (
  merchant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  first_name TEXT,
  last_name TEXT,
  company TEXT,
  line_1 TEXT,
  line_2 TEXT,
  city TEXT,
  state TEXT,
  postal_code TEXT,
  country TEXT,
  email TEXT,
  phone TEXT,
  fax TEXT,
  hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, id),
  UNIQUE (merchant_id, customer_id, hash),
  FOREIGN KEY (merchant_id, customer_id) REFERENCES vault_customers(merchant_id, id)
);
CREATE INDEX IF NOT EXISTS vault_addresses_customer ON vault_addresses(merchant_id, customer_id, created_at);

-- What FluidPay's vault keeps on a customer beside vault_customers' columns: notes and the default
-- addresses. One row per customer at most, written when one of them is first set.
CREATE TABLE IF NOT EXISTS vault_customer_profiles (
  merchant_id TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  notes TEXT,
  default_billing_address_id TEXT,
  default_shipping_address_id TEXT,
  PRIMARY KEY (merchant_id, customer_id),
  FOREIGN KEY (merchant_id, customer_id) REFERENCES vault_customers(merchant_id, id)
);


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

-- No table here grows with the number of transactions. The ledger (every transaction, its claim
-- and its record) lives in LedgerShard Durable Objects, one per batch file and one per merchant and
-- UTC day of API transactions; the sandbox processor's memory in SandboxAcquirer objects, one per
-- processor and day (docs/architecture.md, "Capacity"). The tables an earlier schema.sql made for
-- them are dropped, so that a local database made before the ledger moved holds no such rows.
DROP TABLE IF EXISTS transactions;
DROP TABLE IF EXISTS sandbox_charges;

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
  results_deleted_at TEXT,
  -- HMAC-SHA-256 (key derived from CARD_DATA_KEY, "binbatch upload fingerprint v1") of the file's
  -- SHA-256: the same bytes uploaded again within 24 hours are refused (409) unless the upload says
  -- ?allow_duplicate=true. Keyed, as the file holds card numbers (PCI DSS 3.5.1.1).
  upload_sha256 TEXT,
  -- The upload's Idempotency-Key, if it sent one; cleared when a later upload takes the key after
  -- 24 hours. Unique per merchant: concurrent uploads under one key make one batch.
  upload_idempotency_key TEXT
);
CREATE INDEX IF NOT EXISTS batches_merchant_created ON batches(merchant_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX IF NOT EXISTS batches_upload_key ON batches(merchant_id, upload_idempotency_key) WHERE upload_idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS batches_upload_sha256 ON batches(merchant_id, upload_sha256, created_at) WHERE upload_sha256 IS NOT NULL;
CREATE INDEX IF NOT EXISTS batches_retention ON batches(ended_at) WHERE results_deleted_at IS NULL;
-- A batch's record is deleted a day after its ledger shard is archived (TRANSACTION_RETENTION_DAYS):
-- the daily cron finds them by age (services/batches/records.ts).
CREATE INDEX IF NOT EXISTS batches_created ON batches(created_at);


-- == Webhooks ================================================================================

-- A merchant's webhook endpoints (at most 10; src/services/webhooks/endpoints.ts). The signing
-- secret (`whsec_…`, shown once) is sealed with AES-256-GCM under a key derived from CARD_DATA_KEY
-- (HKDF, "binbatch webhook secret v1"), associated data "{merchant id}:{endpoint id}". After a
-- rotation the previous secret keeps signing, beside the new one, until previous_secret_expires_at.
-- `events` is a JSON array of event types.
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  sealed_secret TEXT NOT NULL,
  sealed_previous_secret TEXT,
  previous_secret_expires_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_merchant ON webhook_endpoints(merchant_id, created_at);

-- FluidPay's transaction_create events keep no row each (they travel in their queue message,
-- src/services/webhooks/transaction-events.ts): what an endpoint's merchant sees of them is this
-- summary, one row per endpoint that has had an attempt, written at most once per queue batch
-- (and, while all goes well, at most once a minute). Deleted with its endpoint, in the same D1 batch
-- (storage/webhooks.ts deleteMerchantEndpoint).
CREATE TABLE IF NOT EXISTS webhook_transaction_event_health (
  endpoint_id TEXT PRIMARY KEY REFERENCES webhook_endpoints(id),
  merchant_id TEXT NOT NULL,
  last_delivered_at TEXT,
  -- The first failed attempt since the last delivery; NULL while the endpoint takes its events.
  failing_since TEXT,
  failed_attempts INTEGER NOT NULL DEFAULT 0,
  -- Events given up after their last attempt (or after this Worker kept failing on them).
  abandoned_events INTEGER NOT NULL DEFAULT 0,
  last_failure_at TEXT,
  last_failure_status_code INTEGER,
  last_failure_error TEXT,
  last_failure_event_id TEXT,
  last_failure_transaction_id TEXT,
  last_abandoned_at TEXT,
  last_abandoned_transaction_id TEXT
);

-- One row per batch transition announced to at least one endpoint (at most one per batch and type:
-- a re-run of the transition's effects finds it and sends nothing new). `payload` is the exact JSON body sent, so
-- every attempt and redelivery sends the same bytes. It holds the batch record: no card data.
CREATE TABLE IF NOT EXISTS webhook_events (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  type TEXT NOT NULL CHECK (type IN ('batch.completed', 'batch.failed', 'settlement.completed', 'export.completed')),
  batch_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (batch_id, type)
);
-- The daily cron removes events older than 30 days with their deliveries (services/webhooks/retention.ts).
CREATE INDEX IF NOT EXISTS webhook_events_created ON webhook_events(created_at);

-- One event to one endpoint. `attempts` and `next_attempt_at` are the schedule (queue messages
-- only carry the delivery id and the attempt number they are for); `enqueued_at` marks the first
-- message as sent. The receiver's answer body is never stored; last_error says what went wrong
-- ("HTTP 500", "timed out after 10 s", "network error").
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id TEXT PRIMARY KEY,
  merchant_id TEXT NOT NULL REFERENCES merchants(id),
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id),
  event_id TEXT NOT NULL REFERENCES webhook_events(id),
  redelivery_of TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status_code INTEGER,
  last_error TEXT,
  next_attempt_at TEXT,
  delivered_at TEXT,
  enqueued_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries(event_id);


-- == Platform limits and money safety (issues 29 and 30; engineer "platform") =================
-- Added in a block of its own; every statement here is idempotent and upgrades an existing D1.

-- A file is accepted once (issue 30): one row per merchant and upload fingerprint (the keyed
-- SHA-256 of `batches.upload_sha256`) naming the batch that holds its 24-hour duplicate window.
-- An upload inserts its claim and its batch row in one transaction, the batch row only if the
-- claim is its own, so concurrent uploads of the same bytes make one batch (src/storage/batches.ts,
-- insertBatchHoldingFingerprint); `?allow_duplicate=true` takes the claim over. Claims older than
-- the window are removed by the maintenance job `upload_fingerprint_retention`.
CREATE TABLE IF NOT EXISTS upload_fingerprints (
  merchant_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, fingerprint)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS upload_fingerprints_created ON upload_fingerprints(created_at);

-- Webhook deliveries left `pending` with no queue message behind them (the queue's and the
-- dead-letter queue's retries exhausted) are ended as failed by the maintenance job
-- `webhook_stuck_deliveries` a day after their attempt was due; this partial index finds them
-- without reading the deliveries that are done (src/services/webhooks/retention.ts).
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';

-- ============================================================================================
-- Recurring billing (docs/recurring.md): add-ons, discounts, plans and subscriptions.
-- A plan's and a subscription's add-ons and discounts are stored resolved (the referenced one with
-- the overrides merged in), as JSON of at most 20 entries each: a later edit of an add-on does not
-- change what an existing plan or subscription bills, as a subscription copies its plan's fields
-- when it is created.
-- ============================================================================================
CREATE TABLE IF NOT EXISTS recurring_adjustments (
  merchant_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('addon', 'discount')),
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  amount INTEGER NOT NULL DEFAULT 0,
  percentage INTEGER NOT NULL DEFAULT 0,
  duration INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, kind, id)
);

CREATE TABLE IF NOT EXISTS recurring_plans (
  merchant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  amount INTEGER NOT NULL,
  billing_cycle_interval INTEGER NOT NULL,
  billing_frequency TEXT NOT NULL,
  billing_days TEXT NOT NULL,
  charge_on_day INTEGER NOT NULL DEFAULT 0,
  duration INTEGER NOT NULL DEFAULT 0,
  add_ons TEXT NOT NULL DEFAULT '[]',
  discounts TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, id)
);

-- One row per subscription, its billing fields resolved (its own, else its plan's). The billing run
-- pages through the due ones by (merchant_id, next_bill_date, id) with LIMIT; `lease_until` keeps
-- two runs from billing one subscription at once (the ledger's idempotency key, subscription and
-- cycle, keeps a cycle charged at most once whatever happens to the lease).
CREATE TABLE IF NOT EXISTS recurring_subscriptions (
  merchant_id TEXT NOT NULL,
  id TEXT NOT NULL,
  plan_id TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  customer_id TEXT NOT NULL,
  payment_method_id TEXT NOT NULL,
  payment_method_type TEXT NOT NULL,
  billing_address_id TEXT NOT NULL DEFAULT '',
  shipping_address_id TEXT NOT NULL DEFAULT '',
  amount INTEGER NOT NULL,
  billing_cycle_interval INTEGER NOT NULL,
  billing_frequency TEXT NOT NULL,
  billing_days TEXT NOT NULL,
  charge_on_day INTEGER NOT NULL DEFAULT 0,
  duration INTEGER NOT NULL DEFAULT 0,
  add_ons TEXT NOT NULL DEFAULT '[]',
  discounts TEXT NOT NULL DEFAULT '[]',
  po_number TEXT NOT NULL DEFAULT '',
  tax_amount INTEGER NOT NULL DEFAULT 0,
  tax_exempt INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  -- The cycle being billed (its scheduled day); the next attempt's day is next_bill_date (later
  -- than cycle_date while a declined cycle waits for its retry).
  cycle_date TEXT NOT NULL DEFAULT '',
  next_bill_date TEXT NOT NULL DEFAULT '',
  billings INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  last_transaction_id TEXT,
  last_decline TEXT,
  lease_until TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (merchant_id, id)
);
-- The billing run's cursor: the due subscriptions of a merchant in bill-date order.
CREATE INDEX IF NOT EXISTS recurring_subscriptions_due ON recurring_subscriptions (merchant_id, next_bill_date, id)
  WHERE status IN ('active', 'failing');
-- Merchants with something due, for the hourly run (one entry per merchant, not per subscription).
CREATE INDEX IF NOT EXISTS recurring_subscriptions_due_any ON recurring_subscriptions (next_bill_date, merchant_id)
  WHERE status IN ('active', 'failing');
-- The console's "needs attention" list.
CREATE INDEX IF NOT EXISTS recurring_subscriptions_status ON recurring_subscriptions (merchant_id, status, updated_at);
-- Search's order (oldest first): a page is a walk of this index from the merchant's first entry,
-- not a sort of all its subscriptions (a million for a large merchant).
CREATE INDEX IF NOT EXISTS recurring_subscriptions_created ON recurring_subscriptions (merchant_id, created_at, id);
-- ============================================================================================
-- End of recurring billing.
-- ============================================================================================
