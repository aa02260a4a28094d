/**
 * Batch CSV files for the property tests: valid files in SPEC.md's format (every field quoted,
 * comma-separated, every row ending in "\n"), and single mutations of them that say which line
 * they touched and whether the file's structure or only a value changed.
 */
import fc from 'fast-check';

const encoder = new TextEncoder();

/** A card that the sandbox processor approves, and a few other valid card numbers. */
export const TEST_CARDS = ['4111111111111111', '5555555555554444', '378282246310005', '6011111111111117'] as const;

export interface CsvRow {
  transaction_type: string;
  cc_number: string;
  cc_expiration: string;
  cc_cvc: string;
  amount: string;
  order_id: string;
  description: string;
}

export const CSV_COLUMNS = ['transaction_type', 'cc_number', 'cc_expiration', 'cc_cvc', 'amount', 'order_id', 'description'] as const;

/** The sandbox processor's amount triggers (docs/transactions.md): declines and errors, not approvals. */
const TRIGGER_AMOUNTS = new Set([300, 301, 421]);

export const validRow: fc.Arbitrary<CsvRow> = fc
  .record({
    transaction_type: fc.constantFrom('sale', 'authorize', 'credit'),
    cc_number: fc.constantFrom(...TEST_CARDS),
    cc_expiration: fc.constantFrom('12/39', '01/40', '0641'),
    cvcSeed: fc.nat(),
    amount: fc.integer({ min: 1, max: 999_999 }).filter((n) => !TRIGGER_AMOUNTS.has(n)).map(String),
    order_id: fc.stringMatching(/^[A-Za-z0-9]{0,17}$/),
    description: fc.stringMatching(/^[A-Za-z0-9 ]{0,40}$/),
  })
  .map(({ cvcSeed, ...row }) => ({
    ...row,
    // American Express CVCs have 4 digits, the others 3.
    cc_cvc: row.cc_number.startsWith('37') ? String(1000 + (cvcSeed % 9000)) : String(100 + (cvcSeed % 900)),
  }));

/** The rows of a file as text fields, header first. */
export type CsvTable = string[][];

export function tableOf(rows: CsvRow[], columns: readonly string[] = CSV_COLUMNS): CsvTable {
  return [[...columns], ...rows.map((row) => columns.map((column) => row[column as keyof CsvRow] ?? ''))];
}

/** SPEC.md's format: every field in double quotes, "," between fields, "\n" after every row. */
export function renderCsv(table: CsvTable): string {
  return table.map((fields) => fields.map((field) => `"${field}"`).join(',') + '\n').join('');
}

export const validFile: fc.Arbitrary<CsvTable> = fc.array(validRow, { minLength: 1, maxLength: 8 }).map((rows) => tableOf(rows));

export interface MutatedFile {
  kind: string;
  bytes: Uint8Array;
  /** The 1-based line the mutation is on (header = 1). */
  line: number;
  /** True when only a value changed and the file's structure is intact. */
  valueOnly: boolean;
  /** The column whose value was changed, when the mutation changed one value. */
  column?: string;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function withValue(table: CsvTable, line: number, column: number, value: string): CsvTable {
  return table.map((fields, index) => (index === line - 1 ? fields.map((f, c) => (c === column ? value : f)) : [...fields]));
}

/** The mutations the issue lists. */
export const MUTATIONS = [
  'quote inside a field',
  'dropped field',
  'extra field',
  'stray CR inside a value',
  'stray CR ending a line',
  'NUL byte in a value',
  'invalid UTF-8 in a value',
  '1 MB field',
  '10,000 columns',
  'duplicate header',
] as const;

/** One of the mutations, applied at a random data line (or the header). */
export function mutatedFile(): fc.Arbitrary<MutatedFile> {
  return fc
    .tuple(validFile, fc.nat(), fc.nat(), fc.constantFrom(...MUTATIONS))
    .map(([table, lineSeed, columnSeed, kind]) => withReport(mutate(table, lineSeed, columnSeed, kind)));
}

/** Counterexamples print as text ("dropped field at line 3: …"), not as a byte array. */
function withReport(file: MutatedFile): MutatedFile {
  const text = new TextDecoder().decode(file.bytes);
  const shown = text.length > 600 ? `${text.slice(0, 600)}… (${file.bytes.length} bytes)` : text;
  return Object.assign(file, { [fc.toStringMethod]: () => `${file.kind} at line ${file.line}: ${JSON.stringify(shown)}` });
}

function mutate(table: CsvTable, lineSeed: number, columnSeed: number, kind: (typeof MUTATIONS)[number]): MutatedFile {
  const dataLine = 2 + (lineSeed % (table.length - 1));
  const width = table[0]?.length ?? 1;
  const column = columnSeed % width;
  // Values that do not decide anything structural: description (free text) and order_id.
  const valueColumnName = columnSeed % 2 === 0 ? 'description' : 'order_id';
  const valueColumn = table[0]?.indexOf(valueColumnName) ?? 0;
  const text = (t: CsvTable) => encoder.encode(renderCsv(t));
  switch (kind) {
    case 'quote inside a field': {
      const value = table[dataLine - 1]?.[column] ?? '';
      return { kind, line: dataLine, valueOnly: false, bytes: text(withValue(table, dataLine, column, `${value.slice(0, 2)}"${value.slice(2)}`)) };
    }
    case 'dropped field':
      return { kind, line: dataLine, valueOnly: false, bytes: text(table.map((f, i) => (i === dataLine - 1 ? f.slice(0, -1) : f))) };
    case 'extra field':
      return { kind, line: dataLine, valueOnly: false, bytes: text(table.map((f, i) => (i === dataLine - 1 ? [...f, 'extra'] : f))) };
    case 'stray CR inside a value':
      return { kind, line: dataLine, valueOnly: true, column: valueColumnName, bytes: text(withValue(table, dataLine, valueColumn, 'ab\rcd')) };
    case 'stray CR ending a line': {
      const lines = renderCsv(table).split('\n');
      lines[dataLine - 1] = `${lines[dataLine - 1] ?? ''}\r`;
      return { kind, line: dataLine, valueOnly: true, bytes: encoder.encode(lines.join('\n')) };
    }
    case 'NUL byte in a value':
      return { kind, line: dataLine, valueOnly: true, column: valueColumnName, bytes: text(withValue(table, dataLine, valueColumn, 'ab\u0000cd')) };
    case 'invalid UTF-8 in a value': {
      const marker = 'INVALIDUTF8';
      const [before, after] = renderCsv(withValue(table, dataLine, valueColumn, marker)).split(marker);
      return {
        kind,
        line: dataLine,
        valueOnly: true,
        column: valueColumnName,
        bytes: concat(encoder.encode(before ?? ''), new Uint8Array([0xff, 0xfe, 0xc3]), encoder.encode(after ?? '')),
      };
    }
    case '1 MB field':
      return { kind, line: dataLine, valueOnly: true, column: valueColumnName, bytes: text(withValue(table, dataLine, valueColumn, 'A'.repeat(1024 * 1024))) };
    case '10,000 columns': {
      const header = [...(table[0] ?? []), ...Array.from({ length: 10_000 - width }, (_, i) => `extra_${i}`)];
      return { kind, line: 1, valueOnly: false, bytes: text([header, ...table.slice(1).map((f) => [...f, ...header.slice(width).map(() => '')])]) };
    }
    case 'duplicate header': {
      // The last column renamed to the first one's name.
      const header = [...(table[0] ?? [])];
      header[header.length - 1] = header[0] ?? 'transaction_type';
      return { kind, line: 1, valueOnly: false, bytes: text([header, ...table.slice(1)]) };
    }
  }
}
