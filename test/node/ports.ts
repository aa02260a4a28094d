/**
 * Ports for the tests that start `npm run dev`. Each test file takes its ports from a range of its
 * own, below the ephemeral ports the system hands out for port 0 (32768 and up on Linux, 49152 and
 * up elsewhere): a port asked of the system is free when asked but may be handed to another server
 * (a workerd of the test pool, another `npm run dev`) before wrangler binds it, and two files picking
 * from one range could both find the same port free. The test files run beside one another, so
 * their ranges must not overlap.
 */
import { createServer } from 'node:net';

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
