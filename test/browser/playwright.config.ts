/**
 * The browser suite: `npm run test:browser`. Real Chromium (Debian's, never a downloaded build)
 * against `wrangler dev`, which the global setup starts on this suite's ports. Not part of
 * `npm test`: vitest runs in workerd and needs no browser.
 */
import { defineConfig } from '@playwright/test';
import { findChromium, RESULTS_DIR } from './setup';

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  globalSetup: './global-setup.ts',
  outputDir: `${RESULTS_DIR}/playwright`,
  // One Worker and one demo merchant are shared: the tests run one after the other.
  workers: 1,
  fullyParallel: false,
  forbidOnly: true,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: {
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      // global-setup.ts fails the run with instructions when no Chromium is found.
      executablePath: findChromium(),
      // Chromium's sandbox cannot start as root (CI runs as root).
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    },
    viewport: { width: 1000, height: 1400 },
    trace: 'retain-on-failure',
  },
});
