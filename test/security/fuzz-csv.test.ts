/**
 * Property tests over batch uploads and the transaction fields, through the real upload route,
 * queue, consumer and Durable Object:
 * - arbitrary bytes and valid files with one mutation: a 400 naming the line, or (when only a
 *   value changed) a completed batch whose row says why; never a 500, never stuck in processing;
 * - arbitrary strings in every column: error rows, never an exception escaping the row.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { INPUT_COLUMNS } from '../../src/schemas/transaction-columns';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { parseResult, type BatchRecord } from '../helpers/batch';
import { mutatedFile, renderCsv, validFile } from '../helpers/csv-fuzz';
import { expectFailedEnvelope, fuzzRuns, hostileString } from '../helpers/fuzz';

let shop: TestMerchant;
beforeAll(async () => {
  // Valid rows include credits of any amount: the credit cap is credit-cap.test.ts's subject.
  shop = await createMerchant({ name: 'CSV Fuzz Shop', max_credit_amount: 99_999_999_999 });
});

function upload(bytes: Uint8Array | string, fileName = 'fuzz.csv'): Promise<Response> {
  const form = new FormData();
  form.append('file', new File([bytes], fileName, { type: 'text/csv' }));
  // Repeats meant: a mutation that only changes a line ending is the same content as an earlier file
  // (the duplicate guard's refusal is filebatch-repeats and filebatch-near-duplicates' subject).
  return call('POST', '/api/filebatch?allow_duplicate=true', { key: shop.secretKey, body: form });
}

/** Polls the batch until it has ended; a batch that never ends fails the test (no sleep, a bounded wait). */
async function ended(id: string): Promise<BatchRecord> {
  return vi.waitFor(
    async () => {
      const response = await call('GET', `/api/filebatch/${id}`, { key: shop.secretKey });
      const record = await response.json<BatchRecord>();
      if (record.status !== 'completed' && record.status !== 'failed') throw new Error(`batch ${id} is still ${record.status}`);
      return record;
    },
    { timeout: 15_000, interval: 10 },
  );
}

async function results(id: string): Promise<Record<string, string>[]> {
  const response = await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey });
  expect(response.status).toBe(200);
  return parseResult(await response.text()).rows;
}

/** An accepted upload runs to `completed`, one result line per data row, in order. */
async function expectCompleted(response: Response): Promise<{ id: string; rows: Record<string, string>[] }> {
  const { data } = await response.json<{ data: { id: string; num_lines: number } }>();
  const record = await ended(data.id);
  expect(record).toMatchObject({ status: 'completed', processed_lines: data.num_lines });
  const rows = await results(data.id);
  expect(rows).toHaveLength(data.num_lines);
  expect(rows.map((row) => row.idempotency_key)).toEqual(rows.map((_, i) => `${data.id}:${i + 2}`));
  return { id: data.id, rows };
}

describe('batch upload under hostile files', () => {
  it('valid files complete, one approved result per row', async () => {
    await fc.assert(
      fc.asyncProperty(validFile, async (table) => {
        const response = await upload(renderCsv(table));
        expect(response.status).toBe(200);
        const { rows } = await expectCompleted(response);
        expect(rows.every((row) => row.response === 'approved')).toBe(true);
      }),
      fuzzRuns(5),
    );
  });

  it('arbitrary bytes: a 400 naming the problem, never a 500 and never a batch', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ minLength: 0, maxLength: 300 }),
          fc.string({ maxLength: 200 }).map((text) => new TextEncoder().encode(text)),
        ),
        async (bytes) => {
          const response = await upload(bytes);
          expect(response.status).toBe(400);
          await expectFailedEnvelope(response);
        },
      ),
      fuzzRuns(40),
    );
  });

  it('one mutation of a valid file: 400 naming its line, or a completed batch whose row says why', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(mutatedFile(), async (mutation) => {
        seen.add(mutation.kind);
        const response = await upload(mutation.bytes);
        expect([200, 400], mutation.kind).toContain(response.status);
        if (response.status === 400) {
          const body = await expectFailedEnvelope(response);
          expect(body.msg, mutation.kind).toMatch(new RegExp(`^line ${mutation.line}: `));
          return;
        }
        // Accepted: only a value may have changed, and the batch must finish with a line per row.
        expect(mutation.valueOnly, `${mutation.kind} was accepted`).toBe(true);
        const { rows } = await expectCompleted(response);
        const row = rows[mutation.line - 2];
        if (mutation.column === undefined) {
          // Only the line's end changed (a CR before its "\n"): the row reads as if it were not there.
          expect(row?.response, mutation.kind).toBe('approved');
        } else {
          // The changed value is refused, and the row's text names its column.
          expect(row?.response, mutation.kind).toBe('error');
          expect(row?.processor_response_text, mutation.kind).toMatch(new RegExp(`(^|; )${mutation.column}: `));
        }
        // The other rows are untouched: every valid row is approved.
        expect(rows.filter((other) => other !== row && other.response !== 'approved')).toEqual([]);
      }),
      fuzzRuns(40),
    );
    expect(seen.size).toBeGreaterThanOrEqual(8); // the run covered (nearly) every kind of mutation
  });

  it('each listed mutation, once: the outcome the docs promise', async () => {
    const header = '"transaction_type","amount","cc_number","cc_expiration","description"\n';
    const good = '"sale","100","4111111111111111","12/39","ok"\n';
    const cases: [string, string | Uint8Array, string][] = [
      ['quote inside a field', header + good + '"sale","1"00","4111111111111111","12/39","x"\n', 'line 3: '],
      ['dropped field', header + good + '"sale","100","4111111111111111","12/39"\n', 'line 3: expected 5 fields, found 4'],
      ['extra field', header + good + '"sale","100","4111111111111111","12/39","x","y"\n', 'line 3: expected 5 fields, found 6'],
      ['stray CR inside a value', header + good + '"sale","100","4111111111111111","12/39","a\rb"\n', 'line 3: '],
      ['1 MB field', header + good + `"sale","100","4111111111111111","12/39","${'A'.repeat(1 << 20)}"\n`, 'line 3: row longer than'],
      ['10,000 columns', Array.from({ length: 10_000 }, (_, i) => `"c${i}"`).join(',') + '\n', 'line 1: '],
      ['duplicate header', '"transaction_type","amount","amount"\n"sale","1","2"\n', 'line 1: duplicate column "amount"'],
      [
        'invalid UTF-8',
        new Uint8Array([...new TextEncoder().encode(header + good + '"sale","100","4111111111111111","12/39","'), 0xc3, 0x28, 0x22, 0x0a]),
        'line 3: not valid UTF-8',
      ],
    ];
    for (const [kind, bytes, msg] of cases) {
      const response = await upload(bytes);
      expect(response.status, kind).toBe(400);
      expect((await expectFailedEnvelope(response)).msg, kind).toContain(msg);
    }
    const nul = await upload(header + good + '"sale","100","4111111111111111","12/39","a\u0000b"\n');
    expect(nul.status).toBe(200);
    const { rows } = await expectCompleted(nul);
    expect(rows.map((row) => row.response)).toEqual(['approved', 'error']);
    expect(rows[1]?.processor_response_text).toMatch(/^description: /);
  });
});

/** A value that keeps the CSV structure (no quote, no line end): anything else is fair. */
const fieldValue = fc.oneof(hostileString, fc.string({ maxLength: 30 })).map((value) => value.replace(/["\r\n]/g, ''));

describe('transaction fields hold arbitrary strings', () => {
  it('through a batch file: every column arbitrary, the batch completes with one result line per row', async () => {
    const columns = fc.shuffledSubarray([...INPUT_COLUMNS], { minLength: 1, maxLength: 12 }).map((picked) =>
      picked.includes('transaction_type') ? picked : ['transaction_type', ...picked],
    );
    await fc.assert(
      fc.asyncProperty(
        columns.chain((header) =>
          fc.tuple(fc.constant(header), fc.array(fc.array(fieldValue, { minLength: header.length, maxLength: header.length }), { minLength: 1, maxLength: 5 })),
        ),
        async ([header, rows]) => {
          const withAmount = header.includes('amount') || header.includes('base_amount') ? header : [...header, 'amount'];
          const table = [withAmount, ...rows.map((row) => (withAmount.length > header.length ? [...row, '100'] : row))];
          const response = await upload(renderCsv(table));
          // Empty header names or other header problems are the file's, and named.
          if (response.status === 400) {
            expect((await expectFailedEnvelope(response)).msg).toMatch(/^line \d+: /);
            return;
          }
          expect(response.status).toBe(200);
          const { rows: lines } = await expectCompleted(response);
          for (const line of lines) expect(['approved', 'declined', 'error']).toContain(line.response);
        },
      ),
      fuzzRuns(10),
    );
  });
});
