/**
 * Checks of a batch file's rows made while it streams in (docs/batch.md): every upload of a file
 * with a `transaction_id` column refuses a file that names one transaction in two lifecycle rows
 * (so the rows of one file never race each other for a transaction, and every run of the file acts
 * the same way); a validate-only upload also checks every row as a run would and counts them.
 */
import { hash53 } from '../../lib/hash53';
import { HALF, WORKERS } from '../../lib/platform-limits';
import { maskCardNumbersIn } from '../../lib/card-number';
import type { CsvRow } from '../../lib/batch-csv';
import { parseTransactionId } from '../transactions/ledger';
import { CURRENCY } from '../transactions/records';
import { normaliseInput, validateTransaction } from '../transactions/validation';
import { toParsedRow } from './chunk-plan';
import type { LedgerRefusal, LedgerRow } from './validate-ledger';
import { checkLifecycleRow, FIRST_PASS_TRANSACTION_ID_ERROR, lifecycleKind, TRANSACTION_ID_COLUMN } from './lifecycle-rows';

/**
 * The transactions a file's lifecycle rows name, by a 53-bit hash of the name (a number each, not
 * the text: at most BATCH_MAX_ROWS entries, about 25 bytes each, ~12 MiB for 500,000 rows, within an
 * invocation's 128 MiB). Two names sharing a hash would refuse a good file, with odds near 2^-53
 * per pair: about 1 in 70 million for a 500,000-row file.
 */
/**
 * Ledger shards one chunk's lifecycle rows may name. Each shard costs a chunk about 6 subrequests
 * (locate, claim, answer, the search index's read and change, a batch's D1 row), and a queue delivery
 * runs up to 5 chunks in one invocation: 16 × 6 × 5 = 480, under half of the subrequests the service
 * plans on per invocation (WORKERS.subrequestsPlanned). A file sorted by transaction_id names few
 * shards per chunk (one uploaded file is one shard; an API day is 1 to 8, and its ids sort by
 * sub-shard: services/transactions/api-shards.ts).
 */
export const MAX_SHARDS_PER_CHUNK = 16;
const SUBREQUESTS_PER_SHARD = 6;
const CHUNKS_PER_DELIVERY = 5;
if (MAX_SHARDS_PER_CHUNK * SUBREQUESTS_PER_SHARD * CHUNKS_PER_DELIVERY > WORKERS.subrequestsPlanned * HALF) throw new Error('MAX_SHARDS_PER_CHUNK exceeds the subrequest budget');

export class NamedOnce {
  readonly #firstLine = new Map<number, number>();
  #columns: string[] | null = null;
  #typeAt = -1;
  #idAt = -1;
  /** Data rows seen, and the shards the current chunk's lifecycle rows name (at most MAX_SHARDS_PER_CHUNK + 1 entries). */
  #rows = 0;
  readonly #chunkShards = new Set<string>();

  /** `chunkRows`: data rows per chunk (BATCH_CHUNK_ROWS), as the upload splits the file. */
  constructor(readonly chunkRows = 500) {}

  /** A row's problem (the whole file is refused with it), or null. */
  check(row: CsvRow): string | null {
    if (this.#columns === null) {
      this.#columns = row.fields;
      this.#typeAt = row.fields.indexOf('transaction_type');
      this.#idAt = row.fields.indexOf(TRANSACTION_ID_COLUMN);
      return null;
    }
    if (this.#rows % this.chunkRows === 0) this.#chunkShards.clear();
    this.#rows++;
    if (this.#idAt === -1 || lifecycleKind(row.fields[this.#typeAt]) === null) return null;
    const named = row.fields[this.#idAt]?.trim() ?? '';
    if (named === '') return null;
    const shard = shardKeyOf(named);
    if (shard !== null) {
      this.#chunkShards.add(shard);
      if (this.#chunkShards.size > MAX_SHARDS_PER_CHUNK) {
        const first = this.#rows - ((this.#rows - 1) % this.chunkRows);
        return `line ${row.line}: the lifecycle rows of data rows ${first} to ${first + this.chunkRows - 1} name transactions of more than ${MAX_SHARDS_PER_CHUNK} days or files; sort the file by transaction_id (docs/batch.md, "Lifecycle rows")`;
      }
    }
    const hash = hash53(named);
    const first = this.#firstLine.get(hash);
    if (first !== undefined) {
      return `line ${row.line}: transaction_id ${maskCardNumbersIn(named).slice(0, 100)} is named again (line ${first} names it); a file may act on a transaction once`;
    }
    this.#firstLine.set(hash, row.line);
    return null;
  }
}

/** The ledger shard an id this service gave lives in (an API day's sub-shard, or a batch file); null for `line:N` and ids of no shape. */
function shardKeyOf(id: string): string | null {
  const parsed = parseTransactionId(id);
  const original = parsed?.kind === 'refund' ? parsed.original : parsed;
  if (!original) return null;
  return original.kind === 'batch' ? original.batchId : `api/${original.day}/${original.sub}`;
}

/** How many row errors a validate-only answer lists (the total is always given). */
export const MAX_LISTED_ROW_ERRORS = 1_000;

export interface RowProblem {
  row: number;
  column: string;
  message: string;
}

/** What a validate-only upload answers besides the file's own problems. */
export interface FileReport {
  num_lines: number;
  row_errors: RowProblem[];
  row_error_count: number;
  rows_by_type: Record<string, number>;
  /** Minor units by currency and type, over the rows that would run; capture and refund rows without an amount (the whole amount left) are counted in `rows_without_amount`. */
  totals: Record<string, Record<string, number>>;
  rows_without_amount: number;
  /** Capture, void and refund rows naming an id checked against the transaction as it is now; the rest (past the request's read budget) are checked by the run. */
  ledger_checked_rows: number;
  ledger_unchecked_rows: number;
}

/** Every data row checked as a run checks it before any lookup or charge. */
export class FileReporter {
  readonly #named: NamedOnce;
  #columns: string[] | null = null;
  #ledgerRows: LedgerRow[] = [];
  readonly #report: FileReport = { num_lines: 0, row_errors: [], row_error_count: 0, rows_by_type: {}, totals: {}, rows_without_amount: 0, ledger_checked_rows: 0, ledger_unchecked_rows: 0 };

  constructor(
    readonly now: Date,
    chunkRows?: number,
  ) {
    this.#named = new NamedOnce(chunkRows);
  }

  /** A problem that refuses the whole file, or null. */
  row(row: CsvRow): string | null {
    const problem = this.#named.check(row);
    if (problem) return problem;
    if (this.#columns === null) {
      this.#columns = row.fields;
      return null;
    }
    this.#report.num_lines++;
    const parsed = toParsedRow(this.#columns, row);
    const kind = lifecycleKind(parsed.input.transaction_type);
    if (kind !== null) {
      const checked = checkLifecycleRow(kind, parsed.transactionId, parsed.input, row.line);
      if (!checked.ok) return this.#errors(row.line, checked.errors);
      this.#count(kind, checked.amount);
      // A row naming an id is also checked against the ledger (validate-ledger.ts), in groups.
      if (checked.reference.kind === 'id') this.#ledgerRows.push({ line: row.line, kind, transactionId: checked.reference.id, amount: checked.amount });
      return null;
    }
    if (parsed.transactionId !== undefined) return this.#errors(row.line, [FIRST_PASS_TRANSACTION_ID_ERROR]);
    const valid = validateTransaction(normaliseInput(parsed.input), this.now, 'batch');
    if (!valid.ok) return this.#errors(row.line, valid.errors);
    this.#count(valid.value.type, valid.value.amounts.amount ?? valid.value.amounts.baseAmount);
    return null;
  }

  /** The lifecycle rows naming an id read since the last call (at most a chunk's worth of a stream's bytes). */
  takeLedgerRows(): LedgerRow[] {
    const rows = this.#ledgerRows;
    this.#ledgerRows = [];
    return rows;
  }

  get pendingLedgerRows(): number {
    return this.#ledgerRows.length;
  }

  /** Rows the ledger check refused: row errors now, no longer counted as rows that would run. */
  refuse(refusals: readonly LedgerRefusal[]): void {
    for (const { row, errors } of refusals) {
      this.#errors(row.line, errors);
      this.#report.rows_by_type[row.kind] = (this.#report.rows_by_type[row.kind] ?? 1) - 1;
      if (this.#report.rows_by_type[row.kind] === 0) delete this.#report.rows_by_type[row.kind];
      if (row.kind === 'void') continue;
      if (row.amount === null) this.#report.rows_without_amount--;
      else {
        const totals = (this.#report.totals[CURRENCY] ??= {});
        totals[row.kind] = (totals[row.kind] ?? 0) - row.amount;
        if (totals[row.kind] === 0) delete totals[row.kind];
      }
    }
  }

  /** How many lifecycle rows were checked against the ledger, and how many were left to the run. */
  ledgerChecked(checked: number, unchecked: number): void {
    this.#report.ledger_checked_rows = checked;
    this.#report.ledger_unchecked_rows = unchecked;
  }

  report(): FileReport {
    // Ledger refusals come after the rows read later: listed in row order.
    this.#report.row_errors.sort((a, b) => a.row - b.row);
    return this.#report;
  }

  #errors(line: number, errors: readonly { field: string; msg: string }[]): null {
    this.#report.row_error_count++;
    for (const error of errors) {
      if (this.#report.row_errors.length >= MAX_LISTED_ROW_ERRORS) break;
      this.#report.row_errors.push({ row: line, column: error.field, message: error.msg });
    }
    return null;
  }

  #count(type: string, amount: number | null): void {
    this.#report.rows_by_type[type] = (this.#report.rows_by_type[type] ?? 0) + 1;
    if (type === 'void') return;
    if (amount === null) {
      this.#report.rows_without_amount++;
      return;
    }
    const totals = (this.#report.totals[CURRENCY] ??= {});
    totals[type] = (totals[type] ?? 0) + amount;
  }
}
