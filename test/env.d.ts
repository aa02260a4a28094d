// Bindings that only the test pool has (vitest.config.ts `miniflare.bindings`).
declare namespace Cloudflare {
  interface Env {
    TEST_SCHEMA?: string;
    TEST_README?: string;
  }
}
