/**
 * Page rows' records as a ledger shard object last decoded them, kept between its calls: a batch
 * chunk's captures, voids and refunds read the same page rows in their claim and again in their
 * answer a moment later, and each read would decompress and parse the whole row again.
 *
 * Why this is safe: a page row's records are written once and changed only when retention drops
 * an API shard's request hashes, which empties this cache (as the archive does); its settlement
 * mark lives in other columns of the row, read from SQLite in every step. And a row is answered
 * from here only if SQLite still lists it with the same stored size in the same call (reading.ts
 * reads the rows' sizes first, every time): a row deleted is not listed, so never answered.
 * Records are unpacked once per id and frozen: every reader builds new objects from them.
 *
 * Bound: rows are kept while their JSON text totals at most DECODED_JSON_KEPT, the oldest dropped
 * first. A row's JSON is at most MAX_ROW_JSON_BYTES (1 MB); as JavaScript values a few times that,
 * so the cache holds about 20 MB at most, a sixth of an isolate's 128 MB (WORKERS.isolateMemoryBytes).
 */
import { WORKERS } from '../../lib/platform-limits';
import { MAX_ROW_JSON_BYTES, packedField, unpackRecord, type PackedRecord, type StoredTransaction } from '../../storage/ledger-shard';

/** The JSON text of the rows kept, at most: 4 MB, four rows at their largest. */
export const DECODED_JSON_KEPT = WORKERS.isolateMemoryBytes / 32;
if (DECODED_JSON_KEPT < MAX_ROW_JSON_BYTES) throw new Error('the decoded page cache could not keep one row at its largest');

/** One decoded page row: its records by id, each unpacked the first time it is asked for. */
export class DecodedRow {
  readonly #packed = new Map<string, PackedRecord>();
  readonly #unpacked = new Map<string, StoredTransaction>();

  constructor(
    readonly storedBytes: number,
    readonly jsonChars: number,
    records: readonly PackedRecord[],
  ) {
    for (const packed of records) {
      const id = String(packedField(packed, 'id'));
      // The first record of an id wins, as a scan in order would find it.
      if (!this.#packed.has(id)) this.#packed.set(id, packed);
    }
  }

  /** The record with `id` in this row (unpacked once for `merchantId`, the shard's own), or null. */
  record(merchantId: string, id: string): StoredTransaction | null {
    const known = this.#unpacked.get(id);
    if (known) return known;
    const packed = this.#packed.get(id);
    if (!packed) return null;
    const stored = unpackRecord(merchantId, packed);
    Object.freeze(stored.record);
    Object.freeze(stored.extras);
    Object.freeze(stored);
    this.#unpacked.set(id, stored);
    return stored;
  }
}

/** The decoded rows of one shard object, by page row key, oldest first. */
export class DecodedPages {
  readonly #rows = new Map<string, DecodedRow>();
  #chars = 0;

  /** The row under `key` if it was decoded when it had this stored size (else it is dropped). */
  get(key: string, storedBytes: number): DecodedRow | null {
    const row = this.#rows.get(key);
    if (!row) return null;
    this.#rows.delete(key);
    if (row.storedBytes !== storedBytes) {
      this.#chars -= row.jsonChars;
      return null;
    }
    // Kept as the newest.
    this.#rows.set(key, row);
    return row;
  }

  set(key: string, row: DecodedRow): void {
    const old = this.#rows.get(key);
    if (old) {
      this.#rows.delete(key);
      this.#chars -= old.jsonChars;
    }
    this.#rows.set(key, row);
    this.#chars += row.jsonChars;
    for (const [oldest, kept] of this.#rows) {
      if (this.#chars <= DECODED_JSON_KEPT || oldest === key) break;
      this.#rows.delete(oldest);
      this.#chars -= kept.jsonChars;
    }
  }

  /** Everything dropped (the shard's rows were deleted). */
  clear(): void {
    this.#rows.clear();
    this.#chars = 0;
  }
}
