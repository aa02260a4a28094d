/**
 * What the browser suite runs against, shared by its config, global setup and tests: the Worker
 * under `wrangler dev` on a fresh local state, and the demo checkout served from two more origins,
 * one the demo merchant allows and one it does not.
 */
import { existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
/** Ports of this suite (override with BROWSER_TEST_PORT: it and the next two; inspector BROWSER_TEST_INSPECTOR_PORT). */
export const WORKER_PORT = Number(process.env.BROWSER_TEST_PORT ?? 8790);
export const INSPECTOR_PORT = Number(process.env.BROWSER_TEST_INSPECTOR_PORT ?? 9290);
/** The Worker on 127.0.0.1 and the shops on localhost: another site, as a real merchant is. */
export const TOKENIZER_URL = `http://127.0.0.1:${WORKER_PORT}`;
export const SHOP_URL = `http://localhost:${WORKER_PORT + 1}`;
export const FOREIGN_SHOP_URL = `http://localhost:${WORKER_PORT + 2}`;

export const RESULTS_DIR = join(ROOT, 'test-results');
export const SCREENSHOTS_DIR = join(RESULTS_DIR, 'screenshots');

/** Chromium from CHROMIUM_PATH, else `chromium` (Debian) or `chromium-browser` on the PATH. */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const candidate = join(dir, name);
      if (dir && existsSync(candidate)) return candidate;
    }
  }
  return undefined;
}
