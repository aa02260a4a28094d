/**
 * Starts what the browser tests need and stops it afterwards: `wrangler dev` on a fresh state
 * (the bench's starter: schema, demo merchant, sample BINs, secrets of its own), the demo merchant's
 * tokenizer_origins set through the admin API, and the demo checkout on two origins.
 */
import type { FullConfig } from '@playwright/test';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { startCheckout } from '../../examples/checkout/server.mjs';
import { startServer } from '../../scripts/bench/server.mjs';
import { DEMO } from '../../scripts/local-state.mjs';
import {
  findChromium,
  FOREIGN_SHOP_URL,
  INSPECTOR_PORT,
  RESULTS_DIR,
  ROOT,
  SCREENSHOTS_DIR,
  SHOP_URL,
  TOKENIZER_URL,
  WORKER_PORT,
} from './setup';

function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', () => reject(new Error(`port ${port} is in use: the browser suite needs ports ${WORKER_PORT}-${WORKER_PORT + 2} and ${INSPECTOR_PORT} (or set BROWSER_TEST_PORT)`)));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

export default async function globalSetup(_config: FullConfig): Promise<() => Promise<void>> {
  // Never a skip: without a browser the suite fails and says how to get one.
  const chromium = findChromium();
  if (!chromium || !existsSync(chromium)) {
    throw new Error(
      `Chromium was not found (${chromium ? `CHROMIUM_PATH=${chromium} does not exist` : 'no CHROMIUM_PATH, no chromium or chromium-browser on the PATH'}): install it with \`apt-get install chromium\``,
    );
  }
  for (const port of [WORKER_PORT, WORKER_PORT + 1, WORKER_PORT + 2, INSPECTOR_PORT]) await assertPortFree(port);

  rmSync(SCREENSHOTS_DIR, { recursive: true, force: true });
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  console.log(`Browser: ${chromium}`);
  console.log(`Starting wrangler dev on ${TOKENIZER_URL} (fresh local state)...`);
  const server = await startServer({
    root: ROOT,
    entry: undefined, // wrangler.toml's main
    logDir: RESULTS_DIR,
    port: WORKER_PORT,
    inspectorPort: INSPECTOR_PORT,
    sampleBins: true,
    log: (line: string) => console.log(line),
  });
  const shops: { close(): Promise<void> }[] = [];
  try {
    const allowed = await fetch(`${server.url}/admin/merchants/${DEMO.merchantId}`, {
      method: 'PATCH',
      headers: { Authorization: server.adminToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ tokenizer_origins: [SHOP_URL] }),
    });
    if (allowed.status !== 200) throw new Error(`setting tokenizer_origins: ${allowed.status} ${await allowed.text()}`);
    for (const url of [SHOP_URL, FOREIGN_SHOP_URL]) {
      shops.push(
        await startCheckout({
          port: Number(new URL(url).port),
          tokenizerUrl: TOKENIZER_URL,
          publicKey: DEMO.publicKey,
          secretKey: DEMO.secretKey,
        }),
      );
    }
  } catch (error) {
    await Promise.all(shops.map((shop) => shop.close()));
    await server.stop();
    throw error;
  }
  process.env.BROWSER_TEST_ADMIN_TOKEN = server.adminToken;
  console.log(`Demo checkout (allowed origin): ${SHOP_URL}; not allowed: ${FOREIGN_SHOP_URL}`);
  console.log(`Screenshots will be written to ${SCREENSHOTS_DIR}`);

  return async () => {
    await Promise.all(shops.map((shop) => shop.close()));
    await server.stop();
    console.log(`Screenshots: ${SCREENSHOTS_DIR}`);
  };
}
