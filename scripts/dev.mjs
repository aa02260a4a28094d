#!/usr/bin/env node
// `npm run dev`: prepares local state, then starts `wrangler dev`. No prompts; safe to run again.
//  1. .dev.vars with a random ADMIN_TOKEN and CARD_DATA_KEY, created only when missing;
//  2. schema.sql applied to the local D1;
//  3. the demo merchant (keys shown in the README) and the sample data seeded;
//  4. wrangler dev, with any extra flags passed through (`npm run dev -- --port 9000`), and two
//     vars for local webhooks: endpoints on http://localhost are allowed, retries come in seconds.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { localEnv, runWrangler, seedLocalState } from './local-state.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

const devVars = '.dev.vars';
if (!existsSync(devVars)) {
  const adminToken = randomBytes(24).toString('base64url');
  const cardDataKey = randomBytes(32).toString('base64');
  writeFileSync(
    devVars,
    `# Local secrets for wrangler dev (created by npm run dev; not committed).\nADMIN_TOKEN=${adminToken}\nCARD_DATA_KEY=${cardDataKey}\n`,
    { mode: 0o600 },
  );
  console.log(`Created ${devVars} with a random ADMIN_TOKEN and CARD_DATA_KEY.`);
}

await seedLocalState();

const extra = process.argv.slice(2);
// Production keeps wrangler.toml's values (no local URLs; 8 attempts over about 22 hours).
const webhookVars = ['--var', 'WEBHOOK_ALLOW_LOCAL:true', '--var', 'WEBHOOK_RETRY_DELAYS:5,10,20,40,80,160,320'];
console.log(`Starting wrangler dev ${extra.join(' ')}`.trim());
const child = spawn(process.execPath, [runWrangler, 'dev', ...webhookVars, ...extra], { stdio: 'inherit', env: localEnv });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
