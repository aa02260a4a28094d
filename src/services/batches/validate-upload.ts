/**
 * A validate-only upload (`POST /api/filebatch?validate_only=true`, docs/batch.md): the file is read
 * to its end as an upload reads it, with the same structure checks and limits, and every row is
 * checked as a run checks it before any lookup or charge. Nothing is stored, no batch is made, no
 * row is charged: the answer says what a run would refuse and what it would run.
 */
import { CsvScanner, problemMessage } from '../../lib/batch-csv';
import { RowTap } from '../../lib/row-tap';
import type { Clock } from '../../lib/time';
import { FileReporter, type FileReport } from './file-checks';
import { LEDGER_CHECK_ROWS, type LedgerCheck } from './validate-ledger';
import type { BatchLimits } from './limits';
import { checkHeader, MAX_ROW_BYTES, type UploadSource } from './upload';

export type ValidateOutcome =
  | { ok: true; report: FileReport & { file_name: string } }
  | { ok: false; reason: 'invalid_file' | 'too_large'; msg: string };

export async function validateUpload(limits: BatchLimits, source: UploadSource, clock: Clock, ledger: LedgerCheck | null): Promise<ValidateOutcome> {
  const scanner = new CsvScanner({ chunkRows: limits.chunkRows, maxRowBytes: MAX_ROW_BYTES, checkHeader });
  const reporter = new FileReporter(clock(), limits.chunkRows);
  // Lifecycle rows naming an id, checked against the ledger a group at a time as the file streams.
  const checkLedger = async (atLeast: number) => {
    if (ledger && reporter.pendingLedgerRows >= atLeast) reporter.refuse(await ledger.check(reporter.takeLedgerRows()));
  };
  const tap = new RowTap((row) => reporter.row(row));
  let size = 0;
  for await (const bytes of source.bytes) {
    size += bytes.length;
    if (size > limits.maxBytes) return { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxBytes} bytes` };
    const problem = scanner.push(bytes);
    if (problem) return { ok: false, reason: 'invalid_file', msg: problemMessage(problem) };
    if (scanner.rows > limits.maxRows) return { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
    const rowProblem = tap.push(bytes);
    if (rowProblem) return { ok: false, reason: 'invalid_file', msg: rowProblem };
    await checkLedger(LEDGER_CHECK_ROWS);
  }
  const scan = scanner.finish();
  if (!scan.ok) return { ok: false, reason: 'invalid_file', msg: problemMessage(scan) };
  if (scan.rows > limits.maxRows) return { ok: false, reason: 'too_large', msg: `the file exceeds the limit of ${limits.maxRows} data rows` };
  const lastProblem = tap.finish();
  if (lastProblem) return { ok: false, reason: 'invalid_file', msg: lastProblem };
  await checkLedger(1);
  if (ledger) reporter.ledgerChecked(ledger.checked, ledger.unchecked);
  return { ok: true, report: { file_name: source.fileName, ...reporter.report() } };
}
