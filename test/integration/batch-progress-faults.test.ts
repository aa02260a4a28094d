/**
 * The batch's Durable Object never answers an RPC with a rejection for a failure its caller
 * handles: a rejected RPC is also reported as an uncaught exception of the object (the stack a
 * green `npm test` used to print from the delivery fault test). recordChunk says what failed
 * instead, and the consumer retries the message.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, saleRows, status } from '../helpers/batch';
import { captureLogsOfEachTest } from '../helpers/logs';

describe('batch progress under a storage fault', () => {
  // The failures it causes are logged at error level: captured, so a green run prints none.
  captureLogsOfEachTest();
  it('recordChunk resolves with the failure instead of rejecting; the consumer retries and the retry counts the chunk once', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(3)));
    const progress = env.BATCH_PROGRESS.getByName(id);
    await runInDurableObject(progress, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE state RENAME TO state_away');
    });
    const answer = await progress.recordChunk(0);
    expect(answer).toEqual({ failed: 'Error: no such table: state: SQLITE_ERROR' });

    const failed = await deliver('binbatch-chunks', messages, 1);
    expect(failed.retryMessages).toHaveLength(1);
    await runInDurableObject(progress, (_instance, state) => {
      state.storage.sql.exec('ALTER TABLE state_away RENAME TO state');
    });
    const retried = await deliver('binbatch-chunks', messages, 2);
    expect(retried.explicitAcks).toHaveLength(1);
    expect(await status(merchant.secretKey, id)).toMatchObject({ status: 'completed', processed_lines: 3 });
  });
});
