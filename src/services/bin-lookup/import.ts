/**
 * Operators' imports of BIN data and account ranges: a CSV body read as a stream, rows parsed and
 * upserted in batches as they arrive (memory stays flat), bad rows reported and skipped. Every
 * import bumps the data version so no cached answer from the old data is served again.
 */
import type { Env } from '../../env';
import { AppError } from '../../errors';
import {
  detectBinFormat,
  detectRangeFormat,
  parseBinRow,
  parseRangeRow,
  type BinCsvLayout,
  type HeaderResult,
  type RangeCsvLayout,
  type RowResult,
} from './import-formats';
import { CsvTooLargeError, readCsv } from '../../lib/rfc4180-reader';
import type { Clock } from '../../lib/time';
import { upsertBinsStatements, upsertRangesStatements, type AccountRange, type BinRecord } from '../../storage/bins';
import { bumpLookupDataVersion } from './data-version';

export interface ImportLimits {
  maxBytes: number;
  maxRows: number;
}

/** 100,000 rows and 32 MiB per request; `npm run bins:import` splits larger files. */
export const IMPORT_LIMITS: ImportLimits = { maxBytes: 32 * 1024 * 1024, maxRows: 100_000 };
/** Errors listed in an answer; `skipped` still counts every bad row. */
export const MAX_REPORTED_ERRORS = 100;
/** Records upserted per db.batch call (ROWS_PER_STATEMENT each statement). */
const RECORDS_PER_FLUSH = 5_000;

export interface ImportError {
  line: number;
  msg: string;
}

export interface ImportResult {
  imported: number;
  skipped: number;
  errors: ImportError[];
}

export type ImportKind = 'bins' | 'ranges';

interface Importer<Layout, Item> {
  detect(header: readonly string[]): HeaderResult<Layout>;
  parse(layout: Layout, fields: readonly string[]): RowResult<Item>;
  statements(db: D1Database, items: Item[], updatedAt: string): D1PreparedStatement[];
}

const binImporter: Importer<BinCsvLayout, BinRecord> = {
  detect: detectBinFormat,
  parse: parseBinRow,
  statements: upsertBinsStatements,
};

const rangeImporter: Importer<RangeCsvLayout, AccountRange> = {
  detect: detectRangeFormat,
  parse: parseRangeRow,
  statements: upsertRangesStatements,
};

export function importBins(env: Env, body: ReadableStream<Uint8Array>, clock: Clock, limits = IMPORT_LIMITS): Promise<ImportResult> {
  return runImport(env, body, binImporter, clock, limits);
}

export function importAccountRanges(env: Env, body: ReadableStream<Uint8Array>, clock: Clock, limits = IMPORT_LIMITS): Promise<ImportResult> {
  return runImport(env, body, rangeImporter, clock, limits);
}

async function runImport<Layout, Item>(
  env: Env,
  body: ReadableStream<Uint8Array>,
  importer: Importer<Layout, Item>,
  clock: Clock,
  limits: ImportLimits,
): Promise<ImportResult> {
  const updatedAt = clock().toISOString();
  const result: ImportResult = { imported: 0, skipped: 0, errors: [] };
  const skip = (line: number, msg: string) => {
    result.skipped++;
    if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ line, msg });
  };

  let layout: Layout | undefined;
  let buffered: Item[] = [];
  let bufferedRows = 0;
  let rows = 0;
  const flush = async () => {
    if (buffered.length > 0) await env.DB.batch(importer.statements(env.DB, buffered, updatedAt));
    result.imported += bufferedRows;
    buffered = [];
    bufferedRows = 0;
  };

  try {
    for await (const record of readCsv(body, limits.maxBytes)) {
      if (layout === undefined) {
        const header = importer.detect(record.fields);
        if (!header.ok) throw new AppError('bad_request', `line ${record.line}: ${header.reason}`);
        layout = header.layout;
        continue;
      }
      if (record.fields.length === 1 && record.fields[0]?.trim() === '') continue; // blank line
      if (++rows > limits.maxRows) {
        skip(record.line, `more than ${limits.maxRows} rows in one request: this row and the rest were not read; split the file (npm run bins:import does)`);
        break;
      }
      const parsed = importer.parse(layout, record.fields);
      if (!parsed.ok) {
        skip(record.line, parsed.reason);
        continue;
      }
      buffered.push(...parsed.records);
      bufferedRows++;
      if (buffered.length >= RECORDS_PER_FLUSH) await flush();
    }
    if (layout === undefined) throw new AppError('bad_request', 'the CSV is empty: a header row is required');
    await flush();
  } catch (err) {
    if (!(err instanceof CsvTooLargeError)) throw err;
    await flush();
    throw new AppError(
      'payload_too_large',
      `body exceeds ${limits.maxBytes} bytes: the first ${result.imported} rows were imported, the rest was not read; split the file (npm run bins:import does)`,
    );
  } finally {
    // Whatever was written, answers cached from the previous data must not be served again.
    if (result.imported > 0 || layout !== undefined) await bumpLookupDataVersion(env, clock());
  }
  return result;
}
