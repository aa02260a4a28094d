/**
 * No log, trace or observability store keeps a card number typed into a URL path. What each store
 * is told: production's Workers Logs (wrangler.toml [observability], read with wrangler's own config
 * reader) keeps console output only, with the invocation logs and traces that record each request's
 * URL as sent turned off; `npm run dev` starts wrangler with its local observability store (a SQLite
 * trace store that records every URL as sent, whatever [observability] says) turned off.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';
// @ts-expect-error: a plain .mjs script without types
import { localEnv } from '../../scripts/local-state.mjs';

describe('stores that could keep a URL', () => {
  it('production: Workers Logs keeps console output, no invocation logs, no traces, no query strings', () => {
    const config = unstable_readConfig({ config: fileURLToPath(new URL('../../wrangler.toml', import.meta.url)) });
    expect(config.observability).toMatchObject({
      enabled: true,
      redact_query_string: true,
      logs: { enabled: true, invocation_logs: false },
      traces: { enabled: false },
    });
  });

  it("npm run dev: wrangler's local observability store is off", () => {
    expect((localEnv as Record<string, string>).X_LOCAL_OBSERVABILITY).toBe('false');
  });
});
