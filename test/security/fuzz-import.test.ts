/**
 * Property tests over the operators' CSV imports: arbitrary bytes and mutated files get a 200
 * with row errors naming their line, or a 400 naming the problem; never a 500, and a bad row
 * never stops the good ones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call } from '../helpers/api';
import { expectFailedEnvelope, fuzzRuns, hostileString } from '../helpers/fuzz';

interface ImportAnswer {
  status: string;
  data: { imported: number; skipped: number; errors: { line: number; msg: string }[] };
}

function importCsv(path: string, body: string | ReadableStream): Promise<Response> {
  return call('POST', path, { key: ADMIN_TOKEN, body, headers: { 'Content-Type': 'text/csv' } });
}

describe.each(['/admin/bins/import', '/admin/bins/ranges/import'])('%s under hostile CSV', (path) => {
  it('arbitrary bytes: 200 with row errors or a 400 naming the problem, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 400 }), async (bytes) => {
        const response = await importCsv(path, new Blob([bytes]).stream());
        expect([200, 400]).toContain(response.status);
        if (response.status === 400) await expectFailedEnvelope(response);
        else await response.body?.cancel();
      }),
      fuzzRuns(40),
    );
  });
});

describe('BIN rows with a hostile value in one column', () => {
  const columns = ['bin', 'card_brand', 'issuing_bank', 'card_type', 'card_level_generic', 'country', 'prepaid', 'commercial', 'currency'];
  const good = ['650400', 'discover', 'Fuzz Bank', 'credit', 'classic', 'US', 'false', 'false', 'USD'];

  it('each row is imported or skipped with its line named; the good rows around it are imported', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(columns.length - 1), hostileString, async (column, value) => {
        // A value that breaks the row's structure (a comma, quote or newline) is a different case.
        const clean = value.replace(/[",\r\n]/g, ' ');
        const bad = good.map((field, i) => (i === column ? clean : field));
        const csv = [columns.join(','), ['650401', ...good.slice(1)].join(','), bad.join(','), ['650402', ...good.slice(1)].join(',')].join('\n');
        const response = await importCsv('/admin/bins/import', `${csv}\n`);
        expect(response.status).toBe(200);
        const { data } = await response.json<ImportAnswer>();
        expect(data.imported + data.skipped).toBe(3);
        expect(data.imported).toBeGreaterThanOrEqual(2);
        for (const error of data.errors) {
          expect(error.line).toBe(3);
          expect(error.msg.length).toBeGreaterThan(0);
        }
      }),
      fuzzRuns(40),
    );
  });
});
