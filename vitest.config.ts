import { readFileSync } from 'node:fs';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';

// The one D1 schema, handed to the workerd side so test/setup.ts can apply it in every test file.
const schema = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: './wrangler.toml' },
      miniflare: {
        bindings: {
          TEST_SCHEMA: schema,
          ADMIN_TOKEN: 'test-admin-token',
          // A fixed 32-byte AES key (base64) so tests are reproducible; never used outside tests.
          CARD_DATA_KEY: 'dGVzdC1vbmx5LWNhcmQtZGF0YS1rZXktMzItYnl0ZXM=',
        },
        // Flush queue batches quickly so end-to-end tests do not wait on the 1 s batch timeout.
        queueConsumers: {
          'binbatch-chunks': { maxBatchTimeout: 0.05 },
          'binbatch-chunks-dlq': { maxBatchTimeout: 0.05 },
        },
      },
    }),
  ],
  test: {
    setupFiles: ['./test/setup.ts'],
    include: ['test/**/*.test.ts'],
    // The request log writes a line per request; tests read it through console spies where it matters.
    onConsoleLog: (log) => !log.includes('"event":"request"'),
  },
});
