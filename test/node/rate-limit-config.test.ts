/**
 * wrangler.toml declares the rate limits docs/limits.md promises. Read with wrangler's own config
 * reader, so the test sees the bindings exactly as `wrangler dev` and `wrangler deploy` do.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';
import { RATE_LIMITS } from '../helpers/rate-limits';

/** One `[[ratelimits]]` entry (wrangler's types for its config need Node's, which this project's tsconfig leaves out). */
interface RateLimitBinding {
  name: string;
  simple: { limit: number; period: number };
}

describe('wrangler.toml rate limits', () => {
  it('declare each per-key limit and window docs/limits.md states, and no other', () => {
    const config = unstable_readConfig({ config: fileURLToPath(new URL('../../wrangler.toml', import.meta.url)) });
    const declared = config.ratelimits.map(({ name, simple }: RateLimitBinding) => ({ binding: name, limit: simple.limit, period: simple.period }));
    expect(declared).toEqual(RATE_LIMITS.map(({ binding, limit, period }) => ({ binding, limit, period })));
  });
});
