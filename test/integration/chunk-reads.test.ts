/**
 * A chunk reads what is the same for its whole batch once per batch, not once per chunk
 * (services/batches/batch-context.ts): the batch row with its caller, and the merchant's
 * processors. D1 runs one query at a time, and a 500,000-row file is 1,000 chunks.
 */
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { forgetBatchContexts } from '../../src/services/batches/batch-context';
import { systemClock } from '../../src/lib/time';
import { merchantProcessors } from '../../src/services/transactions/processors/registry';
import { createMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, saleRows, status } from '../helpers/batch';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the reads of a batch\'s chunks', () => {
  it('8 chunks in 2 deliveries read the batch and caller once and the processors once; every row is processed', async () => {
    const shop = await createMerchant({ name: 'Chunk Reads Shop' });
    // 8 chunks of the test config's chunk size.
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(8 * Number(env.BATCH_CHUNK_ROWS ?? 500))), 'reads.csv');
    expect(messages.length).toBe(8);
    await markQueuedWithoutSending(id);
    // The merchant's default sandbox processor exists (its first use creates it: a write and a read more, once).
    await merchantProcessors(env.DB, shop.id, systemClock);
    forgetBatchContexts();
    const statements: string[] = [];
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, 'prepare').mockImplementation((query: string) => {
      statements.push(query);
      return prepare(query);
    });
    expect((await deliver('binbatch-chunks', messages.slice(0, 4))).explicitAcks).toHaveLength(4);
    expect((await deliver('binbatch-chunks', messages.slice(4))).explicitAcks).toHaveLength(4);
    vi.restoreAllMocks();
    const batchReads = statements.filter((q) => /FROM batches b JOIN merchants m/.test(q)).length;
    const processorReads = statements.filter((q) => /FROM processors WHERE merchant_id/.test(q)).length;
    expect(batchReads).toBe(1);
    expect(processorReads).toBe(1);
    expect((await status(shop.secretKey, id)).processed_lines).toBe(8 * Number(env.BATCH_CHUNK_ROWS ?? 500));
  });
});
