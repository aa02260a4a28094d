/**
 * A batch chunk's claims of captures, voids and refunds kept as one row while they are with their
 * processors (schema.ts, `operation_blocks`), rather than an `operations` row each that its answer
 * then rewrites. A claim must be written before its processor is asked (the money's at-most-once
 * rule); what it holds (key, transaction, kind, request hash, amount, refund id, time) is small. A
 * chunk's 500 claims as 500 rows cost a row insert and an index entry each, and their answers a
 * row rewrite and an index delete each: measured in a 100,000-row capture file's profile, about a
 * tenth of its CPU. As one row, a claim costs nothing of its own, and its answer is one new
 * `operations` row, written whole (bulk.ts, insertAnsweredOperations), as the block entry is dropped.
 *
 * Everything that reads the operations in flight reads the open blocks too (bulk.ts and
 * operations.ts: by key, by transaction, the counts, settlement's exclusion, a release), so an
 * operation claimed in a block is in flight exactly as one claimed in a row: another operation on
 * its transaction is told to ask again, a settlement run leaves it out, a crashed holder's claim is
 * found abandoned and settled by asking its processor.
 *
 * Bound: a step writes a block only while the shard holds fewer than MAX_OPEN_OPERATION_BLOCKS
 * (else its claims are rows, as an API operation's are), so the open blocks read by a call are at
 * most that many rows of at most JSON_PARAMETER_BYTES each (in practice a chunk's claims are about
 * 130 KB, and a block is open from a chunk's claim call to its answer call, a second or two).
 */
import type { OperationKind, OperationRow } from './operations';
import { jsonArrays } from './json-arrays';

/** A step claiming at least this many operations writes them as a block (fewer: a row each, as an API operation). */
export const OPERATION_BLOCK_MIN_CLAIMS = 16;

/**
 * Open blocks a shard may hold: a chunk's block is open while its claims are with their processors,
 * and a crashed chunk's until its redelivery settles them. At most 16 rows of at most 1 MB are read
 * by a call that reads them (about 130 KB each in practice): under 16 MB and a few milliseconds.
 */
export const MAX_OPEN_OPERATION_BLOCKS = 16;

/** An entry of a block: an operation row less its answer, as a JSON array. */
type BlockEntry = [key: string, transactionId: string, kind: OperationKind, requestHash: string, amount: number, refundId: string | null, createdAt: string];

function entryOf(op: OperationRow): BlockEntry {
  return [op.key, op.transactionId, op.kind, op.requestHash, op.amount, op.refundId, op.createdAt];
}

function operationOf(entry: BlockEntry): OperationRow {
  const [key, transactionId, kind, requestHash, amount, refundId, createdAt] = entry;
  return { key, transactionId, kind, requestHash, amount, refundId, createdAt, answer: null };
}

/**
 * The shard's open blocks as read at one moment (inside a synchronous step, so as they are for the
 * whole step), with the changes the step makes to them, written by `flush`.
 */
export class OpenOperationBlocks {
  readonly #sql: SqlStorage;
  readonly #blocks = new Map<number, BlockEntry[]>();
  readonly #byKey = new Map<string, { block: number; op: OperationRow }>();
  readonly #byTransaction = new Map<string, OperationRow>();
  readonly #dropped = new Map<number, Set<string>>();

  private constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Reads the open blocks: at most MAX_OPEN_OPERATION_BLOCKS rows (see the bound above). The shard's
   * tables must be at schema step 9 or later: every call that reads operations upgrades them first.
   */
  static read(sql: SqlStorage): OpenOperationBlocks {
    const open = new OpenOperationBlocks(sql);
    for (const [id, entries] of sql.exec('SELECT id, entries FROM operation_blocks').raw()) {
      const list = JSON.parse(String(entries)) as BlockEntry[];
      open.#blocks.set(Number(id), list);
      for (const entry of list) {
        const op = operationOf(entry);
        open.#byKey.set(op.key, { block: Number(id), op });
        open.#byTransaction.set(op.transactionId, op);
      }
    }
    return open;
  }

  /** How many blocks are open. */
  get count(): number {
    return this.#blocks.size;
  }

  /** The claim under `key` held in a block (not dropped by this step), or null. */
  operation(key: string): OperationRow | null {
    const held = this.#byKey.get(key);
    return held && !this.#dropped.get(held.block)?.has(key) ? held.op : null;
  }

  /** The claim in flight on a transaction held in a block (one at a time per transaction), or null. */
  pendingOf(transactionId: string): OperationRow | null {
    const op = this.#byTransaction.get(transactionId);
    return op && this.operation(op.key) ? op : null;
  }

  /** Whether `key`'s claim is held in a block (its answer is then a new row, not an update). */
  holds(key: string): boolean {
    return this.operation(key) !== null;
  }

  /** Drops a claim from its block (answered or released), written by `flush`. */
  drop(key: string): void {
    const held = this.#byKey.get(key);
    if (!held) return;
    const dropped = this.#dropped.get(held.block) ?? new Set<string>();
    dropped.add(key);
    this.#dropped.set(held.block, dropped);
  }

  /**
   * Claims written as blocks when there is room (each block at most JSON_PARAMETER_BYTES of JSON):
   * true when written, false when they must be rows (too few, or the open blocks at their bound).
   */
  writeClaims(ops: readonly OperationRow[]): boolean {
    if (ops.length < OPERATION_BLOCK_MIN_CLAIMS) return false;
    const arrays = jsonArrays(ops.map(entryOf));
    if (this.count + arrays.length > MAX_OPEN_OPERATION_BLOCKS) return false;
    for (const array of arrays) this.#sql.exec('INSERT INTO operation_blocks (created_at, entries) VALUES (?, ?)', ops[0]?.createdAt ?? '', array);
    return true;
  }

  /** Writes the drops: a block left empty is deleted, another rewritten without them (one statement a block). */
  flush(): void {
    for (const [block, keys] of this.#dropped) {
      const left = (this.#blocks.get(block) ?? []).filter((entry) => !keys.has(entry[0]));
      if (left.length === 0) this.#sql.exec('DELETE FROM operation_blocks WHERE id = ?', block);
      else this.#sql.exec('UPDATE operation_blocks SET entries = ? WHERE id = ?', JSON.stringify(left), block);
      this.#blocks.set(block, left);
      for (const key of keys) this.#byKey.delete(key);
    }
    this.#dropped.clear();
  }

  /** The ids of the transactions with a claim in a block (settlement leaves them out). */
  transactions(): Set<string> {
    const ids = new Set<string>();
    for (const [id, op] of this.#byTransaction) if (this.operation(op.key)) ids.add(id);
    return ids;
  }
}

/** Which of `ids` have an operation claimed and not answered, in a row or a block (a settlement run leaves them out). */
export function transactionsInFlight(sql: SqlStorage, ids: readonly string[]): Set<string> {
  if (ids.length === 0) return new Set();
  const rows = sql
    .exec<{ id: string }>(
      'SELECT DISTINCT transaction_id AS id FROM operations INDEXED BY operations_pending WHERE answer IS NULL AND transaction_id IN (SELECT value FROM json_each(?))',
      JSON.stringify(ids),
    )
    .toArray();
  const inFlight = new Set(rows.map((row) => row.id));
  const blocks = OpenOperationBlocks.read(sql).transactions();
  for (const id of ids) if (blocks.has(id)) inFlight.add(id);
  return inFlight;
}

/** Drops a claim not answered (its processor never received it), in a row or a block. */
export function deleteOperation(sql: SqlStorage, key: string): void {
  sql.exec('DELETE FROM operations WHERE key = ? AND answer IS NULL', key);
  const open = OpenOperationBlocks.read(sql);
  open.drop(key);
  open.flush();
}

/**
 * The SQL condition on a states row's `id` that leaves out the transactions with a claim in a block
 * (settlement's states query; the claims in rows it leaves out by their pending index).
 */
export const NOT_IN_OPERATION_BLOCKS = 'id NOT IN (SELECT e.value ->> 1 FROM operation_blocks AS b, json_each(b.entries) AS e)';
