import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { authenticateKey } from '../../src/services/merchants';
import { uploadBatch } from '../../src/services/batches/upload';
import { systemClock } from '../../src/lib/time';
import { call, createMerchant, type TestMerchant, type Envelope } from '../helpers/api';
import { CARD_HEADER, createUnqueuedBatch, csv, parseResult, QUEUE_TEST_TIMEOUT, saleRows, uploadMultipart, uploadRaw, waitForStatus } from '../helpers/batch';

async function uploadsInR2(): Promise<string[]> {
  const listing = await env.FILES.list({ prefix: 'uploads/' });
  return listing.objects.map((object) => object.key);
}

async function batchCount(merchant: TestMerchant): Promise<number> {
  const response = await call('GET', '/api/filebatch', { key: merchant.secretKey });
  return (await response.json<{ total_count: number }>()).total_count;
}

describe('upload: structural problems reject the whole file', () => {
  const header = '"transaction_type","amount","cc_number","cc_expiration"\n';
  const good = '"sale","100","4111111111111111","12/30"\n';
  it.each([
    ['a row with a missing field', header + good.repeat(5) + '"sale","100","4111111111111111"\n', 400, 'line 7: expected 4 fields, found 3'],
    ['an unquoted field', header + good + '"sale",100,"4111111111111111","12/30"\n', 400, 'line 3: field 2 is not wrapped in double quotes'],
    ['a quote inside a field', header + '"sale","1"00","4111111111111111","12/30"\n', 400, 'line 2: a double quote inside field 2'],
    ['an unknown column', '"transaction_type","amount","pan"\n"sale","1","4"\n', 400, 'line 1: unknown column "pan"'],
    ['a duplicate column', '"transaction_type","amount","amount"\n"sale","1","2"\n', 400, 'line 1: duplicate column "amount"'],
    ['no transaction_type', '"amount"\n"100"\n', 400, 'line 1: the header has no transaction_type column'],
    ['no amount nor base_amount', '"transaction_type"\n"sale"\n', 400, 'line 1: the header needs an amount or base_amount column'],
    ['an empty file', '', 400, 'the file is empty'],
    ['a header only', header, 400, 'the file has a header but no data rows'],
  ])('%s → %i with the line and problem', async (_name, text, code, msg) => {
    const merchant = await createMerchant();
    const response = await uploadMultipart(merchant.secretKey, text);
    expect(response.status).toBe(code);
    expect(await response.json()).toEqual({ status: 'failed', msg, data: null });
    // Nothing kept: no batch, no file in R2.
    expect(await batchCount(merchant)).toBe(0);
    expect(await uploadsInR2()).toEqual([]);
  });

  it('rejects bytes that are not UTF-8 with 400 naming the line', async () => {
    const merchant = await createMerchant();
    const bytes = new Uint8Array([...new TextEncoder().encode(header + good + '"sale","100","'), 0xff, 0xfe, ...new TextEncoder().encode('","12/30"\n')]);
    const response = await uploadMultipart(merchant.secretKey, bytes);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ status: 'failed', msg: 'line 3: not valid UTF-8', data: null });
    expect(await uploadsInR2()).toEqual([]);
  });

  it('rejects a file over the size limit (too_large → 413) and keeps nothing in R2', async () => {
    const merchant = await createMerchant();
    const caller = await authenticateKey(env, merchant.secretKey);
    if (!caller) throw new Error('no caller');
    // A 6 MiB file against a 5.5 MiB limit: the first 5 MiB part is already in R2 when the limit is hit.
    const row = new TextEncoder().encode('"sale","100","4111111111111111","12/30"\n');
    const limit = 5.5 * 1024 * 1024;
    async function* file() {
      yield new TextEncoder().encode(header);
      for (let sent = 0; sent < 6 * 1024 * 1024; sent += row.length * 1000) {
        const block = new Uint8Array(row.length * 1000);
        for (let i = 0; i < 1000; i++) block.set(row, i * row.length);
        yield block;
      }
    }
    const outcome = await uploadBatch({ ...env, BATCH_MAX_BYTES: String(limit) }, caller, { fileName: 'big.csv', bytes: file() }, null, systemClock);
    expect(outcome).toEqual({ ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limit} bytes` });
    expect(await uploadsInR2()).toEqual([]);
  });

  it('rejects a file with more data rows than BATCH_MAX_ROWS (too_large → 413), with or without a final newline', async () => {
    const merchant = await createMerchant();
    const caller = await authenticateKey(env, merchant.secretKey);
    if (!caller) throw new Error('no caller');
    const limited = { ...env, BATCH_MAX_ROWS: '3' };
    const upload = (text: string) => {
      async function* bytes() {
        yield new TextEncoder().encode(text);
      }
      return uploadBatch(limited, caller, { fileName: 'rows.csv', bytes: bytes() }, null, systemClock);
    };
    const tooMany = { ok: false, reason: 'too_large', msg: 'the file exceeds the limit of 3 data rows' };
    expect(await upload(csv(CARD_HEADER, saleRows(4)))).toEqual(tooMany);
    expect(await upload(csv(CARD_HEADER, saleRows(4)).replace(/\n$/, ''))).toEqual(tooMany);
    expect(await uploadsInR2()).toEqual([]);
    expect(await upload(csv(CARD_HEADER, saleRows(3)))).toMatchObject({ ok: true, batch: { num_lines: 3 } });
  });

  it('answers 413 at once when Content-Length announces more than the limit', async () => {
    const merchant = await createMerchant();
    const response = await call('POST', '/api/filebatch?file_name=x.csv', {
      key: merchant.secretKey,
      body: 'x',
      headers: { 'Content-Type': 'text/csv', 'Content-Length': String(200 * 1024 * 1024) },
    });
    expect(response.status).toBe(413);
    expect(await response.json<Envelope>()).toEqual({ status: 'failed', msg: 'the file exceeds the limit of 104857600 bytes', data: null });
  });

  it('rejects a form without a part named "file", and a body of another type', async () => {
    const merchant = await createMerchant();
    const form = new FormData();
    form.append('upload', new File(['x'], 'x.csv'));
    const noFile = await call('POST', '/api/filebatch', { key: merchant.secretKey, body: form });
    expect(noFile.status).toBe(400);
    expect((await noFile.json<Envelope>()).msg).toBe('file: the multipart form has no part named "file"');

    const json = await call('POST', '/api/filebatch', { key: merchant.secretKey, body: { file: 'x' } });
    expect(json.status).toBe(415);
    expect((await json.json<Envelope>()).msg).toBe('Content-Type must be multipart/form-data (a part named "file") or text/csv');
  });

  it('requires the secret key', async () => {
    const merchant = await createMerchant();
    const response = await uploadMultipart(merchant.publicKey, csv(CARD_HEADER, saleRows(1)));
    expect(response.status).toBe(401);
    expect((await uploadMultipart('', csv(CARD_HEADER, saleRows(1)))).status).toBe(401);
  });
});

describe('upload: accepted forms', () => {
  it('streams a file larger than one 5 MiB part into R2 intact (multipart upload)', async () => {
    const merchant = await createMerchant();
    const wide = ['sale', '100', '4111111111111111', '12/30', 'A'.repeat(2000)];
    const text = csv(['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'billing_address_line_1'], Array.from({ length: 3200 }, () => wide));
    expect(text.length).toBeGreaterThan(6 * 1024 * 1024);
    const { id, messages } = await createUnqueuedBatch(merchant.secretKey, text);
    const stored = await env.FILES.get(`uploads/${id}.csv`);
    expect(stored?.size).toBe(text.length);
    expect(await stored?.text()).toBe(text);
    expect(messages).toHaveLength(7); // 3,200 rows at 500 per chunk
    expect(messages.reduce((sum, m) => sum + m.length, 0)).toBe(text.length - text.indexOf('\n') - 1);
  });

  it('accepts the raw CSV as the body (text/csv) with ?file_name=, and runs it to completion', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const merchant = await createMerchant();
    const response = await uploadRaw(merchant.secretKey, csv(CARD_HEADER, saleRows(3)), 'from-erp.csv');
    expect(response.status).toBe(200);
    const { data } = await response.json<{ data: { id: string; file_name: string; num_lines: number; status: string } }>();
    expect(data).toMatchObject({ file_name: 'from-erp.csv', num_lines: 3, status: 'pending' });
    const done = await waitForStatus(merchant.secretKey, data.id, 'completed');
    expect(done.processed_lines).toBe(3);
  });

  it('asks a raw upload for its file name', async () => {
    const merchant = await createMerchant();
    const response = await call('POST', '/api/filebatch', {
      key: merchant.secretKey,
      body: csv(CARD_HEADER, saleRows(1)),
      headers: { 'Content-Type': 'text/csv' },
    });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toBe('file_name: a text/csv upload names its file with ?file_name=');
  });

  it('accepts a file with a UTF-8 BOM and \\r\\n line ends, and maps each column by its header', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const merchant = await createMerchant();
    // Columns in another order than usual, a BOM, Windows line ends.
    const text = '\uFEFF' + csv(['amount', 'order_id', 'cc_number', 'cc_expiration', 'transaction_type'], [
      ['250', 'win1', '4111111111111111', '12/30', 'sale'],
      ['375', 'win2', '4111111111111111', '12/30', 'credit'],
    ], '\r\n');
    const response = await uploadMultipart(merchant.secretKey, text, 'excel.csv');
    expect(response.status).toBe(200);
    const { data } = await response.json<{ data: { id: string; num_lines: number } }>();
    expect(data.num_lines).toBe(2);
    await waitForStatus(merchant.secretKey, data.id, 'completed');
    const download = await call('GET', `/api/filebatch/${data.id}/download`, { key: merchant.secretKey });
    const { rows } = parseResult(await download.text());
    expect(rows.map((r) => [r.type, r.amount, r.idempotency_key])).toEqual([
      ['sale', '250', `${data.id}:2`],
      ['credit', '375', `${data.id}:3`],
    ]);
  });
});
