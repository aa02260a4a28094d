import { describe, expect, it } from 'vitest';
import { CsvScanner, parseChunkRows, problemMessage, splitQuotedLine, toCsvLine, type CsvScanResult } from '../../src/lib/batch-csv';
import { checkHeader } from '../../src/services/batches/upload';

const encoder = new TextEncoder();

/** Scans `text` (or bytes) fed in pieces of `pieceSize` bytes; answers the result or "line N: msg". */
function scan(input: string | Uint8Array, options: { chunkRows?: number; pieceSize?: number } = {}): CsvScanResult | string {
  const bytes = typeof input === 'string' ? encoder.encode(input) : input;
  const scanner = new CsvScanner({ chunkRows: options.chunkRows ?? 2, maxRowBytes: 1024, checkHeader });
  const size = options.pieceSize ?? bytes.length;
  for (let i = 0; i < bytes.length; i += size) {
    const problem = scanner.push(bytes.subarray(i, i + size));
    if (problem) return problemMessage(problem);
  }
  const result = scanner.finish();
  return result.ok ? result : problemMessage(result);
}

const HEADER = '"transaction_type","amount","cc_number"\n';
const ROW = '"sale","100","4111111111111111"\n';

describe('CsvScanner: structure of a batch file', () => {
  it('counts data rows and cuts chunks every N rows at exact byte offsets, whatever the read sizes', () => {
    const text = HEADER + ROW.repeat(5);
    for (const pieceSize of [1, 3, 7, 1000]) {
      const result = scan(text, { chunkRows: 2, pieceSize });
      expect(result).toEqual({
        ok: true,
        columns: ['transaction_type', 'amount', 'cc_number'],
        rows: 5,
        chunks: [
          { index: 0, offset: HEADER.length, length: 2 * ROW.length, firstLine: 2, rows: 2 },
          { index: 1, offset: HEADER.length + 2 * ROW.length, length: 2 * ROW.length, firstLine: 4, rows: 2 },
          { index: 2, offset: HEADER.length + 4 * ROW.length, length: ROW.length, firstLine: 6, rows: 1 },
        ],
      });
    }
  });

  it('accepts \\r\\n line ends and a UTF-8 BOM, with offsets counted in the stored bytes', () => {
    const text = '\uFEFF' + (HEADER + ROW + ROW).replace(/\n/g, '\r\n');
    const result = scan(text, { chunkRows: 1 });
    if (typeof result === 'string') throw new Error(result);
    expect(result.columns).toEqual(['transaction_type', 'amount', 'cc_number']);
    expect(result.rows).toBe(2);
    const bytes = encoder.encode(text);
    const chunk = result.chunks[1];
    if (!chunk) throw new Error('no second chunk');
    expect(new TextDecoder().decode(bytes.subarray(chunk.offset, chunk.offset + chunk.length))).toBe(ROW.replace('\n', '\r\n'));
    expect(chunk.firstLine).toBe(3);
  });

  it('accepts a last row without its line end, and trailing blank lines', () => {
    expect(scan(HEADER + ROW + ROW.trimEnd())).toMatchObject({ ok: true, rows: 2 });
    const trailing = scan(HEADER + ROW + '\n\r\n');
    expect(trailing).toMatchObject({ ok: true, rows: 1, chunks: [{ length: ROW.length }] });
  });

  it('accepts multi-byte UTF-8 text split across reads', () => {
    const text = '"transaction_type","amount","billing_city"\n"sale","100","Zürich 東京 😀"\n';
    expect(scan(text, { pieceSize: 1 })).toMatchObject({ ok: true, rows: 1 });
  });

  it.each([
    ['a row with too few fields', HEADER + ROW + '"sale","100"\n', 'line 3: expected 3 fields, found 2'],
    ['a row with too many fields', HEADER + '"sale","100","4111111111111111",""\n', 'line 2: expected 3 fields, found 4'],
    ['an unquoted field', HEADER + '"sale",100,"4111111111111111"\n', 'line 2: field 2 is not wrapped in double quotes'],
    ['a quote inside a field', HEADER + '"sale","10"0","4111111111111111"\n', 'line 2: a double quote inside field 2'],
    ['a field left open at a line end', HEADER + '"sale","100","4111111111111111\n', 'line 2: field 3 is not closed by a double quote'],
    ['a field left open at the end of the file', HEADER + '"sale","100","4111', 'line 2: field 3 is not closed by a double quote'],
    ['a space after a comma', HEADER + '"sale", "100","4111111111111111"\n', 'line 2: field 2 is not wrapped in double quotes'],
    ['a bare carriage return', HEADER + '"sale","100","4111111111111111"\r"sale"\n', 'line 2: a carriage return not followed by a line feed'],
    ['a blank line between rows', HEADER + ROW + '\n' + ROW, 'line 3: empty line'],
    ['an unknown column', '"transaction_type","amount","card"\n' + ROW, 'line 1: unknown column "card"'],
    ['a duplicate column', '"transaction_type","amount","amount"\n' + ROW, 'line 1: duplicate column "amount"'],
    ['no transaction_type column', '"amount","cc_number"\n"100","4111111111111111"\n', 'line 1: the header has no transaction_type column'],
    ['no amount column', '"transaction_type","cc_number"\n"sale","4111111111111111"\n', 'line 1: the header needs an amount or base_amount column'],
    ['an empty file', '', 'the file is empty'],
    ['a header and no rows', HEADER, 'the file has a header but no data rows'],
    ['a header and only blank lines', HEADER + '\n\n', 'the file has a header but no data rows'],
  ])('rejects %s', (_name, text, msg) => {
    expect(scan(text, { pieceSize: 5 })).toBe(msg);
  });

  it('accepts base_amount instead of amount', () => {
    expect(scan('"transaction_type","base_amount"\n"sale","100"\n')).toMatchObject({ ok: true, rows: 1 });
  });

  it('rejects bytes that are not UTF-8, naming the line', () => {
    const bytes = encoder.encode(HEADER + ROW + '"sale","100","x"\n');
    const bad = new Uint8Array(bytes.length + 1);
    bad.set(bytes.subarray(0, bytes.length - 3));
    bad.set([0xc3, 0x28], bytes.length - 3); // 0xC3 must be followed by a continuation byte
    bad.set(encoder.encode('"\n'), bytes.length - 1);
    expect(scan(bad)).toBe('line 3: not valid UTF-8');
    expect(scan(new Uint8Array([0x22, 0xff, 0x22, 0x0a]))).toBe('line 1: not valid UTF-8');
  });

  it('rejects a row longer than the limit', () => {
    const long = `"sale","100","${'1'.repeat(2000)}"\n`;
    expect(scan(HEADER + long)).toBe('line 2: row longer than 1024 bytes');
  });
});

describe('reading rows back and writing result lines', () => {
  it('splits a chunk into rows with their file line numbers, \\r\\n or \\n', () => {
    expect(parseChunkRows('"sale","100"\r\n"credit",""\r\n', 7)).toEqual([
      { line: 7, fields: ['sale', '100'] },
      { line: 8, fields: ['credit', ''] },
    ]);
    expect(splitQuotedLine('\uFEFF"a","b"')).toEqual(['a', 'b']);
  });

  it('quotes every field, empty for null, and keeps one row on one line', () => {
    expect(toCsvLine(['a', 1, null, true, 'say "hi"\nthere'])).toBe('"a","1","","true","say ""hi"" there"\n');
  });

  it('neutralises text a spreadsheet would run as a formula, in every text column', () => {
    const cells = ['=1+2', '+SUM(A1)', '-2+3', '@cmd', '\t=1', '\r=1', '  =1', ' -5', '\n=1', 'fine', "'quoted", 'a=b'];
    expect(toCsvLine(cells)).toBe(
      '"\'=1+2","\'+SUM(A1)","\'-2+3","\'@cmd","\'\t=1","\' =1","\'  =1","\' -5","\' =1","fine","\'quoted","a=b"\n',
    );
  });

  it('leaves numbers in numeric columns as numbers, negative ones included, and nothing else', () => {
    const numeric = [true, true, true, true, false, false];
    expect(toCsvLine([-500, '-25', 1000, '=1+2', -500, '-25'], numeric)).toBe('"-500","-25","1000","\'=1+2","\'-500","\'-25"\n');
  });
});
