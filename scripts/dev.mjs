#!/usr/bin/env node
// `npm run dev`: prepares local state, then starts `wrangler dev`. No prompts; safe to run again.
//  1. .dev.vars with a random ADMIN_TOKEN and CARD_DATA_KEY, created only when missing;
//  2. schema.sql applied to the local D1;
//  3. the demo merchant (keys shown in the README) and the sample data seeded;
//  4. wrangler dev, with any extra flags passed through (`npm run dev -- --port 9000`; with
//     `--persist-to DIR` the local state, schema and demo data included, lives in DIR), and two
//     vars for local webhooks: endpoints on http://localhost are allowed, retries come in seconds.
//     Its output goes through the card-number masker: wrangler prints each request's path, and a
//     card number typed into one must not reach the terminal or a saved log whole;
//  5. the demo checkout (examples/checkout) on the next port, an origin the demo merchant allows
//     (`--demo-port N` picks another port, `--no-demo` leaves it out).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startCheckout } from '../examples/checkout/server.mjs';
// The service's own detector (self-contained TypeScript, loaded with Node's type stripping).
import { maskCardNumbersIn } from '../src/lib/card-number.ts';
import { DEMO, demoTokenizerOriginsSql, executeLocalSql, localEnv, runWrangler, seedLocalState } from './local-state.mjs';

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

/** The value of `--name value` or `--name=value` in args. */
function flagValue(args, name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}

const args = process.argv.slice(2);
// `--persist-to DIR` (wrangler's own flag, passed on to it) keeps this run's local state in DIR:
// the schema and the demo data go there too.
const persistTo = flagValue(args, '--persist-to');
await seedLocalState({ persistTo });
// The demo's own flags, which wrangler would refuse.
const noDemo = args.includes('--no-demo');
const demoPortFlag = flagValue(args, '--demo-port');
const extra = args.filter((arg, i) => arg !== '--no-demo' && !arg.startsWith('--demo-port') && args[i - 1] !== '--demo-port');
const port = Number(flagValue(extra, '--port') ?? 8787);
const ip = flagValue(extra, '--ip');
const tokenizerUrl = `http://${!ip || ip === '0.0.0.0' || ip === '*' ? 'localhost' : ip}:${port}`;
const demoPort = Number(demoPortFlag ?? port + 1);
if (!noDemo) {
  console.log(`Allowing the demo checkout's origins (port ${demoPort}) to frame the demo merchant's tokenizer...`);
  executeLocalSql(demoTokenizerOriginsSql([`http://localhost:${demoPort}`, `http://127.0.0.1:${demoPort}`]), { persistTo });
}

// Production keeps wrangler.toml's values (no local URLs; 8 attempts over about 22 hours).
const webhookVars = ['--var', 'WEBHOOK_ALLOW_LOCAL:true', '--var', 'WEBHOOK_RETRY_DELAYS:5,10,20,40,80,160,320'];
console.log(`Starting wrangler dev ${extra.join(' ')}`.trim());
const child = spawn(process.execPath, [runWrangler, 'dev', ...webhookVars, ...extra], {
  stdio: ['inherit', 'pipe', 'pipe'],
  // Piped output is not a terminal; keep wrangler's colours when ours is one.
  env: process.stdout.isTTY ? { ...localEnv, FORCE_COLOR: '1' } : localEnv,
  // Its own process group, so a signal reaches wrangler and the workerd it started together.
  detached: true,
});
maskLines(child.stdout, process.stdout);
maskLines(child.stderr, process.stderr);
let checkout;
let stopping = false;

/**
 * SIGINT (Ctrl-C) and SIGTERM (a supervisor, `kill`) stop everything this script started: the
 * signal goes to wrangler's whole process group (wrangler and workerd), the demo checkout closes,
 * and if the group is still there 5 seconds later it is killed. The script exits when wrangler has.
 * Before, SIGTERM reached wrangler alone and left workerd serving.
 */
function stop(signal) {
  if (stopping) return;
  stopping = true;
  checkout?.close();
  signalGroup(signal);
  setTimeout(() => signalGroup('SIGKILL'), 5_000).unref();
}
function signalGroup(signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group has already gone.
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(signal));
// npm runs this script with `exec` (package.json), so npm is the parent; should npm be ended
// without passing the signal on, this script is handed to another parent, and stops the same way.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) stop('SIGTERM');
}, 500).unref();
child.on('close', (code, signal) => {
  // workerd may outlive wrangler's own exit: the group is ended either way.
  signalGroup('SIGKILL');
  checkout?.close();
  process.exit(code ?? (signal ? 1 : 0));
});

/** Copies `from` to `to` line by line with card numbers masked; a partial line without digits goes at once. */
function maskLines(from, to) {
  let pending = '';
  let timer;
  const flush = () => {
    clearTimeout(timer);
    if (pending) to.write(maskCardNumbersIn(pending));
    pending = '';
  };
  from.setEncoding('utf8');
  from.on('data', (text) => {
    pending += text;
    const end = pending.lastIndexOf('\n');
    if (end >= 0) {
      to.write(maskCardNumbersIn(pending.slice(0, end + 1)));
      pending = pending.slice(end + 1);
    }
    if (!/\d/.test(pending)) flush();
    else {
      clearTimeout(timer);
      timer = setTimeout(flush, 100);
    }
  });
  from.on('end', flush);
}

if (!noDemo) {
  startCheckout({ port: demoPort, tokenizerUrl, publicKey: DEMO.publicKey, secretKey: DEMO.secretKey }).then(
    (shop) => {
      checkout = shop;
      if (stopping) shop.close();
      else console.log(`Demo checkout: ${shop.url} (card fields served by ${tokenizerUrl})`);
    },
    (error) => console.warn(`Demo checkout not started on port ${demoPort}: ${error.message}`),
  );
}
