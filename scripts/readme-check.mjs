#!/usr/bin/env node
/**
 * `npm run readme:check [-- --port 8787 --inspector-port 9229]`: follows the examples of the README
 * and the docs pages (EXAMPLE_PAGES in readme-curls.mjs) in order, as a new user would, against the service started the way `npm run dev` starts it, but on
 * a fresh local state of its own (a temporary persist directory: the developer's .wrangler/state is
 * never touched). Every command must succeed and every `# → answer` written under a command must
 * match what it printed (`…` stands for any text; a leading status code is informative). At the
 * end it loads the OpenBIIN dataset when ../shared/data/bins/openbiin exists, as docs/deploy.md's last
 * step says. Exits 1 on the first difference, printing the command, the expected and the actual.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { localEnv, runWrangler, seedLocalState } from './local-state.mjs';
import { EXAMPLE_PAGES, shellCommands } from './readme-curls.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && args[at + 1] ? args[at + 1] : fallback;
};
const port = Number(option('--port', '8787'));
const inspectorPort = Number(option('--inspector-port', '9229'));
const base = `http://localhost:${port}`;

const OPENBIIN = join(root, '..', 'shared', 'data', 'bins', 'openbiin');

// 1. What `npm run dev` does, on a fresh state.
if (!existsSync('.dev.vars')) {
  writeFileSync(
    '.dev.vars',
    `# Local secrets for wrangler dev (created by npm run readme:check; not committed).\nADMIN_TOKEN=${randomBytes(24).toString('base64url')}\nCARD_DATA_KEY=${randomBytes(32).toString('base64')}\n`,
    { mode: 0o600 },
  );
}
const persistTo = mkdtempSync(join(tmpdir(), 'binbatch-readme-'));
await seedLocalState({ persistTo, log: (line) => console.log(`  ${line}`) });
const server = spawn(
  process.execPath,
  [runWrangler, 'dev', '--persist-to', persistTo, '--port', String(port), '--inspector-port', String(inspectorPort), '--ip', '127.0.0.1', '--show-interactive-dev-session=false'],
  { env: localEnv, stdio: ['ignore', 'pipe', 'pipe'] },
);
let serverLog = '';
server.stdout.on('data', (chunk) => (serverLog += chunk));
server.stderr.on('data', (chunk) => (serverLog += chunk));
const stop = () => {
  server.kill('SIGTERM');
  rmSync(persistTo, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  stop();
  process.exit(130);
});

let failures = 0;
try {
  await waitForServer();
  // 2. The ```sh commands of the README and the docs pages (EXAMPLE_PAGES), in order, in one shell
  // (variables carry over from one to the next); ```sh no-check and ```console blocks are not run.
  const commands = EXAMPLE_PAGES.flatMap((page) =>
    shellCommands(readFileSync(page, 'utf8'))
      .filter((command) => command.check)
      .map((command) => ({ ...command, page })),
  );
  const steps = [];
  for (const command of commands) {
    let text = command.text.replaceAll('http://localhost:8787', base);
    if (/npm run bins:import -- \.\.\/shared\/data\/bins\/openbiin\s*$/.test(text)) {
      if (!existsSync(OPENBIIN)) continue;
      text += ` --url ${base}`;
    } else if (/bins:import/.test(text)) continue; // the deployed Worker's import
    steps.push({ command, script: capture(text) });
  }
  const script = steps.map((step, i) => `echo "@@step ${i} start"\n${step.script}\necho\necho "@@step ${i} exit $?"`).join('\n');
  const run = spawnSync('bash', ['-c', `set -o pipefail\n${script}`], { cwd: root, encoding: 'utf8', timeout: 10 * 60_000, env: { ...process.env, ...localEnv } });
  const outputs = parseSteps(run.stdout);
  for (const [i, step] of steps.entries()) {
    const result = outputs.get(i);
    const shown = `${step.command.page}: ${step.command.text.split('\n')[0]}`;
    const problem = result === undefined ? 'did not run' : check(step.command, result);
    if (problem) {
      failures++;
      console.log(`✗ ${shown}\n  ${problem}`);
    } else {
      console.log(`✓ ${shown}${step.command.expected.length > 0 ? '   (answer as the page shows)' : ''}`);
    }
  }
  if (run.stderr.trim()) console.log(`\nstderr of the commands:\n${run.stderr.trim().slice(0, 4000)}`);
  console.log(`\n${steps.length - failures} passed, ${failures} failed`);
} catch (err) {
  failures++;
  console.error(String(err), `\nserver log:\n${serverLog.slice(-4000)}`);
} finally {
  stop();
}
process.exit(failures === 0 ? 0 : 1);

async function waitForServer() {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error('wrangler dev exited before answering');
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`no answer on ${base}/healthz within 90 s`);
}

/**
 * The command as the shell runs it. `VAR=$(curl … | sed …)` keeps the curl's raw answer too, so the
 * `# →` line under it (which shows that answer) can be checked, and the captured value is printed.
 */
function capture(text) {
  const assignment = /^([A-Z_]+)=\$\(([\s\S]*)\)$/.exec(text);
  if (!assignment) return text;
  const [, name, inner] = assignment;
  const pipe = inner.lastIndexOf('| sed');
  if (pipe < 0) return `${text}\nprintf '%s' "$${name}"`;
  return `__raw=$(${inner.slice(0, pipe).replace(/\\\s*$/, '')})\nprintf '%s' "$__raw"\n${name}=$(printf '%s' "$__raw" ${inner.slice(pipe)})\n[ -n "$${name}" ] && [ "$${name}" != "$__raw" ]`;
}

function parseSteps(stdout) {
  const outputs = new Map();
  const pattern = /@@step (\d+) start\n([\s\S]*?)\n@@step \1 exit (\d+)/g;
  for (const match of stdout.matchAll(pattern)) outputs.set(Number(match[1]), { output: match[2].trim(), code: Number(match[3]) });
  return outputs;
}

/** null when the step did what the README says, else what differs. */
function check(command, { output, code }) {
  if (code !== 0) return `exit code ${code}; output: ${output.slice(0, 500)}`;
  if (command.expected.length === 0) {
    return /"status":"failed"/.test(output) ? `answered an error the README does not show: ${output.slice(0, 500)}` : null;
  }
  for (const line of command.expected) {
    const wanted = line.replace(/\s{2,}\(.*\)\s*$/, '').replace(/^\d{3}\s+/, '');
    const pattern = new RegExp(`^${escape(squash(wanted)).replaceAll('…', '.*')}$`, 's');
    if (!pattern.test(squash(output))) return `expected: ${wanted}\n  actual:   ${output.slice(0, 800)}`;
  }
  return null;
}

/** JSON answers compared without the spaces the README adds for reading. */
function squash(text) {
  return text.replace(/\s+/g, '');
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
