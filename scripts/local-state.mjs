// Local state shared by `npm run dev` and `npm run bench`: schema, demo merchant, sample data.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
/** wrangler's CLI entry, run with this same Node (22, from the `node` devDependency). */
export const runWrangler = join(dirname(require.resolve('wrangler/package.json')), 'bin', 'wrangler.js');

/** No internet here: skip the Request.cf download (and its warning), and wrangler's telemetry. */
export const localEnv = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_METRICS: 'false',
};

/** The demo merchant that `npm run dev` seeds; the README's curl examples use these keys. */
export const DEMO = {
  merchantId: 'demo0000000000000000',
  name: 'Demo Merchant',
  secretKey: 'api_demoSecretKey0000000000000000000',
  publicKey: 'pub_demoPublicKey0000000000000000000',
};

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const quote = (text) => `'${String(text).replace(/'/g, "''")}'`;

/**
 * Runs SQL against the local D1 (the file wrangler dev uses). `persistTo` and `config` point it at
 * another state directory and wrangler config (the benchmark's fresh state); defaults are `npm run dev`'s.
 */
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
  ].join('\n');
}

/** Applies the schema and seeds the demo merchant (idempotent). */
export async function seedLocalState({ persistTo, config, log = console.log } = {}) {
  log('Applying schema.sql to the local D1...');
  executeLocalSql((await import('node:fs')).readFileSync('schema.sql', 'utf8'), { persistTo, config });
  log(`Seeding the demo merchant (${DEMO.merchantId})...`);
  executeLocalSql(demoMerchantSql(), { persistTo, config });
}
