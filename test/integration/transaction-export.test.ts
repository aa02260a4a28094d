/**
 * Exports (issue 33): POST /api/transaction/export → 202 and an id, its progress, the streamed CSV
 * download of the result file's 69 columns, `export.completed`, a settlement batch's transactions,
 * retention; and an export of 100,000 rows whose CSV is exactly the search, page after page.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { toCsvLine } from '../../src/lib/batch-csv';
import { RESULT_COLUMNS, NUMERIC_RESULT_COLUMNS, type TransactionRecord } from '../../src/schemas/transaction-columns';
import { transactionSearchSchema } from '../../src/schemas/transaction-search';
import { startExport, transactionExport } from '../../src/services/search/exports';
import { indexUnits } from '../../src/services/search/indexer';
import { searchTransactions } from '../../src/services/search/search';
import { searchDayName } from '../../src/services/search/names';
import { chunkPage, ledgerShardName } from '../../src/services/transactions/ledger';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { createEndpoint, deliveries, receiver } from '../helpers/webhooks';

type Tx = TransactionRecord & { id: string; amount_refunded: number };
type ExportState = { id: string; status: string; rows: number; total_count: number | null; total_count_exact: boolean; download_url: string | null; expires_at: string | null; completed_at: string | null };

const NUMERIC = RESULT_COLUMNS.map((c) => NUMERIC_RESULT_COLUMNS.has(c));
const csvOf = (records: readonly TransactionRecord[]) => toCsvLine(RESULT_COLUMNS) + records.map((r) => toCsvLine(RESULT_COLUMNS.map((c) => r[c]), NUMERIC)).join('');

async function create(merchant: TestMerchant, body: { [k: string]: unknown }): Promise<Tx> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { cc_number: '4111111111111111', cc_expiration: '12/30', ...body } });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<Tx>>()).data;
}

/** Runs an export's steps (as its alarm does) until it ends; answers how many steps it took. */
async function runToEnd(id: string, now = new Date().toISOString()): Promise<number> {
  for (let steps = 1; steps < 100; steps++) {
    const { export: row } = await transactionExport(env, id).run(now);
    if (row?.status !== 'running') return steps;
  }
  throw new Error('the export did not end');
}

/** Every record a search answers, page by page with the cursor. */
async function searchAll(merchantId: string, filters: object, limit = 100): Promise<Tx[]> {
  const all: Tx[] = [];
  let cursor: string | undefined;
  for (;;) {
    const outcome = await searchTransactions(env, merchantId, transactionSearchSchema.parse({ ...filters, limit, ...(cursor ? { cursor } : {}) }), () => new Date());
    if (!outcome.ok) throw new Error(outcome.message);
    all.push(...(outcome.answer.data as Tx[]));
    if (outcome.answer.next_cursor === null) return all;
    cursor = outcome.answer.next_cursor;
  }
}

describe('POST /api/transaction/export', () => {
  it('202 and an id; progress; the CSV is the search; export.completed; another merchant sees none of it', async () => {
    const shop = await createMerchant({ name: 'Export Shop' });
    const hook = receiver();
    const endpoint = await createEndpoint(shop.secretKey, { url: hook.url, events: ['export.completed'] });
    for (let i = 0; i < 5; i++) await create(shop, { transaction_type: 'sale', amount: 1000 + i, order_id: `EXP${i}`, billing_first_name: i === 2 ? '=cmd()' : 'Ann' });
    await create(shop, { transaction_type: 'authorize', amount: 700 });
    const started = await call('POST', '/api/transaction/export', { key: shop.secretKey, body: { type: { operator: '=', value: 'sale' } } });
    expect(started.status).toBe(202);
    const made = (await started.json<Envelope<ExportState>>()).data;
    expect(made).toMatchObject({ status: 'running', rows: 0, download_url: null });
    expect(made.id).toMatch(/^exp_[0-9a-v]{20}$/);
    // Not downloadable while running.
    expect((await call('GET', `/api/transaction/export/${made.id}/download`, { key: shop.secretKey })).status).toBe(409);

    await runToEnd(made.id);
    const progress = await call('GET', `/api/transaction/export/${made.id}`, { key: shop.secretKey });
    const done = (await progress.json<Envelope<ExportState>>()).data;
    expect(done).toMatchObject({ status: 'completed', rows: 5, total_count: 5, total_count_exact: true, download_url: `/api/transaction/export/${made.id}/download` });
    expect(Date.parse(String(done.expires_at)) - Date.parse(String(done.completed_at))).toBe(10 * 86_400_000);

    const download = await call('GET', String(done.download_url), { key: shop.secretKey });
    expect(download.status).toBe(200);
    expect(download.headers.get('Content-Type')).toBe('text/csv; charset=utf-8');
    expect(download.headers.get('Content-Disposition')).toBe(`attachment; filename="transactions-${made.id}.csv"`);
    const text = await download.text();
    const sales = await searchAll(shop.id, { type: { operator: '=', value: 'sale' } });
    expect(text).toBe(csvOf(sales));
    expect(text.split('\n')[0]?.split(',')).toHaveLength(69);
    // A formula in a field is neutralised as in every result file.
    expect(text).toContain(`"'=cmd()"`);

    const other = await createMerchant({ name: 'Other Export Shop' });
    expect((await call('GET', `/api/transaction/export/${made.id}`, { key: other.secretKey })).status).toBe(404);
    expect((await call('GET', `/api/transaction/export/${made.id}/download`, { key: other.secretKey })).status).toBe(404);

    // export.completed, delivered like the other events, carrying the export.
    const events = await env.DB.prepare("SELECT payload FROM webhook_events WHERE batch_id = ? AND type = 'export.completed'").bind(made.id).all<{ payload: string }>();
    expect(events.results).toHaveLength(1);
    expect(JSON.parse(events.results[0]?.payload ?? '{}')).toMatchObject({ type: 'export.completed', data: { id: made.id, status: 'completed', rows: 5 } });
    await expect.poll(async () => (await deliveries(shop.secretKey, endpoint.id)).map((d) => d.status), { timeout: 10_000 }).toEqual(['delivered']);
    expect(JSON.parse(hook.received[0]?.body ?? '{}')).toMatchObject({ type: 'export.completed', data: { id: made.id } });
  });

  it("a settlement batch's transactions download the same way", async () => {
    const shop = await createMerchant({ name: 'Settlement Export Shop' });
    for (let i = 0; i < 3; i++) await create(shop, { transaction_type: 'sale', amount: 1500 + i });
    const settled = await admin('POST', `/admin/merchants/${shop.id}/settle`);
    const batch = (await settled.json<Envelope<{ id: string; num_transactions: number }[]>>()).data[0];
    await create(shop, { transaction_type: 'sale', amount: 1600 });
    const started = await call('POST', '/api/transaction/export', { key: shop.secretKey, body: { settlement_batch_id: { operator: '=', value: String(batch?.id) } } });
    const id = (await started.json<Envelope<ExportState>>()).data.id;
    await runToEnd(id);
    const text = await (await call('GET', `/api/transaction/export/${id}/download`, { key: shop.secretKey })).text();
    const rows = text.trim().split('\n').slice(1);
    expect(rows).toHaveLength(3);
    expect(rows.every((row) => row.includes(`"${batch?.id}"`) && row.includes('"settled"'))).toBe(true);
  });

  it('an empty export is the header alone; past its 10 days the download is 410, then the export is gone', async () => {
    const shop = await createMerchant({ name: 'Empty Export Shop' });
    const outcome = await startExport(env, shop.id, {}, () => new Date());
    if (!outcome.ok) throw new Error(outcome.message);
    await runToEnd(outcome.export.id);
    const download = await call('GET', `/api/transaction/export/${outcome.export.id}/download`, { key: shop.secretKey });
    expect(await download.text()).toBe(toCsvLine(RESULT_COLUMNS));
    const stub = transactionExport(env, outcome.export.id);
    const row = await stub.state(shop.id);
    const later = new Date(Date.parse(String(row?.deleteAt)) + 1).toISOString();
    expect(await stub.run(later)).toEqual({ export: null, nextAt: null });
    expect((await call('GET', `/api/transaction/export/${outcome.export.id}`, { key: shop.secretKey })).status).toBe(404);
    expect(await env.FILES.head(`exports/${shop.id}/${outcome.export.id}.csv`)).toBeNull();
  });
});

describe('an export of 100,000 rows', () => {
  it('writes them in bounded steps and parts, and its CSV is the search, row for row', async () => {
    const shop = await createMerchant({ name: 'Big Export Shop' });
    // A real record of this merchant, as the template of 100,000 batch rows in 200 chunks over a day.
    const template = await create(shop, { transaction_type: 'sale', amount: 999, billing_first_name: 'Template' });
    const { amount_refunded: _r, ...base } = template;
    const batchId = 'bat_0123456789abcdefghij';
    const shard = ledgerShardName({ kind: 'batch', merchantId: shop.id, batchId });
    const day = String(template.created_at).slice(0, 10);
    const seeded: TransactionRecord[] = [];
    const units = Array.from({ length: 200 }, (_, chunk) => {
      const at = new Date(Date.parse(`${day}T00:00:00.000Z`) + chunk * 60_000).toISOString();
      const records = Array.from({ length: 500 }, (_, i) => {
        const line = chunk * 500 + i + 2;
        const record = { ...base, id: `txn_b${day.replaceAll('-', '')}0123456789abcdefghij${line}`, idempotency_key: `${batchId}:${line}`, transaction_source: 'batch', amount: 1000 + (line % 5000), order_id: `ord${line}`, created_at: at, captured_at: at } as TransactionRecord;
        seeded.push(record);
        return record;
      });
      return { shard, page: chunkPage(chunk * 500 + 2), at, records };
    });
    for (let i = 0; i < units.length; i += 10) await indexUnits(env, shop.id, units.slice(i, i + 10));

    const outcome = await startExport(env, shop.id, { batch_id: { operator: '=', value: batchId } }, () => new Date(), { arm: false });
    if (!outcome.ok) throw new Error(outcome.message);
    // 50,000 rows a step: bounded, so a bigger export only takes more steps.
    const stub = transactionExport(env, outcome.export.id);
    expect((await stub.run(new Date().toISOString())).export).toMatchObject({ status: 'running', rows: 50_000, total: 100_000 });
    expect((await stub.run(new Date().toISOString())).export).toMatchObject({ status: 'completed', rows: 100_000 });
    const row = await stub.state(shop.id);
    expect(row).toMatchObject({ status: 'completed', rows: 100_000, total: 100_000, totalExact: true });
    // Uploaded in 8 MiB parts, as it went.
    expect(row?.parts.length).toBeGreaterThan(5);

    const download = await call('GET', `/api/transaction/export/${outcome.export.id}/download`, { key: shop.secretKey });
    const text = await download.text();
    const lines = text.split('\n');
    expect(lines).toHaveLength(100_002);
    const found = await searchAll(shop.id, { batch_id: { operator: '=', value: batchId } });
    expect(found).toHaveLength(100_000);
    expect(text).toBe(csvOf(found));
    // And the search is what was indexed, newest first.
    const newestFirst = [...seeded].sort((a, b) => (a.created_at === b.created_at ? (String(b.id) > String(a.id) ? 1 : -1) : String(b.created_at) > String(a.created_at) ? 1 : -1));
    expect(found.map((r) => r.id)).toEqual(newestFirst.map((r) => r.id));
  }, 300_000);
});

describe('an export that cannot be written', () => {
  it('is retried, then failed with a reason after 5 attempts in a row; nothing is left in R2', async () => {
    const shop = await createMerchant({ name: 'Failing Export Shop' });
    const tx = await create(shop, { transaction_type: 'sale', amount: 1000 });
    const outcome = await startExport(env, shop.id, {}, () => new Date(), { arm: false });
    if (!outcome.ok) throw new Error(outcome.message);
    const day = env.SEARCH_DAY.getByName(searchDayName(shop.id, String(tx.created_at).slice(0, 10)));
    await runInDurableObject(day, (_instance, state) => state.storage.sql.exec('ALTER TABLE units RENAME TO units_away'));
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const stub = transactionExport(env, outcome.export.id);
    for (let attempt = 1; attempt < 5; attempt++) expect((await stub.run(new Date().toISOString())).export).toMatchObject({ status: 'running', failures: attempt });
    const failed = (await stub.run(new Date().toISOString())).export;
    expect(failed).toMatchObject({ status: 'failed', failureReason: 'the export could not be written after 5 attempts: start it again' });
    expect(errors).toHaveBeenCalledTimes(5);
    errors.mockRestore();
    const answer = await call('GET', `/api/transaction/export/${outcome.export.id}`, { key: shop.secretKey });
    expect((await answer.json<Envelope<ExportState & { failure_reason: string }>>()).data).toMatchObject({ status: 'failed', download_url: null, failure_reason: 'the export could not be written after 5 attempts: start it again' });
    expect((await call('GET', `/api/transaction/export/${outcome.export.id}/download`, { key: shop.secretKey })).status).toBe(409);
    expect(await env.FILES.head(`exports/${shop.id}/${outcome.export.id}.csv`)).toBeNull();
  });
});
