/**
 * One synchronous step of a ledger shard's captures, voids and refunds (operations.ts), for one
 * operation or a batch chunk's many: what the step's checks read is read at its start, a few
 * statements per table for the whole group (storage/ledger-shard/bulk.ts), and what it writes is
 * held here and written at its end the same way. Each operation sees the ones before it in the
 * step through these maps (a claim its earlier claims, an answer the states earlier answers
 * wrote), exactly as if each had read and written SQLite itself; nothing here awaits, so no other
 * call (a settlement run, an API operation) runs between the reads and the writes.
 */
import {
  answerOperations,
  COUNTS_ROW_FROM,
  findOperations,
  insertAnsweredOperations,
  insertOperations,
  OpenOperationBlocks,
  operationCountsOf,
  pageMarks,
  pageRowKey,
  pendingOperationsOf,
  readStatesOf,
  writeOperationCounts,
  writeStates,
  type BlockOp,
  type OperationCounts,
  type OperationRow,
  type StateRow,
} from '../../storage/ledger-shard';
import type { ReceiptEntry } from '../../storage/receipt-outbox';
import { queueReceipts } from '../../services/receipts/shard';
import { currentNow, type PageRecord } from './reading';

type Mark = { settledOn: string | null; settledAt: string | null };

export class OperationStep {
  readonly #sql: SqlStorage;
  readonly #operations: Map<string, OperationRow>;
  readonly #pending: Map<string, OperationRow>;
  readonly #counts: Map<string, OperationCounts>;
  readonly #states: Map<string, StateRow>;
  readonly #marks: Map<string, Mark>;
  readonly #claims: OperationRow[] = [];
  readonly #countsWritten = new Map<string, OperationCounts>();
  readonly #answers: OperationRow[] = [];
  /** Claims held in a block, answered: each a new row (operation-blocks.ts). */
  readonly #answeredFromBlocks: OperationRow[] = [];
  readonly #blocks: OpenOperationBlocks;
  readonly #stateWrites: { state: StateRow; updatedAt: string }[] = [];
  readonly #receipts: ReceiptEntry[] = [];

  /**
   * Reads, for the step: the operations under `keys`, the states of `ids` (and, with `claims`, the
   * operation pending on each and its counts), and the settlement marks of the page rows `found`.
   */
  constructor(sql: SqlStorage, merchantId: string, read: { keys: readonly string[]; ids: readonly string[]; found: readonly (PageRecord | null)[]; claims: boolean }) {
    this.#sql = sql;
    this.#states = readStatesOf(sql, merchantId, read.ids);
    // The blocks with claims open, read once for the step (at most MAX_OPEN_OPERATION_BLOCKS rows),
    // and the operations answered in blocks that the states name.
    this.#blocks = OpenOperationBlocks.read(sql, read.ids, this.#states);
    this.#operations = findOperations(sql, read.keys, this.#blocks);
    this.#pending = read.claims ? pendingOperationsOf(sql, read.ids, this.#blocks) : new Map();
    this.#counts = read.claims ? operationCountsOf(sql, read.ids, this.#blocks) : new Map();
    this.#marks = pageMarks(sql, [...new Set(read.found.flatMap((f) => (f ? [f.row.page] : [])))]);
  }

  /** The operation under `key` as the step has it now. */
  operation(key: string): OperationRow | null {
    return this.#operations.get(key) ?? null;
  }

  /** The operation claimed and not answered on a transaction (the step's claims included). */
  pendingOf(transactionId: string): OperationRow | null {
    return this.#pending.get(transactionId) ?? null;
  }

  countsOf(transactionId: string): OperationCounts {
    return this.#counts.get(transactionId) ?? { operations: 0, refunds: 0 };
  }

  /** A transaction as it is now (reading.ts `currentNow`), the step's state writes included. */
  current(transactionId: string, found: PageRecord | null, expiredBefore: string): StateRow | null {
    return currentNow(this.#states.get(transactionId), found, (row) => this.#marks.get(pageRowKey(row)) ?? { settledOn: null, settledAt: null }, expiredBefore);
  }

  /**
   * Records a claim and counts it (`before`: what countsOf answered): in the counts row when the
   * transaction has one or now reaches COUNTS_ROW_FROM; below that its rows count it (bulk.ts).
   */
  claim(operation: OperationRow, before: OperationCounts): void {
    const operations = before.operations + 1;
    const refunds = before.refunds + (operation.kind === 'refund' ? 1 : 0);
    const stored = before.stored === true || operations >= COUNTS_ROW_FROM;
    const counts: OperationCounts = stored ? { operations, refunds, stored } : { operations, refunds };
    this.#claims.push(operation);
    this.#operations.set(operation.key, operation);
    this.#pending.set(operation.transactionId, operation);
    this.#counts.set(operation.transactionId, counts);
    if (stored) this.#countsWritten.set(operation.transactionId, counts);
  }

  /**
   * Keeps a claim's answer (as stored) in the block that holds the claim, when it has room: where,
   * for the transaction's state to name (the caller writes that state in this step), or null.
   * Only an approved capture's or void's, once per transaction (the caller checks both).
   */
  keepInBlock(key: string, answer: string): BlockOp | null {
    const kept = this.#blocks.keep(key, answer);
    if (!kept) return null;
    const claimed = this.#operations.get(key);
    if (!claimed) throw new Error('no such operation was claimed');
    this.#operations.set(key, { ...claimed, answer });
    if (this.#pending.get(claimed.transactionId)?.key === key) this.#pending.delete(claimed.transactionId);
    return kept;
  }

  /** Keeps an operation's answer under its key, in its row (it is no longer pending). */
  answer(key: string, answer: string): void {
    const claimed = this.#operations.get(key);
    if (!claimed) throw new Error('no such operation was claimed');
    const answered = { ...claimed, answer };
    this.#operations.set(key, answered);
    if (this.#pending.get(claimed.transactionId)?.key === key) this.#pending.delete(claimed.transactionId);
    if (this.#blocks.holds(key)) {
      this.#blocks.drop(key);
      this.#answeredFromBlocks.push(answered);
    } else this.#answers.push(answered);
  }

  writeState(state: StateRow, updatedAt: string): void {
    this.#states.set(String(state.stored.record.id), state);
    this.#stateWrites.push({ state, updatedAt });
  }

  /** A receipt to queue with the step's writes (an outbox row of its own, as one operation queues it). */
  queueReceipt(receipt: ReceiptEntry): void {
    this.#receipts.push(receipt);
  }

  /** Writes what the step recorded; call inside the step's storage transaction. */
  flush(): void {
    // A chunk's claims as one block row when there is room; a few (an API operation's), a row each.
    if (!this.#blocks.writeClaims(this.#claims)) insertOperations(this.#sql, this.#claims);
    writeOperationCounts(this.#sql, this.#countsWritten);
    writeStates(this.#sql, this.#stateWrites);
    insertAnsweredOperations(this.#sql, this.#answeredFromBlocks);
    answerOperations(this.#sql, this.#answers);
    this.#blocks.flush();
    queueReceipts(
      this.#sql,
      this.#receipts.map((receipt) => ({ page: receipt.transactionId, entries: [receipt] })),
    );
  }
}
