// Bindings that only the test pool has (vitest.config.ts `miniflare.bindings`).
declare namespace Cloudflare {
  interface Env {
    TEST_SCHEMA?: string;
    /** JSON of [{ page, markdown }]: the README and the docs pages with examples (scripts/readme-curls.mjs). */
    TEST_EXAMPLE_PAGES?: string;
  }
}
