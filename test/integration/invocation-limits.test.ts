/**
 * Subrequests and RPC answers per invocation on the batch paths that read a whole file's worth
 * (issue 29, item 7): the download, the partial download after a cancel, the cancel itself. Each
 * request runs through the Worker's own handler with a metered env (test/helpers/invocation-meter.ts)
 * and is held to the limits in src/lib/platform-limits.ts, at half.
 *
 * Chunks of 4 rows here: a 160-row file is 40 chunks, as a 20,000-row one is at 500 rows a chunk.
 */
import { env } from 'cloudflare:workers';
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import worker from '../../src/index';
import { HALF, RPC, WORKERS } from '../../src/lib/platform-limits';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, deliver, parseResult, saleRows, status } from '../helpers/batch';
import { meterInvocation, type InvocationMeter } from '../helpers/invocation-meter';

let shop: TestMerchant;
let chunkRows: string;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Metered Shop' });
  chunkRows = env.BATCH_CHUNK_ROWS;
  env.BATCH_CHUNK_ROWS = '4';
});
afterAll(() => {
  env.BATCH_CHUNK_ROWS = chunkRows;
});

/** One request through the Worker's fetch handler with a metered env; the body is read to its end within it. */
async function metered(method: string, path: string): Promise<{ status: number; text: string; meter: InvocationMeter<Env> }> {
  const meter = meterInvocation(env);
  const ctx = createExecutionContext();
  const handler: ExportedHandler<Env> = worker;
  const request = new Request(`http://binbatch.test${path}`, { method, headers: { Authorization: shop.secretKey } });
  const response = await handler.fetch?.(request as Request<unknown, IncomingRequestCfProperties>, meter.env, ctx);
  if (!response) throw new Error('no response');
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, text, meter };
}

function withinHalf(meter: InvocationMeter<Env>): void {
  expect(meter.totalSubrequests()).toBeLessThanOrEqual(WORKERS.subrequestsPlanned * HALF);
  expect(meter.largestRpcAnswer()).toBeLessThanOrEqual(RPC.payloadBytes * HALF);
}

describe('one invocation, a whole file', () => {
  it('the download of a completed batch: one R2 read per chunk, streamed, and a D1 read', async () => {
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(160)));
    await deliver('binbatch-chunks', messages);
    expect((await status(shop.secretKey, id)).status).toBe('completed');
    const { status: code, text, meter } = await metered('GET', `/api/filebatch/${id}/download`);
    expect(code).toBe(200);
    expect(parseResult(text).rows).toHaveLength(160);
    expect(meter.subrequests.get('FILES')).toBe(40);
    expect(meter.totalSubrequests()).toBeLessThanOrEqual(42);
    withinHalf(meter);
  });

  it('cancelled early: the partial download reads no ledger for the chunks never sent', async () => {
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(160)));
    // The object sent chunks 0 and 1 (the window); they ran; then the merchant cancelled.
    await runInDurableObject(env.BATCH_PROGRESS.getByName(id), (_instance, state) => {
      state.storage.sql.exec("UPDATE state SET status = 'queued'");
      state.storage.sql.exec('UPDATE chunks SET sent_at = ?, ever_sent = 1 WHERE chunk IN (0, 1)', new Date().toISOString());
    });
    await deliver('binbatch-chunks', messages.slice(0, 2));
    const cancel = await metered('POST', `/api/filebatch/${id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(cancel.meter.totalSubrequests()).toBeLessThanOrEqual(10);
    withinHalf(cancel.meter);

    const partial = await metered('GET', `/api/filebatch/${id}/download?partial=true`);
    expect(partial.status).toBe(200);
    const rows = parseResult(partial.text).rows;
    expect(rows).toHaveLength(160);
    expect(rows.filter((row) => row.response === 'approved')).toHaveLength(8);
    expect((await status(shop.secretKey, id)).processed_lines).toBe(8);
    // 38 chunks never sent: no call for them (one ledger read each before, 38 in all).
    expect(partial.meter.subrequests.get('LEDGER_SHARD') ?? 0).toBeLessThanOrEqual(2);
    expect(partial.meter.totalSubrequests()).toBeLessThanOrEqual(12);
    // The object's answer carries the whole chunk map: 40 chunks here, 1,000 at most.
    const view = partial.meter.rpcAnswers.find((answer) => answer.method === 'partialView');
    expect(view?.bytes).toBeLessThan(40 * 100);
    withinHalf(partial.meter);
  });
});
