/**
 * Reading a ledger shard's records as its calls answer them: a page row's records decompressed, a
 * transaction's current record (its state row, or its page's record as settled or expired), and the
 * records a `find` asks for.
 */
import { gunzipText } from '../../lib/gzip';
import {
  packedField,
  pageSettlementMark,
  readPageRows,
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

/** A shard's storage and bindings, as its parts use them. */
export interface ShardContext {
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
}

export function keyOf(stored: StoredTransaction): string {
  return String(stored.record.idempotency_key);
}

/** A page row's records, decompressed if need be. */
export async function decodePage(row: PageRow): Promise<PackedRecord[]> {
  const text = row.format === 'gzip' ? await gunzipText(row.records as ArrayBuffer) : String(row.records);
  return JSON.parse(text) as PackedRecord[];
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
      const stored = unpackRecord(shard.merchantId, packed);
      if (wanted.has(keyOf(stored)) || ids.has(String(stored.record.id))) {
        found.set(keyOf(stored), query.current ? { ...stored, record: presentRecord(stored.record, pageSettlement(row), query.current.expiredBefore), amountRefunded: 0 } : stored);
      }
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

/**
 * A transaction's record as its page holds it (the page is decompressed: this awaits), and where;
 * null when its page holds no such id. What it is now is read after, without awaiting: `currentNow`.
 */
export async function pageRecord(sql: SqlStorage, shard: ShardIdentity, id: string, query: ShardQuery, cache?: PageCache): Promise<PageRecord | null> {
  for (const row of readPageRows(sql, { exact: query.exact, floor: query.floor })) {
    if (cache) {
      // A page row is written once: its records, unpacked by id, serve every operation of the call.
      const key = `${row.page}\n${row.seq}`;
      let byId = cache.get(key);
      if (!byId) {
        byId = new Map((await decodePage(row)).map((packed) => unpackRecord(shard.merchantId, packed)).map((stored) => [String(stored.record.id), stored]));
        cache.set(key, byId);
      }
      const stored = byId.get(id);
      if (stored) return { stored, row: { page: row.page, seq: row.seq } };
      continue;
    }
    for (const packed of await decodePage(row)) {
      const stored = unpackRecord(shard.merchantId, packed);
      if (String(stored.record.id) === id) return { stored, row: { page: row.page, seq: row.seq } };
    }
  }
  return null;
}

/** The records of page rows one call of many operations has read, by page row and id (at most the shard's pages a chunk names). */
export type PageCache = Map<string, Map<string, PageRecord['stored']>>;

/**
 * The current record of one transaction, read in one synchronous step (no await: a settlement run
 * cannot mark its page between this read and the caller's write): its state row, else its page's
 * record with the page's settlement mark as it is now, expired past its authorization's life.
 */
export function currentNow(sql: SqlStorage, shard: ShardIdentity, id: string, found: PageRecord | null, expiredBefore: string): StateRow | null {
  const state = readStates(sql, shard.merchantId, [id]).get(id);
  if (state) return { ...state, stored: currentOf(state, expiredBefore) };
  if (!found) return null;
  const { stored } = found;
  const settlement = pageSettlementMark(sql, found.row);
  return {
    stored: { ...stored, record: presentRecord(stored.record, settlement, expiredBefore) },
    original: true,
    amountRefunded: 0,
    unsettled: stored.record.status === 'pending_settlement' && !settlement.settledOn,
    capturedAt: stored.record.captured_at === null ? null : String(stored.record.captured_at),
    settledOn: stored.record.status === 'pending_settlement' ? settlement.settledOn : null,
  };
}
