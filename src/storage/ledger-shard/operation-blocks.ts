/**
 * A batch chunk's captures, voids and refunds kept as one row (schema.ts, `operation_blocks`) rather
 * than an `operations` row each. A claim must be written before its processor is asked (the money's
 * at-most-once rule), and its answer kept under its key for every replay. As rows, a chunk's 500
 * claims cost a row insert and an index entry each, and their answers a row rewrite (or, from a
 * block, an insert) each, each row in its own place of the table: measured in a 100,000-row capture
 * file's profile, the claims' inserts 0.57 s and the answers' 0.73 to 0.85 s of about 18 s. As a block:
 *
 * - **Claims**: a step claiming OPERATION_BLOCK_MIN_CLAIMS or more writes them as one block row, its
 *   `open` count the claims not answered yet.
 * - **Answers**: an approved capture's or void's answer is kept in its block entry (the block row
 *   rewritten once for the step), and the transaction's state (written by the same answer anyway)
 *   names the block and the key (`states.op_block`, `op_key`): a replay under the key finds it
 *   there. At most one operation a transaction is kept so; a later one, a refund (its surcharge is
 *   summed from rows), a declined one (no state is written) or one past a block's byte budget is
 *   written as its `operations` row, and its entry leaves the block.
 * - **Released** claims leave the block; a block with no entry left is deleted.
 *
 * Everything that reads the operations reads the blocks too (bulk.ts, by key, by transaction, the
 * counts; settlement's exclusion; a release), so an operation claimed in a block is in flight exactly
 * as one claimed in a row: another operation on its transaction is told to ask again, a settlement
 * run leaves it out, it counts toward the transaction's bound, and a crashed holder's claim is found
 * abandoned and settled by asking its processor.
 *
 * Bounds: a step writes a block only while the shard holds fewer than MAX_OPEN_OPERATION_BLOCKS
 * blocks with claims open (else its claims are rows, as an API operation's are), so the open blocks a
 * call reads are at most that many rows of at most BLOCK_JSON_BYTES. In practice a chunk's claims
 * are about 100 KB (some 200 bytes a claim, 400 with its answer), open from its claim call to its
 * answer call, a second or two. A block row, answers and all, stays under BLOCK_JSON_BYTES (half of
 * the 2 MB a row holds). Answered blocks are read only by a replay of a key they hold, each once a
 * step: a step's keys were claimed by at most as many steps as their chunk had deliveries. Blocks go
 * with the shard, as its `operations` rows do.
 */
import { keyTransaction, type OperationKind, type OperationRow } from './operations';
import type { BlockOp, StateRow } from './states';
import { JSON_PARAMETER_BYTES } from './json-arrays';
import { utf8Bytes } from './pages';
import { randomId } from '../../lib/crypto';

/** A step claiming at least this many operations writes them as a block (fewer: a row each, as an API operation). */
export const OPERATION_BLOCK_MIN_CLAIMS = 16;

/**
 * Blocks with claims open a shard may hold: a chunk's block is open while its claims are with their
 * processors, and a crashed chunk's until its redelivery settles them. At most 16 rows of at most
 * 1 MB are read by a call that reads them (about 100 KB each in practice).
 */
export const MAX_OPEN_OPERATION_BLOCKS = 16;

/** A block row's JSON at most: half of what a row may hold (DURABLE_OBJECTS.rowBytes). */
export const BLOCK_JSON_BYTES = JSON_PARAMETER_BYTES;

/** An entry of a block: an operation row as a JSON array, its answer (as stored) last once answered. */
type BlockEntry = [key: string, transactionId: string, kind: OperationKind, requestHash: string, amount: number, refundId: string | null, createdAt: string, answer?: string];

function entryOf(op: OperationRow): BlockEntry {
  return [op.key, op.transactionId, op.kind, op.requestHash, op.amount, op.refundId, op.createdAt];
}

function operationOf(entry: BlockEntry): OperationRow {
  const [key, transactionId, kind, requestHash, amount, refundId, createdAt, answer] = entry;
  return { key, transactionId, kind, requestHash, amount, refundId, createdAt, answer: answer ?? null };
}

/** One block's entries and the look-ups of those still open, as written under one token (a rewrite is a new one). */
class ParsedBlock {
  readonly byKey = new Map<string, OperationRow>();
  readonly byTransaction = new Map<string, OperationRow>();
  constructor(
    readonly entries: readonly BlockEntry[],
    /** The block's JSON bytes. */
    readonly bytes: number,
    /** Each entry's JSON, when the writer has it (a rewrite then joins them rather than making them again). */
    readonly texts?: readonly string[],
  ) {
    for (const entry of entries) {
      if (entry[7] !== undefined) continue;
      const op = operationOf(entry);
      this.byKey.set(op.key, op);
      this.byTransaction.set(op.transactionId, op);
    }
  }
}

/**
 * The open blocks this object instance has written or read, by id, with the token of the row they
 * hold: a block row is rewritten only by a step here, each time under a new random token, so a row
 * whose token matches needs no reading or parsing (a chunk's claim and answer calls each read every
 * open block's look-ups; parsed anew each call, that cost more than the rows it saves). A write
 * rolled back leaves its token here and the old one in SQLite: a miss, read again.
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

function readBlock(sql: SqlStorage, id: number): { entries: BlockEntry[]; bytes: number } | null {
  const row = sql.exec<{ entries: string }>('SELECT entries FROM operation_blocks WHERE id = ?', id).toArray()[0];
  return row ? { entries: JSON.parse(row.entries) as BlockEntry[], bytes: utf8Bytes(row.entries) } : null;
}

/**
 * The shard's blocks as they are at one moment (read inside a synchronous step, so as they are for
 * the whole step), with the changes the step makes to them, written by `flush`: the blocks with
 * claims open, and the answered ones its transactions' states name, read when a key is looked for.
 * The shard's tables must be at schema step 9 or later: every call that reads operations upgrades them first.
 */
export class OpenOperationBlocks {
  readonly #sql: SqlStorage;
  readonly #blocks = new Map<number, ParsedBlock>();
  /** Per block, the claims that leave it (answered as rows, or released). */
  readonly #dropped = new Map<number, Set<string>>();
  /** Per block, the answers kept in it, and its bytes with them. */
  readonly #kept = new Map<number, Map<string, string>>();
  readonly #bytes = new Map<number, number>();
  /** The states' operations kept in blocks, by transaction (the step's, or read for a call's ids). */
  readonly #blockOps = new Map<string, BlockOp>();
  readonly #answered = new Map<number, Map<string, OperationRow>>();

  private constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * The blocks with claims open (at most MAX_OPEN_OPERATION_BLOCKS rows, see the bound above), each
   * read and parsed only when this instance has not written or read it as it is; and what the
   * states of `ids` name (read here, one indexed look-up each, unless the caller gives the states).
   */
  static read(sql: SqlStorage, ids: readonly string[] = [], states?: ReadonlyMap<string, StateRow>): OpenOperationBlocks {
    const open = new OpenOperationBlocks(sql);
    const known = blocksOf(sql);
    const present = new Set<number>();
    for (const [id, token] of sql.exec('SELECT id, token FROM operation_blocks INDEXED BY operation_blocks_open WHERE open > 0').raw()) {
      const block = Number(id);
      present.add(block);
      const cached = known.get(block);
      if (cached && cached.token === token) {
        open.#blocks.set(block, cached.block);
        continue;
      }
      const read = readBlock(sql, block);
      if (!read) continue;
      const parsed = new ParsedBlock(read.entries, read.bytes);
      known.set(block, { token: String(token), block: parsed });
      open.#blocks.set(block, parsed);
    }
    for (const block of known.keys()) if (!present.has(block)) known.delete(block);
    if (states) {
      for (const [id, state] of states) if (state.blockOp) open.#blockOps.set(id, state.blockOp);
    } else if (ids.length > 0) {
      const rows = sql.exec<{ id: string; op_block: number; op_key: string }>(
        'SELECT id, op_block, op_key FROM states WHERE id IN (SELECT value FROM json_each(?)) AND op_key IS NOT NULL',
        JSON.stringify([...new Set(ids)]),
      );
      for (const row of rows) open.#blockOps.set(row.id, { block: row.op_block, key: row.op_key });
    }
    return open;
  }

  /** How many blocks have claims open. */
  get count(): number {
    return this.#blocks.size;
  }

  /** The open claim under `key` held in a block (not answered or dropped by this step), and its block; null when none. */
  #held(key: string): { block: number; op: OperationRow } | null {
    for (const [block, parsed] of this.#blocks) {
      const op = parsed.byKey.get(key);
      if (op) return this.#dropped.get(block)?.has(key) || this.#kept.get(block)?.has(key) ? null : { block, op };
    }
    return null;
  }

  /**
   * The operation under `key` held in a block: an open claim, or an answered one that its
   * transaction's state names (only for the transactions this was read for); null when none.
   */
  operation(key: string): OperationRow | null {
    const held = this.#held(key);
    if (held) return held.op;
    const named = this.#blockOps.get(keyTransaction(key));
    if (!named || named.key !== key) return null;
    let answered = this.#answered.get(named.block);
    if (!answered) {
      // A replay's: at most the blocks its step's keys were claimed in (see the bound above).
      answered = new Map();
      for (const entry of readBlock(this.#sql, named.block)?.entries ?? []) if (entry[7] !== undefined) answered.set(entry[0], operationOf(entry));
      this.#answered.set(named.block, answered);
    }
    return answered.get(key) ?? null;
  }

  /** The claim in flight on a transaction held in a block (one at a time per transaction), or null. */
  pendingOf(transactionId: string): OperationRow | null {
    for (const [block, parsed] of this.#blocks) {
      const op = parsed.byTransaction.get(transactionId);
      if (op && !this.#dropped.get(block)?.has(op.key) && !this.#kept.get(block)?.has(op.key)) return op;
    }
    return null;
  }

  /** Whether a transaction has an operation answered in a block (it counts as one, never a refund). */
  hasBlockOperation(transactionId: string): boolean {
    return this.#blockOps.has(transactionId);
  }

  /** Whether `key`'s open claim is held in a block. */
  holds(key: string): boolean {
    return this.#held(key) !== null;
  }

  /** Drops an open claim from its block (answered as a row, or released), written by `flush`. */
  drop(key: string): void {
    const held = this.#held(key);
    if (!held) return;
    const dropped = this.#dropped.get(held.block) ?? new Set<string>();
    dropped.add(key);
    this.#dropped.set(held.block, dropped);
  }

  /**
   * Keeps an open claim's answer (as stored) in its block when the block stays within
   * BLOCK_JSON_BYTES with it; where it is kept (for the transaction's state), or null: then the
   * answer is the caller's to write as a row.
   */
  keep(key: string, answer: string): BlockOp | null {
    const held = this.#held(key);
    if (!held) return null;
    const parsed = this.#blocks.get(held.block);
    if (!parsed) return null;
    const bytes = (this.#bytes.get(held.block) ?? parsed.bytes) + utf8Bytes(JSON.stringify(answer)) + 1;
    if (bytes > BLOCK_JSON_BYTES) return null;
    this.#bytes.set(held.block, bytes);
    const kept = this.#kept.get(held.block) ?? new Map<string, string>();
    kept.set(key, answer);
    this.#kept.set(held.block, kept);
    return { block: held.block, key };
  }

  /**
   * Claims written as blocks when there is room (each at most a quarter of BLOCK_JSON_BYTES, so
   * its answers have room beside them): true when written, false when they must be rows (too
   * few, or the open blocks at their bound).
   */
  writeClaims(ops: readonly OperationRow[]): boolean {
    if (ops.length < OPERATION_BLOCK_MIN_CLAIMS) return false;
    const groups: { entries: BlockEntry[]; texts: string[]; bytes: number }[] = [];
    for (const op of ops) {
      const entry = entryOf(op);
      const text = JSON.stringify(entry);
      const bytes = utf8Bytes(text) + 1;
      const last = groups.at(-1);
      if (!last || last.bytes + bytes > BLOCK_JSON_BYTES / 4) groups.push({ entries: [entry], texts: [text], bytes: 2 + bytes });
      else {
        last.entries.push(entry);
        last.texts.push(text);
        last.bytes += bytes;
      }
    }
    if (this.count + groups.length > MAX_OPEN_OPERATION_BLOCKS) return false;
    for (const group of groups) {
      const token = randomId(16);
      const id = this.#sql
        .exec<{ id: number }>(
          'INSERT INTO operation_blocks (token, open, entries) VALUES (?, ?, ?) RETURNING id',
          token,
          group.entries.length,
          `[${group.texts.join(',')}]`,
        )
        .one().id;
      // Its look-ups from the claims as they are, not parsed back.
      const block = new ParsedBlock(group.entries, group.bytes, group.texts);
      this.#blocks.set(id, block);
      blocksOf(this.#sql).set(id, { token, block });
    }
    return true;
  }

  /**
   * Writes the step's changes, one statement a block: its entries less those dropped, with the
   * answers kept; deleted when none is left.
   */
  flush(): void {
    const known = blocksOf(this.#sql);
    for (const block of new Set([...this.#dropped.keys(), ...this.#kept.keys()])) {
      const dropped = this.#dropped.get(block);
      const kept = this.#kept.get(block);
      const entries: BlockEntry[] = [];
      const texts: string[] = [];
      const parsed = this.#blocks.get(block);
      let open = 0;
      for (const [i, entry] of (parsed?.entries ?? []).entries()) {
        if (dropped?.has(entry[0])) continue;
        const text = parsed?.texts?.[i] ?? JSON.stringify(entry);
        const answer = kept?.get(entry[0]);
        if (answer !== undefined) {
          entries.push([entry[0], entry[1], entry[2], entry[3], entry[4], entry[5], entry[6], answer]);
          // The entry's JSON with its answer last: `[…]` becomes `[…,"answer"]`.
          texts.push(`${text.slice(0, -1)},${JSON.stringify(answer)}]`);
        } else {
          entries.push(entry);
          texts.push(text);
          if (entry[7] === undefined) open += 1;
        }
      }
      this.#blocks.delete(block);
      known.delete(block);
      if (entries.length === 0) {
        this.#sql.exec('DELETE FROM operation_blocks WHERE id = ?', block);
        continue;
      }
      const token = randomId(16);
      const json = `[${texts.join(',')}]`;
      this.#sql.exec('UPDATE operation_blocks SET entries = ?, token = ?, open = ? WHERE id = ?', json, token, open, block);
      if (open === 0) continue;
      const rewritten = new ParsedBlock(entries, utf8Bytes(json), texts);
      this.#blocks.set(block, rewritten);
      known.set(block, { token, block: rewritten });
    }
    this.#dropped.clear();
    this.#kept.clear();
    this.#bytes.clear();
  }

  /** The ids of the transactions with a claim open in a block (settlement leaves them out). */
  transactions(): Set<string> {
    const ids = new Set<string>();
    for (const parsed of this.#blocks.values()) for (const [id] of parsed.byTransaction) if (this.pendingOf(id)) ids.add(id);
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
 * The SQL condition on a states row's `id` that leaves out the transactions with a claim open in a
 * block (an entry of 7 values: no answer yet; settlement's states query; the claims in rows it
 * leaves out by their pending index).
 */
export const NOT_IN_OPERATION_BLOCKS =
  'id NOT IN (SELECT e.value ->> 1 FROM operation_blocks AS b INDEXED BY operation_blocks_open, json_each(b.entries) AS e WHERE b.open > 0 AND json_array_length(e.value) = 7)';
