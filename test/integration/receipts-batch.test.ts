/**
 * Email receipts of batch files (issue 32; docs/receipts.md, "At batch scale"): one receipt per
 * approved row with email_receipt true, a chunk's receipts in one outbox row, none sent twice when a
 * chunk is delivered again, and the counts in the console's summary and the batch.completed event.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { call, type TestMerchant } from '../helpers/api';
import { createUnqueuedBatch, csv, deliver, markQueuedWithoutSending, QUEUE_TEST_TIMEOUT, uploadOk, waitForStatus } from '../helpers/batch';
import { batchShardName } from '../helpers/ledger';
import { mailTo, outboxRows, receiptMerchant, sendAllReceipts } from '../helpers/receipts';
import { createEndpoint, deliveries, receiver } from '../helpers/webhooks';

const HEADER = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'email_receipt', 'email_address'];

let shop: TestMerchant;
beforeAll(async () => {
  shop = await receiptMerchant('Batch Receipt Shop');
});

/**
 * `count` sales with email_receipt true, each to its own address, of 10.00 and up (clear of the
 * sandbox's amount triggers); `declined` rows (amount 300: the sandbox declines) among them.
 */
function flaggedRows(count: number, tag: string, declined: ReadonlySet<number> = new Set()): { rows: string[][]; addresses: string[] } {
  const run = crypto.randomUUID().slice(0, 8);
  const addresses = Array.from({ length: count }, (_, i) => `${tag}${i}-${run}@customer.example`);
  const rows = addresses.map((to, i) => ['sale', declined.has(i) ? '300' : String(1000 + i), '4111111111111111', '12/30', 'true', to]);
  return { rows, addresses };
}

async function signIn(key: string): Promise<string> {
  const response = await call('POST', '/console/session', { body: { api_key: key }, headers: { Origin: 'http://binbatch.test' } });
  expect(response.status).toBe(201);
  return (response.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
}

describe('a batch file with email_receipt on every row', () => {
  it(
    'sends one receipt per approved row, from one outbox row for the chunk, counted in the summary and the batch.completed event',
    async () => {
      const hook = receiver();
      const endpoint = await createEndpoint(shop.secretKey, { url: hook.url, events: ['batch.completed'] });
      const declined = new Set([7, 42, 99]);
      const { rows, addresses } = flaggedRows(100, 'row', declined);
      const id = await uploadOk(shop.secretKey, csv(HEADER, rows), 'receipts.csv');
      await waitForStatus(shop.secretKey, id, 'completed');
      const shard = batchShardName(shop.id, id);
      await sendAllReceipts(shard);

      for (const [i, to] of addresses.entries()) {
        const mail = await mailTo(to);
        expect(mail, `row ${i + 2}`).toHaveLength(declined.has(i) ? 0 : 1);
        if (!declined.has(i)) expect(mail[0]?.subject).toBe(`Receipt from Batch Receipt Shop — $${((1000 + i) / 100).toFixed(2)}`);
      }
      // The chunk's 97 receipts are one row of the shard, as its records are one page.
      expect(await outboxRows(shard)).toEqual([97]);

      const cookie = await signIn(shop.secretKey);
      const summary = await call('GET', `/console/batches/${id}/summary`, { headers: { Cookie: cookie } });
      expect(summary.status).toBe(200);
      expect((await summary.json<{ data: Record<string, unknown> }>()).data).toMatchObject({ approved: 97, declined: 3, receipts: { queued: 0, sent: 97, failed: 0 } });

      // The batch's status answers them too, for an API client.
      const state = await call('GET', `/api/filebatch/${id}`, { key: shop.secretKey });
      expect(state.status).toBe(200);
      expect((await state.json<Record<string, unknown>>()).receipts).toEqual({ queued: 0, sent: 97, failed: 0 });

      // The event carries the counts as they were when the batch ended (some may still have been queued).
      const delivered = await vi.waitFor(
        async () => {
          const list = await deliveries(shop.secretKey, endpoint.id);
          if (list[0]?.status !== 'delivered') throw new Error('not delivered yet');
          return list;
        },
        { timeout: 20_000, interval: 20 },
      );
      expect(delivered).toHaveLength(1);
      const event = JSON.parse(hook.received[0]?.body ?? '{}') as { type: string; data: { id: string; receipts: { queued: number; sent: number; failed: number } } };
      expect(event.type).toBe('batch.completed');
      expect(event.data.id).toBe(id);
      expect(event.data.receipts.failed).toBe(0);
      expect(event.data.receipts.queued + event.data.receipts.sent).toBe(97);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it('sends no second receipt when a chunk is delivered again, at once or later', async () => {
    const { rows, addresses } = flaggedRows(501, 'again');
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(HEADER, rows), 'receipts-again.csv');
    await markQueuedWithoutSending(id);
    const [first] = messages;
    if (!first) throw new Error('no chunk message');
    // Two deliveries of chunk 0 racing, then a third after both: its 500 rows are charged and receipted once.
    await Promise.all([deliver('binbatch-chunks', [first]), deliver('binbatch-chunks', [first], 2)]);
    await deliver('binbatch-chunks', [first], 3);
    const shard = batchShardName(shop.id, id);
    await sendAllReceipts(shard);
    const counts = await Promise.all(addresses.slice(0, 500).map(async (to) => (await mailTo(to)).length));
    expect(counts.filter((n) => n !== 1)).toEqual([]);
    expect(await outboxRows(shard)).toEqual([500]);
    // Chunk 1 (row 502) was never delivered: no receipt for it.
    expect(await mailTo(addresses[500] ?? '')).toEqual([]);
  });
});
