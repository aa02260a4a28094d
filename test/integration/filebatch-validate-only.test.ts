/**
 * POST /api/filebatch?validate_only=true and POST /api/filebatch/validate (docs/batch.md, "Checking a file before it runs"): the same
 * bodies as an upload, read whole; nothing stored, no batch, nothing charged; the row errors a run
 * would report, the rows it would run by type and the totals by currency.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { csv } from '../helpers/batch';
import { MAX_LISTED_ROW_ERRORS, type FileReport } from '../../src/services/batches/file-checks';

const HEADER = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'transaction_id'];
const VISA = '4111111111111111';

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Validate Only Shop' });
});

async function batchCount(): Promise<number> {
  return (await env.DB.prepare('SELECT COUNT(*) AS n FROM batches WHERE merchant_id = ?1').bind(shop.id).first<number>('n')) ?? 0;
}

async function uploadCount(): Promise<number> {
  return (await env.FILES.list({ prefix: 'uploads/' })).objects.length;
}

async function create(body: unknown, merchant: TestMerchant = shop): Promise<string> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body });
  expect(response.status).toBe(201);
  return String((await response.json<Envelope<{ id: string }>>()).data.id);
}

async function get(id: string, merchant: TestMerchant = shop): Promise<{ status: string }> {
  const response = await call('GET', `/api/transaction/${id}`, { key: merchant.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<{ status: string }>>()).data;
}

function validateRaw(text: string): Promise<Response> {
  return call('POST', '/api/filebatch?validate_only=true&file_name=check.csv', { key: shop.secretKey, body: text, headers: { 'Content-Type': 'text/csv' } });
}

describe('validate_only', () => {
  it('answers row errors, rows by type and totals; stores nothing, makes no batch (raw body and form alike)', async () => {
    const authorization = await create({ transaction_type: 'authorize', amount: 1000, cc_number: VISA, cc_expiration: '12/30' });
    const sale = await create({ transaction_type: 'sale', amount: 900, cc_number: VISA, cc_expiration: '12/30' });
    const text = csv(HEADER, [
      ['sale', '1000', VISA, '12/30', ''],
      ['sale', '2500', VISA, '12/30', ''],
      ['authorize', '700', VISA, '12/30', ''],
      ['credit', '300', VISA, '12/30', ''],
      ['capture', '400', '', '', authorization],
      ['capture', '', '', '', 'line:4'],
      ['void', '', '', '', sale],
      ['refund', '150', '', '', 'txn_a20261127ghi'],
      ['sale', 'abc', VISA, '12/30', ''],
      ['void', '100', '', '', 'txn_a20261127jkl'],
      ['capture', '', '', '', ''],
      ['sale', '100', '4111111111111112', '12/30', ''],
    ]);
    const batchesBefore = await batchCount();
    const uploadsBefore = await uploadCount();
    const form = new FormData();
    form.append('file', new File([text], 'check.csv', { type: 'text/csv' }));
    const validatePath = await call('POST', '/api/filebatch/validate?file_name=check.csv', { key: shop.secretKey, body: text, headers: { 'Content-Type': 'text/csv' } });
    for (const response of [await validateRaw(text), await call('POST', '/api/filebatch?validate_only=true', { key: shop.secretKey, body: form }), validatePath]) {
      expect(response.status).toBe(200);
      const { data } = await response.json<Envelope<FileReport & { file_name: string }>>();
      expect(data).toMatchObject({
        file_name: 'check.csv',
        num_lines: 12,
        row_error_count: 5,
        rows_by_type: { sale: 2, authorize: 1, credit: 1, capture: 2, void: 1 },
        totals: { USD: { sale: 3500, authorize: 700, credit: 300, capture: 400 } },
        rows_without_amount: 1,
        // The capture, the void and the refund naming ids (not line:4, not the rows refused before any read).
        ledger_checked_rows: 3,
        ledger_unchecked_rows: 0,
      });
      expect(data.row_errors.map((e) => [e.row, e.column])).toEqual([
        [9, 'transaction_id'],
        [10, 'amount'],
        [11, 'amount'],
        [12, 'transaction_id'],
        [13, 'cc_number'],
      ]);
      expect(data.row_errors[0]?.message).toBe('no transaction of this merchant has this id');
      expect(data.row_errors[2]?.message).toContain('must be empty for a void');
      // No card number is echoed.
      expect(JSON.stringify(data)).not.toContain(VISA);
    }
    expect(await batchCount()).toBe(batchesBefore);
    expect(await uploadCount()).toBe(uploadsBefore);
  });

  it('checks each named transaction as the run would: wrong state, over the amount left, another merchant, unknown; and changes none', async () => {
    const other = await createMerchant({ name: 'Validate Only Other Shop' });
    const over = await create({ transaction_type: 'authorize', amount: 500, cc_number: VISA, cc_expiration: '12/30' });
    const voided = await create({ transaction_type: 'authorize', amount: 800, cc_number: VISA, cc_expiration: '12/30' });
    expect((await call('POST', `/api/transaction/${voided}/void`, { key: shop.secretKey })).status).toBe(200);
    const theirs = await create({ transaction_type: 'authorize', amount: 350, cc_number: VISA, cc_expiration: '12/30' }, other);
    const good = await create({ transaction_type: 'authorize', amount: 700, cc_number: VISA, cc_expiration: '12/30' });
    const response = await validateRaw(
      csv(HEADER, [
        ['capture', '600', '', '', over],
        ['capture', '', '', '', voided],
        ['capture', '', '', '', theirs],
        ['capture', '', '', '', good],
        ['refund', '', '', '', good.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'))],
      ]),
    );
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<FileReport>>();
    expect(data.row_errors).toEqual([
      { row: 2, column: 'amount', message: 'amount must be at most 500, the amount_authorized' },
      { row: 3, column: 'transaction_id', message: 'transaction is voided: capture is allowed only while authorized' },
      { row: 4, column: 'transaction_id', message: 'no transaction of this merchant has this id' },
      { row: 6, column: 'transaction_id', message: 'no transaction of this merchant has this id' },
    ]);
    expect(data).toMatchObject({ row_error_count: 4, rows_by_type: { capture: 1 }, rows_without_amount: 1, ledger_checked_rows: 5 });
    // Nothing changed: the good authorization is still authorized, the other merchant's too.
    expect((await get(good)).status).toBe('authorized');
    expect((await get(theirs, other)).status).toBe('authorized');
  });

  it('caps the listed errors and always gives their total', async () => {
    const rows = Array.from({ length: MAX_LISTED_ROW_ERRORS + 50 }, () => ['sale', 'abc', VISA, '12/30', '']);
    const response = await validateRaw(csv(HEADER, rows));
    expect(response.status).toBe(200);
    const { data } = await response.json<Envelope<FileReport>>();
    expect(data.row_errors).toHaveLength(MAX_LISTED_ROW_ERRORS);
    expect(data.row_error_count).toBe(MAX_LISTED_ROW_ERRORS + 50);
  });

  it('refuses a malformed file as an upload would, naming the line', async () => {
    const response = await validateRaw('"transaction_type","amount"\n"sale","1"\n"sale"\n');
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toBe('line 3: expected 2 fields, found 1');
    const twice = await validateRaw(csv(['transaction_type', 'transaction_id'], [['void', 'txn_x1'], ['void', 'txn_x1']]));
    expect(twice.status).toBe(400);
    expect((await twice.json<Envelope>()).msg).toContain('line 3: transaction_id txn_x1 is named again (line 2 names it)');
  });
});
