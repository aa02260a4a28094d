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

function validateRaw(text: string): Promise<Response> {
  return call('POST', '/api/filebatch?validate_only=true&file_name=check.csv', { key: shop.secretKey, body: text, headers: { 'Content-Type': 'text/csv' } });
}

describe('validate_only', () => {
  it('answers row errors, rows by type and totals; stores nothing, makes no batch (raw body and form alike)', async () => {
    const text = csv(HEADER, [
      ['sale', '1000', VISA, '12/30', ''],
      ['sale', '2500', VISA, '12/30', ''],
      ['authorize', '700', VISA, '12/30', ''],
      ['credit', '300', VISA, '12/30', ''],
      ['capture', '400', '', '', 'txn_a20261127abc'],
      ['capture', '', '', '', 'line:4'],
      ['void', '', '', '', 'txn_a20261127def'],
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
        row_error_count: 4,
        rows_by_type: { sale: 2, authorize: 1, credit: 1, capture: 2, void: 1, refund: 1 },
        totals: { USD: { sale: 3500, authorize: 700, credit: 300, capture: 400, refund: 150 } },
        rows_without_amount: 1,
      });
      expect(data.row_errors.map((e) => [e.row, e.column])).toEqual([
        [10, 'amount'],
        [11, 'amount'],
        [12, 'transaction_id'],
        [13, 'cc_number'],
      ]);
      expect(data.row_errors[1]?.message).toContain('must be empty for a void');
      // No card number is echoed.
      expect(JSON.stringify(data)).not.toContain(VISA);
    }
    expect(await batchCount()).toBe(batchesBefore);
    expect(await uploadCount()).toBe(uploadsBefore);
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
