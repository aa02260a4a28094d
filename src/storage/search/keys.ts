/**
 * The SQLite tables of a search key object (durable-objects/search/keys.ts): a merchant's
 * `order_id` and `customer_id` references of one ISO week, as a small log-structured merge index
 * (docs/capacity.md, "Search"). An entry is three 32-bit words: the value's 53-bit hash (high and
 * low word) and a reference (the day within the week and the millisecond of that day at which the
 * unit holding the value was created), 12 bytes.
 *
 *   fresh   one row per indexing call: its entries, sorted (a batch chunk's 1,000 references, or
 *           one API transaction's two)
 *   runs    sorted runs, each at a level: the alarm folds fresh rows into a level-0 run and merges
 *           MERGE_FANIN runs of a level into one of the next
 *   blocks  a run's entries in blocks of BLOCK_ENTRIES, keyed by the run and the block's last hash,
 *           so a look-up reads one block per run
 *   meta    the object's merchant and week, and when it empties itself
 */
import { hasTables, migrate } from '../do-schema';

/** Entries per block: 48 KB, one read per run and look-up. */
export const BLOCK_ENTRIES = 4_096;
const WORDS = 3;

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS meta (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema_version INTEGER NOT NULL,
     merchant_id TEXT NOT NULL,
     week TEXT NOT NULL,
     delete_at TEXT NOT NULL
   );
   CREATE TABLE IF NOT EXISTS fresh (
     seq INTEGER PRIMARY KEY,
     entries BLOB NOT NULL
   );
   CREATE TABLE IF NOT EXISTS runs (
     id INTEGER PRIMARY KEY,
     level INTEGER NOT NULL,
     entries INTEGER NOT NULL
   );
   CREATE TABLE IF NOT EXISTS blocks (
     run INTEGER NOT NULL,
     last INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     first INTEGER NOT NULL,
     data BLOB NOT NULL,
     PRIMARY KEY (run, last, seq)
   ) WITHOUT ROWID;`,
];
export const SEARCH_KEYS_SCHEMA_VERSION = MIGRATIONS.length;

const TWO_32 = 4_294_967_296;

export interface KeysMeta {
  merchantId: string;
  week: string;
  deleteAt: string;
}

export function readKeysMeta(sql: SqlStorage): KeysMeta | null {
  if (!hasTables(sql)) return null;
  const row = sql.exec<{ merchant_id: string; week: string; delete_at: string }>('SELECT merchant_id, week, delete_at FROM meta').toArray()[0];
  return row ? { merchantId: row.merchant_id, week: row.week, deleteAt: row.delete_at } : null;
}

export function initialiseKeys(sql: SqlStorage, meta: KeysMeta): KeysMeta {
  migrate(sql, MIGRATIONS);
  sql.exec(
    `INSERT INTO meta (singleton, schema_version, merchant_id, week, delete_at) VALUES (1, ?, ?, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET schema_version = excluded.schema_version`,
    SEARCH_KEYS_SCHEMA_VERSION,
    meta.merchantId,
    meta.week,
    meta.deleteAt,
  );
  return readKeysMeta(sql) ?? meta;
}

// == What the object is asked ===============================================================

export interface KeysIdentity {
  merchantId: string;
  week: string;
}

/** One reference to index: a value's hash, and the creation time of the unit holding it. */
export interface KeyRef {
  hash: number;
  at: string;
}

export type KeysFailure = { failed: string };

// == Entries =================================================================================

/** Entries as a flat array of words: hash high, hash low, reference; three per entry. */
export type Entries = Uint32Array;

export function entryCount(entries: Entries): number {
  return entries.length / WORDS;
}

export function hashAt(entries: Entries, i: number): number {
  return (entries[i * WORDS] ?? 0) * TWO_32 + (entries[i * WORDS + 1] ?? 0);
}

export function refAt(entries: Entries, i: number): number {
  return entries[i * WORDS + 2] ?? 0;
}

/** Entries sorted by hash, then reference. */
export function sortedEntries(pairs: readonly { hash: number; ref: number }[]): Entries {
  const sorted = [...pairs].sort((a, b) => a.hash - b.hash || a.ref - b.ref);
  const entries = new Uint32Array(sorted.length * WORDS);
  sorted.forEach(({ hash, ref }, i) => {
    entries[i * WORDS] = Math.floor(hash / TWO_32);
    entries[i * WORDS + 1] = hash % TWO_32;
    entries[i * WORDS + 2] = ref;
  });
  return entries;
}

function toBlob(entries: Entries): Uint8Array {
  return new Uint8Array(entries.buffer, entries.byteOffset, entries.byteLength);
}

function fromBlob(blob: ArrayBuffer): Entries {
  return new Uint32Array(blob.slice(0));
}

/** The references of `hash` in sorted entries (binary search to the first, then along). */
export function refsOf(entries: Entries, hash: number, into: Set<number>, max: number): void {
  let lo = 0;
  let hi = entryCount(entries);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (hashAt(entries, mid) < hash) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < entryCount(entries) && hashAt(entries, i) === hash && into.size < max; i++) into.add(refAt(entries, i));
}

// == Fresh rows ==============================================================================

/** Appends one indexing call's entries; answers how many fresh rows wait for the fold. */
export function insertFresh(sql: SqlStorage, entries: Entries): number {
  sql.exec('INSERT INTO fresh (entries) VALUES (?)', toBlob(entries));
  return sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM fresh').one().n;
}

export function freshCount(sql: SqlStorage): number {
  if (!hasTables(sql)) return 0;
  return sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM fresh').one().n;
}

export function readFresh(sql: SqlStorage, limit: number): { seq: number; entries: Entries }[] {
  if (!hasTables(sql)) return [];
  return sql
    .exec<{ seq: number; entries: ArrayBuffer }>('SELECT seq, entries FROM fresh ORDER BY seq LIMIT ?', limit)
    .toArray()
    .map((row) => ({ seq: row.seq, entries: fromBlob(row.entries) }));
}

export function deleteFreshThrough(sql: SqlStorage, seq: number): void {
  sql.exec('DELETE FROM fresh WHERE seq <= ?', seq);
}

// == Runs ====================================================================================

export type RunRow = {
  id: number;
  level: number;
  entries: number;
};

export function listRuns(sql: SqlStorage): RunRow[] {
  if (!hasTables(sql)) return [];
  return sql.exec<RunRow>('SELECT id, level, entries FROM runs ORDER BY level, id').toArray();
}

/** Writes a run at `level` from entries handed over in sorted order, in blocks of BLOCK_ENTRIES. */
export class RunWriter {
  readonly #sql: SqlStorage;
  readonly #run: number;
  readonly #block = new Uint32Array(BLOCK_ENTRIES * WORDS);
  #filled = 0;
  #seq = 0;
  #total = 0;

  constructor(sql: SqlStorage, level: number) {
    this.#sql = sql;
    this.#run = sql.exec<{ id: number }>('INSERT INTO runs (level, entries) VALUES (?, 0) RETURNING id', level).one().id;
  }

  push(hi: number, lo: number, ref: number): void {
    const at = this.#filled * WORDS;
    this.#block[at] = hi;
    this.#block[at + 1] = lo;
    this.#block[at + 2] = ref;
    this.#filled++;
    if (this.#filled === BLOCK_ENTRIES) this.#flush();
  }

  #flush(): void {
    if (this.#filled === 0) return;
    const block = this.#block.slice(0, this.#filled * WORDS);
    this.#sql.exec(
      'INSERT INTO blocks (run, last, seq, first, data) VALUES (?, ?, ?, ?, ?)',
      this.#run,
      hashAt(block, this.#filled - 1),
      this.#seq++,
      hashAt(block, 0),
      toBlob(block),
    );
    this.#total += this.#filled;
    this.#filled = 0;
  }

  /** Writes the last block and the run's size; answers the run's id. */
  close(): number {
    this.#flush();
    this.#sql.exec('UPDATE runs SET entries = ? WHERE id = ?', this.#total, this.#run);
    return this.#run;
  }
}

/** A run's entries in order, one block in memory at a time. */
export class RunReader {
  readonly #sql: SqlStorage;
  readonly #run: number;
  #block: Entries = new Uint32Array(0);
  #index = 0;
  #after: { last: number; seq: number } | null = null;
  #ended = false;

  constructor(sql: SqlStorage, run: number) {
    this.#sql = sql;
    this.#run = run;
    this.#load();
  }

  #load(): void {
    const row =
      this.#after === null
        ? this.#sql.exec<{ last: number; seq: number; data: ArrayBuffer }>('SELECT last, seq, data FROM blocks WHERE run = ? ORDER BY last, seq LIMIT 1', this.#run).toArray()[0]
        : this.#sql
            .exec<{ last: number; seq: number; data: ArrayBuffer }>(
              'SELECT last, seq, data FROM blocks WHERE run = ? AND (last, seq) > (?, ?) ORDER BY last, seq LIMIT 1',
              this.#run,
              this.#after.last,
              this.#after.seq,
            )
            .toArray()[0];
    if (!row) {
      this.#ended = true;
      return;
    }
    this.#after = { last: row.last, seq: row.seq };
    this.#block = fromBlob(row.data);
    this.#index = 0;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The current entry's words (valid while not ended). */
  get hi(): number {
    return this.#block[this.#index * WORDS] ?? 0;
  }

  get lo(): number {
    return this.#block[this.#index * WORDS + 1] ?? 0;
  }

  get ref(): number {
    return this.#block[this.#index * WORDS + 2] ?? 0;
  }

  advance(): void {
    this.#index++;
    if (this.#index >= entryCount(this.#block)) this.#load();
  }
}

export function deleteRun(sql: SqlStorage, run: number): void {
  sql.exec('DELETE FROM blocks WHERE run = ?', run);
  sql.exec('DELETE FROM runs WHERE id = ?', run);
}

/** The references of `hash` in a run: the blocks whose range holds it (usually one). */
export function refsInRun(sql: SqlStorage, run: number, hash: number, into: Set<number>, max: number): void {
  let after: { last: number; seq: number } | null = null;
  for (;;) {
    const row: { last: number; seq: number; first: number; data: ArrayBuffer } | undefined =
      after === null
        ? sql.exec<{ last: number; seq: number; first: number; data: ArrayBuffer }>('SELECT last, seq, first, data FROM blocks WHERE run = ? AND last >= ? ORDER BY last, seq LIMIT 1', run, hash).toArray()[0]
        : sql
            .exec<{ last: number; seq: number; first: number; data: ArrayBuffer }>(
              'SELECT last, seq, first, data FROM blocks WHERE run = ? AND (last, seq) > (?, ?) ORDER BY last, seq LIMIT 1',
              run,
              after.last,
              after.seq,
            )
            .toArray()[0];
    if (!row || row.first > hash || into.size >= max) return;
    refsOf(fromBlob(row.data), hash, into, max);
    // A value with more entries than a block continues in the next one.
    if (row.last > hash) return;
    after = { last: row.last, seq: row.seq };
  }
}
