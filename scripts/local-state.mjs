// Local state shared by `npm run dev` and `npm run bench`: schema, demo merchant, sample data.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { copyDocsAssets } from './docs-assets.mjs';
// The surcharge rules the release ships, and the SQL that upserts them (self-contained TypeScript,
// loaded with Node's type stripping): the same text the tests and the deploy steps run.
import { SHIPPED_RULES } from '../src/services/bin-lookup/surcharge-law/shipped-rules.ts';
import { shippedRulesSql } from '../src/storage/surcharge-rules-sql.ts';

const require = createRequire(import.meta.url);
/** wrangler's CLI entry, run with this same Node (22, from the `node` devDependency). */
export const runWrangler = join(dirname(require.resolve('wrangler/package.json')), 'bin', 'wrangler.js');

/**
 * No internet here: skip the Request.cf download (and its warning), and wrangler's telemetry.
 * X_LOCAL_OBSERVABILITY=false: wrangler dev's local observability store (a SQLite trace store under
 * .wrangler/state/v3/observability/) records every request's URL as sent, in a log row's message and
 * a span's `url.full`, whatever wrangler.toml's [observability] says (it honours neither
 * `invocation_logs = false` nor `traces.enabled = false`): a card number typed into a path would be
 * kept whole there. With it off nothing is stored; the masked terminal and the app's request log
 * stay (docs/security.md, "Card numbers in URL paths").
 */
export const localEnv = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_METRICS: 'false',
  X_LOCAL_OBSERVABILITY: 'false',
};

/** The demo merchant that `npm run dev` seeds; the curl examples of the README and docs pages use these keys. */
export const DEMO = {
  merchantId: 'demo0000000000000000',
  name: 'Demo Merchant',
  secretKey: 'api_demoSecretKey0000000000000000000',
  publicKey: 'pub_demoPublicKey0000000000000000000',
};

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const quote = (text) => `'${String(text).replace(/'/g, "''")}'`;

/** Runs SQL against the local D1 (the file wrangler dev uses), optionally in a persist dir. */
export function executeLocalSql(sql, { persistTo, config } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'binbatch-sql-'));
  const file = join(dir, 'statements.sql');
  writeFileSync(file, sql);
  try {
    const args = [runWrangler, 'd1', 'execute', 'DB', '--local', '--file', file];
    if (persistTo) args.push('--persist-to', persistTo);
    if (config) args.push('--config', config);
    execFileSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], env: localEnv });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function demoMerchantSql(now = new Date().toISOString()) {
  const keys = [
    ['key_demosecret000000000', 'secret', DEMO.secretKey],
    ['key_demopublic000000000', 'public', DEMO.publicKey],
  ];
  return [
    `INSERT OR IGNORE INTO merchants (id, name, enhanced_bin_lookup, surcharge_rate_bps, created_at, updated_at)
     VALUES (${quote(DEMO.merchantId)}, ${quote(DEMO.name)}, 0, 300, ${quote(now)}, ${quote(now)});`,
    ...keys.map(
      ([id, type, key]) =>
        `INSERT OR IGNORE INTO api_keys (id, merchant_id, type, key_hash, key_prefix, created_at)
         VALUES (${quote(id)}, ${quote(DEMO.merchantId)}, ${quote(type)}, ${quote(sha256(key))}, ${quote(key.slice(0, 8))}, ${quote(now)});`,
    ),
    // What its email receipts show besides its name (docs/receipts.md); kept if changed since.
    `INSERT OR IGNORE INTO merchant_receipt_settings (merchant_id, city, region, country, website, support_email, support_phone, refund_policy, updated_at)
     VALUES (${quote(DEMO.merchantId)}, 'Chicago', 'IL', 'US', 'https://demo-merchant.example', 'support@demo-merchant.example', '+1 312 555 0100',
       'Returns within 30 days for a full refund to the card used.', ${quote(now)});`,
    // Its receipt budgets: the service's whole pace and a big file's day, so the bench's files with
    // receipts send as fast as the service allows (docs/receipts.md, "Budgets"); kept if changed since.
    `INSERT OR IGNORE INTO merchant_receipt_limits (merchant_id, daily, per_minute, per_recipient, updated_at)
     VALUES (${quote(DEMO.merchantId)}, 1000000, 600, NULL, ${quote(now)});`,
  ].join('\n');
}

/** Lets the demo checkout's origins frame the demo merchant's tokenizer (kept: origins add up). */
export function demoTokenizerOriginsSql(origins) {
  return origins
    .map(
      (origin) =>
        `INSERT OR IGNORE INTO tokenizer_origins (merchant_id, position, origin)
         SELECT ${quote(DEMO.merchantId)}, COALESCE(MAX(position) + 1, 0), ${quote(origin)}
         FROM tokenizer_origins WHERE merchant_id = ${quote(DEMO.merchantId)};`,
    )
    .join('\n');
}

/** Runs one query against the local D1 and answers its result rows. */
export function queryLocalSql(sql, { persistTo, config } = {}) {
  const args = [runWrangler, 'd1', 'execute', 'DB', '--local', '--json', '--command', sql];
  if (persistTo) args.push('--persist-to', persistTo);
  if (config) args.push('--config', config);
  const out = execFileSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: localEnv, encoding: 'utf8' });
  return JSON.parse(out)[0]?.results ?? [];
}

/**
 * scripts/sample-bins.csv (this service's own CSV format, written for this project; unquoted
 * fields) as INSERT statements, plus a data version bump so no cached answer outlives the seed.
 */
export function sampleBinsSql(now = new Date().toISOString()) {
  const [header, ...lines] = readFileSync(new URL('./sample-bins.csv', import.meta.url), 'utf8').trim().split('\n');
  const columns = header.split(',');
  const value = (column, text) => {
    if (text === '') return 'NULL';
    if (column === 'prepaid' || column === 'commercial') return text === 'true' ? '1' : '0';
    return quote(text);
  };
  const statements = lines.map((line) => {
    const cells = line.split(',');
    const values = columns.map((column, i) => value(column, cells[i] ?? ''));
    return `INSERT OR IGNORE INTO bins (prefix, ${columns.slice(1).join(', ')}, updated_at) VALUES (${values.join(', ')}, ${quote(now)});`;
  });
  statements.push(`UPDATE bin_data_version SET version = version + 1, updated_at = ${quote(now)} WHERE id = 1;`);
  return statements.join('\n');
}

/** The SQL applying the shipped surcharge rules: an idempotent upsert (scripts/surcharge-rules.mjs). */
export async function surchargeRulesSql() {
  return (await shippedRulesSql(SHIPPED_RULES)).join('\n');
}

/**
 * Applies the schema and the shipped surcharge rules, seeds the demo merchant (idempotent) and,
 * into an empty bins table, the sample BINs.
 * `persistTo` and `config` point at another state directory and wrangler config (the benchmark's fresh
 * state); `sampleBins: false` leaves the bins table empty (the benchmark imports the full dataset).
 */
export async function seedLocalState({ persistTo, config, sampleBins = true, log = console.log } = {}) {
  const where = { persistTo, config };
  copyDocsAssets(); // wrangler needs the static assets folder (public/) complete before it starts
  log('Applying schema.sql to the local D1...');
  executeLocalSql(readFileSync('schema.sql', 'utf8'), where);
  log('Applying the shipped surcharge rules (an upsert: operator rules are kept)...');
  executeLocalSql(await surchargeRulesSql(), where);
  log(`Seeding the demo merchant (${DEMO.merchantId})...`);
  executeLocalSql(demoMerchantSql(), where);
  if (!sampleBins) return;
  const [{ n } = { n: 0 }] = queryLocalSql('SELECT COUNT(*) AS n FROM bins', where);
  if (n === 0) {
    log('Seeding the sample BINs (scripts/sample-bins.csv) into the empty bins table...');
    executeLocalSql(sampleBinsSql(), where);
  } else {
    log(`The bins table holds ${n} rows: sample BINs not seeded.`);
  }
}
