#!/usr/bin/env node
/**
 * `npm run surcharge-rules [-- --remote] [--persist-to DIR] [--config FILE] [--print]`: applies the
 * surcharge rules this release ships (src/services/bin-lookup/surcharge-law/shipped-rules.ts) to
 * the D1 database: the local one (as `npm run dev` does on every start), or with `--remote` the
 * deployed one (a deploy step, docs/deploy.md). An idempotent upsert keyed by place, layer, date
 * and conditions: a corrected rule replaces the stored one, rules of older releases go, the
 * operator's own rules (PUT /admin/surcharge-rules) are never touched, and running it twice
 * changes nothing. `--print` writes the SQL to stdout instead.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { localEnv, runWrangler, surchargeRulesSql } from './local-state.mjs';

process.chdir(fileURLToPath(new URL('..', import.meta.url)));
const args = process.argv.slice(2);
const value = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};

const sql = await surchargeRulesSql();
if (args.includes('--print')) {
  process.stdout.write(`${sql}\n`);
  process.exit(0);
}
const remote = args.includes('--remote');
const dir = mkdtempSync(join(tmpdir(), 'binbatch-surcharge-rules-'));
const file = join(dir, 'surcharge-rules.sql');
writeFileSync(file, sql);
try {
  const command = [runWrangler, 'd1', 'execute', 'DB', remote ? '--remote' : '--local', '--file', file];
  const persistTo = value('--persist-to');
  const config = value('--config');
  if (persistTo) command.push('--persist-to', persistTo);
  if (config) command.push('--config', config);
  if (remote) command.push('--yes');
  execFileSync(process.execPath, command, { stdio: 'inherit', env: localEnv });
  console.log(`Shipped surcharge rules applied to the ${remote ? 'remote' : 'local'} D1 database.`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
