/**
 * Reading a ledger shard's records as its calls answer them: a page row's records decompressed, a
 * transaction's current record (its state row, or its page's record as settled or expired), and the
 * records a `find` asks for.
 */
import { gunzipText } from '../../lib/gzip';
import {
  floorPages,
  MAX_ROW_JSON_BYTES,
  packedField,
  pageRowKey,
  pageRowSizes,
  readPageRows,
  readPageRowsAt,
  readStates,
  unpackRecord,
  type PackedRecord,
  type PageRow,
  type SettledEntry,
  type ShardIdentity,
  type ShardQuery,
  type StateRow,
  type StoredTransaction,
} from '../../storage/ledger-shard';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import { presentRecord } from '../../services/transactions/lifecycle-rules';
import { DecodedRow, type DecodedPages } from './decoded-pages';

/** A shard's storage and bindings, as its parts use them. */
export interface ShardContext {
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  /** Page rows the object decoded in earlier calls (decoded-pages.ts); absent: every read decodes. */
  readonly pages?: DecodedPages;
}

export function keyOf(stored: StoredTransaction): string {
  return String(stored.record.idempotency_key);
}

/** A page row's records, decompressed if need be. */
export async function decodePage(row: PageRow): Promise<PackedRecord[]> {
  return JSON.parse(await pageText(row)) as PackedRecord[];
}

/** A page row's records as JSON text. */
async function pageText(row: PageRow): Promise<string> {
  return row.format === 'gzip' ? await gunzipText(row.records as ArrayBuffer) : String(row.records);
}

export function pageSettlement(row: PageRow): { settledOn: string | null; settledAt: string | null } {
  return { settledOn: row.settled_on ?? null, settledAt: row.settled_at ?? null };
}

/** A state row's record as it is now (an authorization may have expired since it was written). */
export function currentOf(state: StateRow, expiredBefore: string): StoredTransaction {
  return { ...state.stored, record: presentRecord(state.stored.record, null, expiredBefore), amountRefunded: state.amountRefunded };
}

/** What a settlement batch lists of a settled transaction. */
export function entryOf(record: TransactionRecord): SettledEntry {
  return { id: String(record.id), type: String(record.type), processor_id: String(record.processor_id), amount: Number(record.amount_settled || record.amount_captured) };
}

/** The same, read from a packed record's few columns. */
export function packedEntry(packed: PackedRecord): SettledEntry {
  return {
    id: String(packedField(packed, 'id')),
    type: String(packedField(packed, 'type')),
    processor_id: String(packedField(packed, 'processor_id')),
    amount: Number(packedField(packed, 'amount_settled') || packedField(packed, 'amount_captured')),
  };
}

/**
 * The records and open claims under `query.keys` (claims have record status `processing`), and the
 * records with `query.ids`; as processed, or with `query.current` as they are now.
 */
export async function findRecords(
  sql: SqlStorage,
  shard: ShardIdentity,
  query: ShardQuery,
  openClaim: (key: string) => StoredTransaction | undefined,
): Promise<StoredTransaction[]> {
  const wanted = new Set(query.keys ?? []);
  const ids = new Set(query.ids ?? []);
  const found = new Map<string, StoredTransaction>();
  for (const row of readPageRows(sql, query)) {
    for (const packed of await decodePage(row)) {
      // Two columns read to match; only the records asked for are unpacked.
      if (!wanted.has(String(packedField(packed, 'idempotency_key'))) && !ids.has(String(packedField(packed, 'id')))) continue;
      const stored = unpackRecord(shard.merchantId, packed);
      found.set(keyOf(stored), query.current ? { ...stored, record: presentRecord(stored.record, pageSettlement(row), query.current.expiredBefore), amountRefunded: 0 } : stored);
    }
  }
  for (const key of wanted) {
    const claim = openClaim(key);
    if (claim && !found.has(key)) found.set(key, claim);
  }
  if (!query.current) return [...found.values()];
  // Changed since processed (or a refund, which only `states` holds): the current record wins.
  const states = readStates(sql, shard.merchantId, [...ids, ...[...found.values()].map((s) => String(s.record.id))]);
  const answer = [...found.values()].filter((stored) => !states.has(String(stored.record.id)));
  for (const state of states.values()) answer.push(currentOf(state, query.current.expiredBefore));
  return answer;
}

/** A transaction's record as processed, and the page row that holds it. */
export interface PageRecord {
  stored: StoredTransaction;
  row: { page: string; seq: number };
}

/** A transaction wanted from its page: its id, and where its record is (ShardQuery's pages). */
export interface PageWant {
  id: string;
  query: ShardQuery;
}

/**
 * Page rows' stored bytes one read holds at most: a few rows (each at most MAX_ROW_JSON_BYTES), so
 * many operations' pages are read in a few statements without holding every page at once.
 */
const PAGE_BYTES_PER_READ = 8 * MAX_ROW_JSON_BYTES;

/**
 * Each wanted transaction's record as its page holds it, and where (null when none of its pages
 * holds that id): every page named is read once for all of them, a few rows a statement, and each
 * decompressed (this awaits) with only the wanted records unpacked; a row `decoded` holds with the
 * same stored size is taken from there instead. What they are now is read after, without
 * awaiting: `currentNow`.
 */
export async function pageRecords(sql: SqlStorage, shard: ShardIdentity, wants: readonly PageWant[], decoded?: DecodedPages): Promise<(PageRecord | null)[]> {
  const floors = floorPages(sql, wants.flatMap((want) => want.query.floor));
  const pagesOf = wants.map((want) => new Set([...want.query.exact, ...want.query.floor.flatMap((value) => floors.get(value) ?? [])]));
  const wantedIn = new Map<string, Set<string>>();
  wants.forEach((want, i) => {
    for (const page of pagesOf[i] ?? []) {
      const ids = wantedIn.get(page) ?? new Set<string>();
      ids.add(want.id);
      wantedIn.set(page, ids);
    }
  });
  // By page and id (a want takes its id only from its own pages). Every row listed, in page order: decoded here or taken from `decoded`; then the wanted records
  // taken in that order (the first row holding an id wins, as one scan in order would find it).
  const rows = pageRowSizes(sql, [...wantedIn.keys()]).map((row) => ({ row, records: decoded?.get(pageRowKey(row), row.bytes) ?? null }));
  const reads: { page: string; seq: number; bytes: number }[][] = [];
  let bytes = 0;
  for (const { row, records } of rows) {
    if (records) continue;
    if (reads.length === 0 || bytes + row.bytes > PAGE_BYTES_PER_READ) {
      reads.push([]);
      bytes = 0;
    }
    reads.at(-1)?.push(row);
    bytes += row.bytes;
  }
  const read = new Map<string, DecodedRow>();
  for (const group of reads) {
    const sizes = new Map(group.map((row) => [pageRowKey(row), row.bytes]));
    for (const row of readPageRowsAt(sql, group)) {
      const text = await pageText(row);
      const records = new DecodedRow(sizes.get(pageRowKey(row)) ?? -1, text.length, JSON.parse(text) as PackedRecord[]);
      decoded?.set(pageRowKey(row), records);
      read.set(pageRowKey(row), records);
    }
  }
  const found = new Map<string, PageRecord>();
  for (const { row, records } of rows) {
    const decodedRow = records ?? read.get(pageRowKey(row));
    if (!decodedRow) continue;
    for (const id of wantedIn.get(row.page) ?? []) {
      const stored = found.has(`${row.page}\n${id}`) ? null : decodedRow.record(shard.merchantId, id);
      if (stored) found.set(`${row.page}\n${id}`, { stored, row: { page: row.page, seq: row.seq } });
    }
  }
  return wants.map((want, i) => {
    const pages = pagesOf[i] ?? new Set<string>();
    // In page order (one page, the usual case, needs no sort).
    for (const page of pages.size > 1 ? [...pages].sort() : pages) {
      const record = found.get(`${page}\n${want.id}`);
      if (record) return record;
    }
    return null;
  });
}

/**
 * The current record of one transaction, from what was read in one synchronous step (no await: a
 * settlement run cannot mark its page between the read and the caller's write): its state row,
 * else its page's record with the page row's settlement mark as it is now (`mark`), expired past
 * its authorization's life.
 */
export function currentNow(
  state: StateRow | undefined,
  found: PageRecord | null,
  mark: (row: PageRecord['row']) => { settledOn: string | null; settledAt: string | null },
  expiredBefore: string,
): StateRow | null {
  if (state) return { ...state, stored: currentOf(state, expiredBefore) };
  if (!found) return null;
  const { stored } = found;
  const settlement = mark(found.row);
  return {
    stored: { ...stored, record: presentRecord(stored.record, settlement, expiredBefore) },
    original: true,
    amountRefunded: 0,
    unsettled: stored.record.status === 'pending_settlement' && !settlement.settledOn,
    capturedAt: stored.record.captured_at === null ? null : String(stored.record.captured_at),
    settledOn: stored.record.status === 'pending_settlement' ? settlement.settledOn : null,
  };
}
