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
import { JSON_PARAMETER_BYTES } from './json-arrays';
import { utf8Bytes } from './pages';
import { randomId } from '../../lib/crypto';

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

/** One block's entries and their look-ups, as written under one token (a rewrite is a new one). */
class ParsedBlock {
  readonly byKey = new Map<string, OperationRow>();
  readonly byTransaction = new Map<string, OperationRow>();
  constructor(readonly entries: readonly BlockEntry[]) {
    for (const entry of entries) {
      const op = operationOf(entry);
      this.byKey.set(op.key, op);
      this.byTransaction.set(op.transactionId, op);
    }
  }
}

/**
 * The blocks this object instance has written or read, by id, with the token of the row they hold:
 * a block row is written once and rewritten only without some entries, each time under a new random
 * token, so a row whose token matches needs no reading or parsing (a chunk's claim and answer calls
 * each read every open block's look-ups: parsed anew each call, that cost more than the rows it
 * saves). A write rolled back leaves its token here and its old one in SQLite: a miss, read again.
 */
const parsedBlocks = new WeakMap<SqlStorage, Map<number, { token: string; block: ParsedBlock }>>();

function blocksOf(sql: SqlStorage): Map<number, { token: string; block: ParsedBlock }> {
  let blocks = parsedBlocks.get(sql);
  if (!blocks) {
    blocks = new Map();
    parsedBlocks.set(sql, blocks);
  }
  return blocks;
}

/**
 * The shard's open blocks as they are at one moment (read inside a synchronous step, so as they are
 * for the whole step), with the changes the step makes to them, written by `flush`.
 */
export class OpenOperationBlocks {
  readonly #sql: SqlStorage;
  readonly #blocks = new Map<number, ParsedBlock>();
  readonly #dropped = new Map<number, Set<string>>();

  private constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * The open blocks: at most MAX_OPEN_OPERATION_BLOCKS rows (see the bound above), each read and
   * parsed only when this instance has not written or read it as it is. The shard's tables must be
   * at schema step 9 or later: every call that reads operations upgrades them first.
   */
  static read(sql: SqlStorage): OpenOperationBlocks {
    const open = new OpenOperationBlocks(sql);
    const known = blocksOf(sql);
    const present = new Set<number>();
    for (const [id, token] of sql.exec('SELECT id, token FROM operation_blocks').raw()) {
      const block = Number(id);
      present.add(block);
      const cached = known.get(block);
      if (cached && cached.token === token) {
        open.#blocks.set(block, cached.block);
        continue;
      }
      const entries = sql.exec('SELECT entries FROM operation_blocks WHERE id = ?', block).one().entries;
      const parsed = new ParsedBlock(JSON.parse(String(entries)) as BlockEntry[]);
      known.set(block, { token: String(token), block: parsed });
      open.#blocks.set(block, parsed);
    }
    for (const block of known.keys()) if (!present.has(block)) known.delete(block);
    return open;
  }

  /** How many blocks are open. */
  get count(): number {
    return this.#blocks.size;
  }

  /** The claim under `key` held in a block (not dropped by this step), and its block; null when none. */
  #held(key: string): { block: number; op: OperationRow } | null {
    for (const [block, parsed] of this.#blocks) {
      const op = parsed.byKey.get(key);
      if (op) return this.#dropped.get(block)?.has(key) ? null : { block, op };
    }
    return null;
  }

  /** The claim under `key` held in a block (not dropped by this step), or null. */
  operation(key: string): OperationRow | null {
    return this.#held(key)?.op ?? null;
  }

  /** The claim in flight on a transaction held in a block (one at a time per transaction), or null. */
  pendingOf(transactionId: string): OperationRow | null {
    for (const [block, parsed] of this.#blocks) {
      const op = parsed.byTransaction.get(transactionId);
      if (op && !this.#dropped.get(block)?.has(op.key)) return op;
    }
    return null;
  }

  /** Whether `key`'s claim is held in a block (its answer is then a new row, not an update). */
  holds(key: string): boolean {
    return this.#held(key) !== null;
  }

  /** Drops a claim from its block (answered or released), written by `flush`. */
  drop(key: string): void {
    const held = this.#held(key);
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
    // Each block at most JSON_PARAMETER_BYTES of JSON (a chunk's 500 claims are about 130 KB: one block).
    const groups: { entries: BlockEntry[]; texts: string[] }[] = [];
    let size = 2;
    for (const op of ops) {
      const entry = entryOf(op);
      const text = JSON.stringify(entry);
      const bytes = utf8Bytes(text) + 1;
      const last = groups.at(-1);
      if (!last || size + bytes > JSON_PARAMETER_BYTES) {
        groups.push({ entries: [entry], texts: [text] });
        size = 2 + bytes;
      } else {
        last.entries.push(entry);
        last.texts.push(text);
        size += bytes;
      }
    }
    if (this.count + groups.length > MAX_OPEN_OPERATION_BLOCKS) return false;
    for (const group of groups) {
      const token = randomId(16);
      const id = this.#sql
        .exec<{ id: number }>('INSERT INTO operation_blocks (created_at, token, entries) VALUES (?, ?, ?) RETURNING id', ops[0]?.createdAt ?? '', token, `[${group.texts.join(',')}]`)
        .one().id;
      // Its look-ups from the claims as they are, not parsed back.
      const block = new ParsedBlock(group.entries);
      this.#blocks.set(id, block);
      blocksOf(this.#sql).set(id, { token, block });
    }
    return true;
  }

  /** Writes the drops: a block left empty is deleted, another rewritten without them under a new token (one statement a block). */
  flush(): void {
    const known = blocksOf(this.#sql);
    for (const [block, keys] of this.#dropped) {
      const left = (this.#blocks.get(block)?.entries ?? []).filter((entry) => !keys.has(entry[0]));
      if (left.length === 0) {
        this.#sql.exec('DELETE FROM operation_blocks WHERE id = ?', block);
        this.#blocks.delete(block);
        known.delete(block);
        continue;
      }
      const token = randomId(16);
      this.#sql.exec('UPDATE operation_blocks SET entries = ?, token = ? WHERE id = ?', JSON.stringify(left), token, block);
      const parsed = new ParsedBlock(left);
      this.#blocks.set(block, parsed);
      known.set(block, { token, block: parsed });
    }
    this.#dropped.clear();
  }

  /** The ids of the transactions with a claim in a block (settlement leaves them out). */
  transactions(): Set<string> {
    const ids = new Set<string>();
    for (const [block, parsed] of this.#blocks) {
      for (const [id, op] of parsed.byTransaction) if (!this.#dropped.get(block)?.has(op.key)) ids.add(id);
    }
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
