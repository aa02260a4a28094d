/**
 * The sandbox processor's memory (durable-objects/sandbox-acquirer.ts): what it was asked, the way a
 * gateway keeps its transactions by order id. It stands for an outside system, so it lives in an
 * object of its own per processor and UTC day, not in the merchant's ledger. No card data: the
 * answer is codes and texts.
 *
 * Charges are found by their key without reading anything else: each call's entries are stored by
 * the key's **block**, one row per block a call touches (primary key `(block, seq)`, `seq` counting
 * the block's calls in the order they came). A block is
 * up to BLOCK_KEYS neighbouring keys: a key ending in digits belongs to the block of its prefix and
 * its number divided by BLOCK_KEYS, any other key is a block of its own. A batch chunk's keys
 * (`{batch}:{line}`, 500 consecutive lines) fall in one or two blocks, so a chunk costs one or two
 * rows written, not one per row; an API charge is one row. Finding a key (a charge's check for an
 * earlier charge of it, a lookup) reads its block's rows: at most BLOCK_KEYS keys' entries (plus the
 * rare calls sent again), whatever else the merchant charged that day.
 *
 * An entry is stored compactly, `[key's digits, type, amount, payment type, [answer fields...]]`,
 * the keys' shared prefix once in the block: about 90 bytes a batch row in the object's SQLite,
 * against some 330 bytes of JSON an entry took before (test/integration/sandbox-acquirer.test.ts).
 *
 * Objects made before blocks (a `calls` table keyed by time, read by a window around the claim) are
 * still read when a key is not found in `charges`; they empty themselves 31 days after their day.
 */
import { DURABLE_OBJECTS, HALF } from '../lib/platform-limits';
import { jsonArrays } from './ledger-shard/bulk';

export interface SandboxChargeEntry {
  idempotencyKey: string;
  type: string;
  /** Minor units. */
  amount: number;
  paymentType: 'card' | 'ach';
  /** The answer, as JSON. */
  result: string;
}

/** A call the acquirer could not record (its storage failed): answered instead of a rejection. */
export interface SandboxFailure {
  failed: string;
}

/** One key as the sandbox saw it: its first charge, and how often it was sent and looked up. */
export interface SandboxLedgerRow extends SandboxChargeEntry {
  chargeCalls: number;
  lookupCalls: number;
  createdAt: string;
}

/** Keys per block. Bounds what finding one key reads; a block row holds at most this many entries. */
export const BLOCK_KEYS = 500;

/**
 * The largest block row: BLOCK_KEYS entries of a key at its longest (255-character Idempotency-Key
 * plus the operation's prefix, ~400 bytes) and ~100 bytes of fields, ~250 KB, under half of the
 * 2 MB a row may hold.
 */
export const MAX_BLOCK_ROW_BYTES = BLOCK_KEYS * 500;
if (MAX_BLOCK_ROW_BYTES > DURABLE_OBJECTS.rowBytes * HALF) throw new Error('a sandbox block row could pass half the row limit');

const TRAILING_NUMBER = /^(.*?)([0-9]{1,15})$/;

/**
 * A capture's, void's or refund's key (`{transaction id}:{kind}:{client key}`, services/transactions/
 * operations.ts) whose client key ends in digits: a batch chunk's rows (`{batch}:{line}`) name 500
 * transactions, so their keys share no prefix, and by the prefix rule each would be a block of its
 * own (500 rows written a chunk). Such keys are kept together by what follows the transaction id:
 * the block `OPERATION_BLOCK{kind}:{client key's prefix}#n`, its entries holding their whole key.
 */
const OPERATION_KEY = /^txn_[a-z0-9_]{1,80}:(capture|void|refund):(.*?)([0-9]{1,15})$/;
/** Starts every operation block's name: control characters, which no key (an HTTP header's or a generated one) holds. */
const OPERATION_BLOCK = '\u0001op\u0001';

/** The block a key is stored in (see the header and OPERATION_KEY). */
export function blockOf(key: string): string {
  const operation = OPERATION_KEY.exec(key);
  if (operation) return `${OPERATION_BLOCK}${operation[1] ?? ''}:${operation[2] ?? ''}#${Math.floor(Number(operation[3]) / BLOCK_KEYS)}`;
  return prefixBlockOf(key);
}

/** The block by the key's own prefix: every key's before operation blocks existed, and still every other key's. */
function prefixBlockOf(key: string): string {
  const match = TRAILING_NUMBER.exec(key);
  if (!match) return key;
  return `${match[1] ?? ''}#${Math.floor(Number(match[2]) / BLOCK_KEYS)}`;
}

/**
 * The blocks an earlier charge of `key` may be in: its block, and for an operation's key in an
 * object made before operation blocks (`prefixBlocks`), the block its prefix named then (a chunk
 * sent again across that release finds its first answers there, so the processor is still asked once).
 */
function blocksToRead(key: string, prefixBlocks: boolean): string[] {
  const block = blockOf(key);
  return prefixBlocks && block.startsWith(OPERATION_BLOCK) ? [block, prefixBlockOf(key)] : [block];
}

/**
 * What every key of a block starts with: nothing for an operation block (its entries hold whole
 * keys); the block less its "#n" when the block is of keys ending in digits (its name then ends in
 * a digit, which no other block's does); else the key itself.
 */
function blockPrefix(block: string): string {
  if (block.startsWith(OPERATION_BLOCK)) return '';
  return /[0-9]$/.test(block) ? block.slice(0, block.lastIndexOf('#')) : block;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS charges (
  block TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('charge', 'lookup')),
  entries TEXT NOT NULL,
  PRIMARY KEY (block, seq)
) WITHOUT ROWID`;

export function hasChargeTable(sql: SqlStorage): boolean {
  return tableExists(sql, 'charges');
}

/**
 * A table whose presence says the object's `charges` were made with operation blocks from its first
 * row: no operation key is in a block its prefix named, so none is looked for there. Every object
 * made since has it; one made before (its day passed within SANDBOX_MEMORY_DAYS) still reads those
 * blocks. Why it matters: a chunk of 500 captures named 500 such blocks (a block per transaction),
 * each a descent through a B-tree of rows of up to 250 KB that found nothing; at 500,000 captures
 * in a day that was a quarter of a capture file's CPU (docs/performance.md).
 */
const OPERATION_BLOCKS_ONLY = 'operation_blocks_only';

export function createChargeTable(sql: SqlStorage): void {
  sql.exec(SCHEMA);
  sql.exec(`CREATE TABLE IF NOT EXISTS ${OPERATION_BLOCKS_ONLY} (version INTEGER)`);
}

/** What readsPrefixBlocks found for an object's storage: an object keeps it until it empties itself. */
const prefixBlocksOf = new WeakMap<SqlStorage, boolean>();

/**
 * Whether an operation key may also be in the block its prefix named (an object made before
 * operation blocks). Read once per object: the answer only changes when the object empties itself
 * (its tables dropped), and its next charge makes them again with the mark, so an answer kept from
 * before can only make it read a block it need not.
 */
function readsPrefixBlocks(sql: SqlStorage): boolean {
  let reads = prefixBlocksOf.get(sql);
  if (reads === undefined) {
    reads = !tableExists(sql, OPERATION_BLOCKS_ONLY);
    prefixBlocksOf.set(sql, reads);
  }
  return reads;
}

function tableExists(sql: SqlStorage, name: string): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;
}

/** The answer's fields in the order they are packed; an answer with other fields is kept as it is. */
const RESULT_FIELDS = [
  'response',
  'responseCode',
  'amountAuthorized',
  'authCode',
  'processorResponseCode',
  'processorResponseText',
  'avsResponseCode',
  'cvvResponseCode',
] as const;

/** An entry as stored: the key less its block's prefix, then the fields. */
type PackedEntry = [keyRest: string, type: string, amount: number, paymentType: 'card' | 'ach', result: unknown];

function packResult(json: string): unknown {
  const result = JSON.parse(json) as Record<string, unknown>;
  const keys = Object.keys(result);
  const known = keys.length === RESULT_FIELDS.length && keys.every((key, i) => key === RESULT_FIELDS[i]);
  return known ? RESULT_FIELDS.map((field) => result[field] ?? null) : result;
}

function unpackResult(packed: unknown): string {
  if (!Array.isArray(packed)) return JSON.stringify(packed);
  return JSON.stringify(Object.fromEntries(RESULT_FIELDS.map((field, i) => [field, packed[i] ?? null])));
}

function pack(prefix: string, entry: SandboxChargeEntry): PackedEntry {
  return [entry.idempotencyKey.slice(prefix.length), entry.type, entry.amount, entry.paymentType, packResult(entry.result)];
}

function unpack(prefix: string, entry: PackedEntry): SandboxChargeEntry {
  return { idempotencyKey: prefix + entry[0], type: entry[1], amount: entry[2], paymentType: entry[3], result: unpackResult(entry[4]) };
}

function byBlock<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const blocks = new Map<string, T[]>();
  for (const item of items) {
    const block = blockOf(key(item));
    const list = blocks.get(block);
    if (list) list.push(item);
    else blocks.set(block, [item]);
  }
  return blocks;
}

/**
 * The first answer of each of `blocks`' keys found among the blocks' charge rows (block → its keys):
 * one statement per JSON array of block names, however many blocks a call touches (a batch chunk's
 * captures are a block per transaction, their keys' prefixes naming it).
 */
function firstAnswers(sql: SqlStorage, blocks: ReadonlyMap<string, ReadonlySet<string>>, found: Map<string, string>): void {
  // Prefix blocks first: a key charged there before operation blocks existed, and sent again since,
  // is in both, and its first answer is the one in its prefix block.
  const names = [...blocks.keys()];
  const inOrder = [...names.filter((name) => !name.startsWith(OPERATION_BLOCK)), ...names.filter((name) => name.startsWith(OPERATION_BLOCK))];
  for (const array of jsonArrays(inOrder)) {
    const rows = sql.exec<{ block: string; entries: string }>(
      // In the order named (json_each's key is the position), each block's calls in their order.
      "SELECT c.block, c.entries FROM json_each(?) AS named JOIN charges AS c ON c.block = named.value WHERE c.kind = 'charge' ORDER BY named.key, c.seq",
      array,
    );
    for (const row of rows) {
      const keys = blocks.get(row.block);
      if (!keys) continue;
      const prefix = blockPrefix(row.block);
      for (const entry of JSON.parse(row.entries) as PackedEntry[]) {
        const key = prefix + entry[0];
        if (keys.has(key) && !found.has(key)) found.set(key, unpackResult(entry[4]));
      }
    }
  }
}

/**
 * Records a charge call (one row per block it touches) and answers each key's answer: the first one
 * the key ever got (`earlier`: answers found elsewhere first), its own for a key never charged.
 * Synchronous: one step of the object, so two calls with the same key cannot both be first.
 */
export function recordCharges(
  sql: SqlStorage,
  at: string,
  entries: readonly SandboxChargeEntry[],
  earlier: ReadonlyMap<string, string> = new Map(),
): Map<string, string> {
  const answers = new Map(earlier);
  const blocks = byBlock(entries, (entry) => entry.idempotencyKey);
  firstAnswers(sql, readMap(entries.map((entry) => entry.idempotencyKey), readsPrefixBlocks(sql)), answers);
  insertRows(sql, at, 'charge', [...blocks].map(([block, group]) => [block, JSON.stringify(group.map((entry) => pack(blockPrefix(block), entry)))]));
  for (const entry of entries) if (!answers.has(entry.idempotencyKey)) answers.set(entry.idempotencyKey, entry.result);
  return answers;
}

/** The first answer of each key that was charged (absent: never charged). Reads only the keys' blocks. */
export function findCharges(sql: SqlStorage, keys: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  firstAnswers(sql, readMap(keys, readsPrefixBlocks(sql)), found);
  return found;
}

/** The blocks to read for `keys`, each with the keys it may hold (blocksToRead). */
function readMap(keys: readonly string[], prefixBlocks: boolean): Map<string, Set<string>> {
  const blocks = new Map<string, Set<string>>();
  for (const key of keys) {
    for (const block of blocksToRead(key, prefixBlocks)) {
      const group = blocks.get(block);
      if (group) group.add(key);
      else blocks.set(block, new Set([key]));
    }
  }
  return blocks;
}

/** Counts one lookup of each of `keys` (what the sandbox's ledger shows as lookupCalls). */
export function recordLookups(sql: SqlStorage, at: string, keys: readonly string[]): void {
  insertRows(sql, at, 'lookup', [...byBlock(keys, (key) => key)].map(([block, group]) => [block, JSON.stringify(group)]));
}

/**
 * Each block's next row (the blocks are distinct): a block's calls are numbered in the order the
 * object took them (one at a time). One statement per JSON array of rows (a row is at most
 * MAX_BLOCK_ROW_BYTES, each array at most half of the 2 MB a bound string may hold).
 */
function insertRows(sql: SqlStorage, at: string, kind: 'charge' | 'lookup', rows: readonly (readonly [block: string, entries: string])[]): void {
  for (const array of jsonArrays(rows)) {
    sql.exec(
      `INSERT INTO charges (block, seq, at, kind, entries)
       SELECT value ->> 0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM charges WHERE block = value ->> 0), ?2, ?3, value ->> 1 FROM json_each(?1)`,
      array,
      at,
      kind,
    );
  }
}

/**
 * Every key the processor was asked for, in the order first charged (tests and operators: it reads
 * the whole day, so no service path calls it).
 */
export function listCharges(sql: SqlStorage): SandboxLedgerRow[] {
  const byKey = new Map<string, SandboxLedgerRow>();
  const lookups: string[] = [];
  const add = (at: string, entry: SandboxChargeEntry) => {
    const seen = byKey.get(entry.idempotencyKey);
    if (seen) seen.chargeCalls++;
    else byKey.set(entry.idempotencyKey, { ...entry, chargeCalls: 1, lookupCalls: 0, createdAt: at });
  };
  const rows: { at: string; kind: string; entries: string; block: string | null }[] = [];
  if (hasChargeTable(sql)) {
    rows.push(...sql.exec<{ at: string; kind: string; entries: string; block: string }>('SELECT block, at, kind, entries FROM charges ORDER BY block, seq').toArray());
  }
  if (hasLegacyCalls(sql)) {
    rows.push(...sql.exec<{ at: string; kind: string; entries: string }>('SELECT at, kind, entries FROM calls').toArray().map((row) => ({ ...row, block: null })));
  }
  // By time; a block's own calls keep their order (the sort is stable).
  rows.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  for (const row of rows) {
    if (row.kind === 'lookup') lookups.push(...(JSON.parse(row.entries) as string[]));
    else if (row.block === null) for (const entry of JSON.parse(row.entries) as SandboxChargeEntry[]) add(row.at, entry);
    else for (const entry of JSON.parse(row.entries) as PackedEntry[]) add(row.at, unpack(blockPrefix(row.block), entry));
  }
  for (const key of lookups) {
    const seen = byKey.get(key);
    if (seen) seen.lookupCalls++;
  }
  return [...byKey.values()];
}

// ---- objects made before blocks ----------------------------------------------------------------

/** Whether the object has the time-keyed `calls` table of before blocks (read until it empties itself). */
export function hasLegacyCalls(sql: SqlStorage): boolean {
  return tableExists(sql, 'calls');
}

/** The first answer for each of `keys` among the legacy charge calls made between `from` and `to` (ISO times). */
export function legacyChargedBetween(sql: SqlStorage, keys: ReadonlySet<string>, from: string, to: string, found: Map<string, string>): void {
  if (keys.size === 0 || !hasLegacyCalls(sql)) return;
  const rows = sql.exec<{ entries: string }>("SELECT entries FROM calls WHERE at >= ? AND at <= ? AND kind = 'charge' ORDER BY at", from, to);
  for (const row of rows) {
    for (const entry of JSON.parse(row.entries) as SandboxChargeEntry[]) {
      if (keys.has(entry.idempotencyKey) && !found.has(entry.idempotencyKey)) found.set(entry.idempotencyKey, entry.result);
    }
  }
}
