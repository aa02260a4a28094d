/**
 * `npm run dev` stopped with SIGTERM or SIGINT leaves nothing behind (issue 21: wrangler and workerd
 * went on serving). Starts `npm run dev` on free ports, waits until the Worker answers, records
 * every process under it, sends the signal, and checks that each of them has ended and the port
 * is closed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { devServerTurn, freePortsIn } from './ports';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Three free ports of 8870-8879 (this file's range; test/node/ports.ts), clear of the ports `npm run dev` and the browser tests use by default. */
async function freePorts(): Promise<[number, number, number]> {
  return (await freePortsIn(8870, 8879, 3)) as [number, number, number];
}

/** Every process descended from `pid` (children, their children, ...), from `ps`. */
function descendants(pid: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const [child, ppid] of table) {
      if (ppid === parent && !found.includes(child)) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return condition();
}

describe('npm run dev', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'stopped with %s, ends wrangler, workerd and the demo checkout',
    async (signal) => {
      // One `npm run dev` of the tests starting at a time (test/node/ports.ts).
      const releaseTurn = await devServerTurn(240_000);
      onTestFinished(releaseTurn);
      const [port, demoPort, inspectorPort] = await freePorts();
      // A local state of its own: the developer's .wrangler/state (perhaps made by an older schema) is not touched.
      const state = mkdtempSync(join(tmpdir(), 'binbatch-dev-signals-'));
      // Through npm, as a person or a supervisor starts it, in a process group of its own.
      const dev = spawn('npm', ['run', '--silent', 'dev', '--', '--port', String(port), '--demo-port', String(demoPort), '--inspector-port', String(inspectorPort), '--persist-to', state], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      dev.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      dev.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      let ended = false;
      const exited = new Promise<number | null>((resolve) =>
        dev.on('exit', (code) => {
          ended = true;
          resolve(code);
        }),
      );
      const healthz = `http://127.0.0.1:${port}/healthz`;
      let started: number[] = [];
      try {
        // Started, or ended early (a failed seeding step: its output says why).
        await until(async () => ended || (await answers(healthz)), 90_000);
        releaseTurn();
        expect(ended, output).toBe(false);
        expect(await answers(healthz), output).toBe(true);
        started = descendants(dev.pid as number);
        // The script, wrangler and workerd at least.
        expect(started.length, output).toBeGreaterThanOrEqual(3);

        // A supervisor's SIGTERM goes to npm alone; a terminal's Ctrl-C (SIGINT) to the whole group.
        if (signal === 'SIGTERM') dev.kill(signal);
        else process.kill(-(dev.pid as number), signal);
        await exited;
        expect(await until(() => started.every((pid) => !alive(pid)), 10_000), `left running: ${started.filter(alive).join(', ')}`).toBe(true);
        expect(await answers(healthz)).toBe(false);
        expect(await answers(`http://127.0.0.1:${demoPort}/`)).toBe(false);
      } finally {
        // Whatever the outcome, nothing of this test keeps running.
        for (const pid of [...started, ...descendants(dev.pid as number), dev.pid as number]) if (alive(pid)) process.kill(pid, 'SIGKILL');
        rmSync(state, { recursive: true, force: true });
      }
    },
    // Up to 240 s for the turn (another test's server may be starting), then the run itself.
    400_000,
  );
});
