/**
 * The typed client (src/client.ts) and its example (examples/typed-client.ts) against the real
 * app: the client's fetch is the Worker's own, and every answer is held to the OpenAPI document
 * like any other test's.
 */
import { exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBatch } from '../../examples/typed-client';
import { createClient, validateFile, type Client } from '../../src/client';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, parseResult, QUEUE_TEST_TIMEOUT, saleRows } from '../helpers/batch';
import { assertDocumentedAnswer } from '../helpers/contract';

let merchant: TestMerchant;
let api: Client;

async function workerFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  const response = await exports.default.fetch(request);
  await assertDocumentedAnswer(request.method, request.url, response);
  return response;
}

beforeAll(async () => {
  merchant = await createMerchant({ name: 'Typed Client Shop' });
  api = createClient('http://binbatch.test', { apiKey: merchant.secretKey, fetch: workerFetch });
});

describe('the typed client', () => {
  it('checks a file with validateFile: its report, and no batch', async () => {
    const file = new File([csv(['transaction_type', 'transaction_id', 'amount'], [['capture', 'txn_a20261127abc', '500'], ['void', 'txn_a20261127def', '9']])], 'ops.csv', { type: 'text/csv' });
    const checked = await validateFile(api, file);
    // The void's amount is refused before any read; the capture names no transaction of this merchant.
    expect(checked).toMatchObject({ ok: true, report: { file_name: 'ops.csv', num_lines: 2, row_error_count: 2, rows_by_type: {}, ledger_checked_rows: 1 } });
    if (checked.ok) expect(checked.report.row_errors.map((e) => [e.row, e.column])).toEqual([[2, 'transaction_id'], [3, 'amount']]);
    const listed = await api.api.filebatch.$get({ query: {} });
    expect((await listed.json()).total_count).toBe(0);
  });

  it('runs the example: uploads a file, polls until completed, downloads one result row per data row', async () => {
    const file = new File([csv(CARD_HEADER, saleRows(3))], 'typed.csv', { type: 'text/csv' });
    const run = await runBatch(api, file, { pollMs: 10, timeoutMs: QUEUE_TEST_TIMEOUT - 5_000 });
    expect(run.status).toBe('completed');
    expect(run.numLines).toBe(3);
    const { header, rows } = parseResult(run.resultsCsv);
    expect(header[0]).toBe('id');
    expect(rows).toHaveLength(3);
    expect(rows.every((row) => row.response === 'approved')).toBe(true);
  }, QUEUE_TEST_TIMEOUT);

  it('types the lookup and answers its documented body', async () => {
    const response = await api.api.lookup.bin.protected.$post({ json: { bin: '411111', country: 'US', state: 'TX' } });
    expect(response.status).toBe(200);
    const body = await response.json();
    // `bin` is typed from the response schema: a string when present.
    expect(body.bin).toBe('411111');
  });

  it("types the lookup's amount and the surcharge it answers", async () => {
    const response = await api.api.lookup.bin.protected.$post({ json: { bin: '411111', country: 'US', state: 'GA', amount: 10_000 } });
    expect(response.status).toBe(200);
    const body = await response.json();
    // Typed from the response schema: numbers and a boolean when present (the merchant's rate is 0 here).
    const surcharge: number | undefined = body.surcharge_amount;
    const rate: number | undefined = body.surcharge_rate_bps;
    const atCost: boolean | undefined = body.surcharge_at_cost;
    expect({ surcharge, rate, atCost }).toEqual({ surcharge: 0, rate: 0, atCost: expect.any(Boolean) });
  });

  it('pauses, resumes and cancels a batch, typed: the answer is the batch record with paused', async () => {
    const { id } = await createUnqueuedBatch(merchant.secretKey, csv(CARD_HEADER, saleRows(3)));
    const batch = api.api.filebatch[':id'];
    const paused = await batch.pause.$post({ param: { id } });
    expect(paused.status).toBe(200);
    const pausedBody = await paused.json();
    expect(pausedBody.data.paused).toBe(true);
    expect((await (await batch.resume.$post({ param: { id } })).json()).data.paused).toBe(false);
    const cancelled = await (await batch.cancel.$post({ param: { id } })).json();
    expect(cancelled.data).toMatchObject({ id, status: 'failed', failure_reason: 'cancelled by the merchant', paused: false });
    const again = await batch.cancel.$post({ param: { id } });
    expect(again.status).toBe(409);
  });

  it('sends the key on its own and surfaces refusals as the failed envelope', async () => {
    const anonymous = createClient('http://binbatch.test', { apiKey: 'api_' + 'x'.repeat(32), fetch: workerFetch });
    const response = await anonymous.api.vault.customer[':id'].$get({ param: { id: 'nobody' } });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ status: 'failed', data: null });
  });

  it('types the lifecycle: authorize, capture part of it, search the settlement batches', async () => {
    const created = await api.api.transaction.$post({
      header: {},
      json: { transaction_type: 'authorize', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 900 },
    });
    expect(created.status).toBe(201);
    const id = String((await created.json()).data.id);
    const captured = await api.api.transaction[':id'].capture.$post({ param: { id }, header: { 'idempotency-key': 'typed-capture' }, json: { amount: 600 } });
    expect(captured.status).toBe(200);
    const record = await captured.json();
    if (record.status !== 'success') throw new Error('capture failed');
    expect(record.data).toMatchObject({ status: 'pending_settlement', amount_captured: 600 });
    const search = await api.api.settlement.batch.search.$post({ json: { limit: 5 } });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ status: 'success', total_count: 0 });
  });
});

describe('the typed client: search and exports (issue 33)', () => {
  it('searches with FluidPay filters and pages with the cursor, typed; starts an export and reads it', async () => {
    const shop = await createMerchant({ name: 'Typed Search Shop' });
    const client = createClient('http://binbatch.test', { apiKey: shop.secretKey, fetch: workerFetch });
    for (const amount of [1000, 2000, 3000]) {
      const made = await client.api.transaction.$post({ json: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount }, header: {} });
      expect(made.status).toBe(201);
    }
    const first = await client.api.transaction.search.$post({ json: { amount: { operator: '>', value: 1000 }, limit: 1 } });
    expect(first.status).toBe(200);
    const page = await first.json();
    // total_count and next_cursor are typed from the answer's schema.
    expect(page.total_count).toBe(2);
    expect(page.data[0]?.amount).toBe(3000);
    const cursor = page.next_cursor ?? '';
    const second = await (await client.api.transaction.search.$post({ json: { amount: { operator: '>', value: 1000 }, limit: 1, cursor } })).json();
    expect(second.data[0]?.amount).toBe(2000);
    const started = await client.api.transaction.export.$post({ json: { amount: { operator: '>', value: 1000 } } });
    expect(started.status).toBe(202);
    const { data } = await started.json();
    const progress = await (await client.api.transaction.export[':id'].$get({ param: { id: data.id } })).json();
    expect(progress.data.id).toBe(data.id);
  });
});
