/**
 * For the tests that start `npm run dev` (test/node/dev-signals.test.ts, third-party-client.test.ts).
 *
 * Ports: each file takes its ports from a range of its own, below the ephemeral ports the system
 * hands out for port 0 (32768 and up on Linux): a port asked of the system is free when asked but
 * may be handed to another server (a workerd of the test pool) before wrangler binds it.
 *
 * One server starting at a time: the node test files run beside the workerd ones and beside each
 * other, and two `npm run dev` starting together failed with "Address already in use" (wrangler's
 * inspector socket, once before the files ran one at a time and once since). `devServerTurn()` waits
 * until no other test's `npm run dev` is starting; a test gives the turn back once its server
 * answers, so the servers run side by side but never bind their sockets at the same moment.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Whether nothing listens on the port now. */
export async function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** `count` ports of first..last that nothing listens on now, lowest first. */
export async function freePortsIn(first: number, last: number, count: number): Promise<number[]> {
  const free: number[] = [];
  for (let port = first; port <= last && free.length < count; port++) if (await isFree(port)) free.push(port);
  if (free.length < count) throw new Error(`fewer than ${count} free ports in ${first}-${last}`);
  return free;
}

const LOCK = fileURLToPath(new URL('../../.wrangler/npm-run-dev.lock/', import.meta.url));

/** Whether the lock is left by a process that has ended (or, without a pid, made more than 10 s ago). */
function stale(): boolean {
  try {
    process.kill(Number(readFileSync(join(LOCK, 'pid'), 'utf8')), 0);
    return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
    try {
      return Date.now() - statSync(LOCK).mtimeMs > 10_000;
    } catch {
      return false;
    }
  }
}

/**
 * Waits (up to `timeoutMs`) until this process may start `npm run dev`, and answers the function
 * that gives the turn back (once its server answers, or when the test ends, whichever is first). A lock directory (mkdir either makes it or fails, at once) holding the
 * holder's pid: a lock left by a process that has ended (a run stopped midway) is taken over.
 */
export async function devServerTurn(timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  mkdirSync(join(LOCK, '..'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      // Given back once: a second call must not remove the turn another process has taken since.
      let held = true;
      return () => {
        if (held) rmSync(LOCK, { recursive: true, force: true });
        held = false;
      };
    } catch {
      // Held by another test, or left by a run stopped midway.
      if (stale()) rmSync(LOCK, { recursive: true, force: true });
    }
    if (Date.now() > deadline) throw new Error(`another test's npm run dev held ${LOCK} for ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
