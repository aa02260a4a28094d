/**
 * The chunk consumer runs a bounded number of invocations at once (wrangler.toml, and the reason
 * beside it): every chunk reads the one D1 database, and the queue's default autoscales to 250.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';

interface Consumer {
  queue: string;
  max_batch_size?: number;
  max_concurrency?: number | null;
}

describe('wrangler.toml queue consumers', () => {
  it('the chunk consumer has a max_concurrency of 25: at most 125 chunks (25 files of 5) at once service-wide', () => {
    const config = unstable_readConfig({ config: fileURLToPath(new URL('../../wrangler.toml', import.meta.url)) });
    const chunks = (config.queues.consumers as Consumer[]).find((c) => c.queue === 'binbatch-chunks');
    expect(chunks?.max_concurrency).toBe(25);
    expect((chunks?.max_concurrency ?? 250) * (chunks?.max_batch_size ?? 10)).toBeLessThanOrEqual(125);
  });
});
