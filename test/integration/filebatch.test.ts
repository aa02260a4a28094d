import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { RESULT_COLUMNS } from '../../src/schemas/transaction-columns';
import { call, createMerchant } from '../helpers/api';
import { CARD_HEADER, csv, parseResult, QUEUE_TEST_TIMEOUT, recordedTransactions, saleRows, status, uploadMultipart, uploadOk, uploadRaw, waitForStatus } from '../helpers/batch';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('batch file: upload → queued → processing → completed → download', () => {
  it('processes every row through the real queue and object, and streams the results in input order', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const merchant = await createMerchant({ name: 'Acme Batch Co' });
    // 1,234 rows with 500 per chunk: three chunks, the last one partial.
    const rows = saleRows(1234);
    const upload = await uploadMultipart(merchant.secretKey, csv(CARD_HEADER, rows), 'march.csv');
    expect(upload.status).toBe(200);
    const body = await upload.json<{ status: string; msg: string; data: Record<string, unknown> }>();
    expect(body.status).toBe('success');
    expect(body.msg).toBe('success');
    expect(Object.keys(body.data).sort()).toEqual(['created_at', 'file_name', 'id', 'num_lines', 'status', 'updated_at']);
    expect(body.data).toMatchObject({ file_name: 'march.csv', status: 'pending', num_lines: 1234 });
    expect(body.data.created_at).toMatch(ISO_MS);
    const id = String(body.data.id);

    const seen: string[] = [];
    const done = await waitForStatus(merchant.secretKey, id, 'completed', seen);
    expect(done).toEqual({
      id,
      user_id: merchant.id,
      file_name: 'march.csv',
      status: 'completed',
      num_lines: 1234,
      processed_lines: 1234,
      created_at: body.data.created_at,
      updated_at: expect.stringMatching(ISO_MS),
      paused: false,
    });
    // Whatever polling caught, the path only moves forward through SPEC.md's states.
    const order = ['pending', 'queued', 'processing', 'completed'];
    expect(seen.map((s) => order.indexOf(s))).toEqual([...seen.map((s) => order.indexOf(s))].sort());
    expect(seen).not.toContain('failed');

    // The uploaded file (card numbers) is gone once the batch is completed.
    expect(await env.FILES.head(`uploads/${id}.csv`)).toBeNull();

    const download = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(download.status).toBe(200);
    expect(download.headers.get('Content-Type')).toBe('text/csv; charset=utf-8');
    expect(download.headers.get('Content-Disposition')).toContain('attachment; filename="march-results.csv"');
    const text = await download.text();
    expect(text.split('\n')[0]).toBe(RESULT_COLUMNS.map((c) => `"${c}"`).join(','));
    const result = parseResult(text);
    expect(result.header).toEqual([...RESULT_COLUMNS]);
    expect(result.rows).toHaveLength(1234);
    expect(result.rows.map((r) => r.idempotency_key)).toEqual(rows.map((_, i) => `${id}:${i + 2}`));
    expect(result.rows.map((r) => r.amount)).toEqual(rows.map((r) => r[1]));
    for (const row of result.rows) {
      expect(Object.keys(row)).toHaveLength(RESULT_COLUMNS.length);
      expect(row.transaction_source).toBe('batch');
      expect(row.user_name).toBe('Acme Batch Co');
      expect(row.response).toBe('approved');
    }
    expect(await recordedTransactions(id)).toEqual({ count: 1234, keys: 1234 });
    expect(new Set(result.rows.map((r) => r.id)).size).toBe(1234);
    expect(result.rows[0]?.masked_account).toBe('411111******1111');
    // No full card number in the results.
    expect(text).not.toContain('4111111111111111');
  });
});
