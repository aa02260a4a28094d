/**
 * A ledger shard's `handoff` table (storage/ledger-shard/schema.ts): what a settlement run settled in
 * this shard, kept until the merchant's settlement object has recorded it (docs/transactions.md,
 * "Settlement"). Each row is one piece of at most a page of entries, numbered from the shard's
 * counter (`meta.handoff_seq`, never reused), written in the same step that marks its transactions
 * settled. The settlement object asks for the piece after the last one it recorded, which
 * acknowledges (deletes) every piece up to it: asked again, the shard answers the same piece, so
 * nothing settled here can miss its batch, and nothing is counted twice.
 */
import { DURABLE_OBJECTS, HALF } from '../../lib/platform-limits';

/** One transaction settled into a batch (what the settlement batch lists). */
export interface SettledEntry {
  id: string;
  type: string;
  processor_id: string;
  amount: number;
}

/** A piece of what one shard settled on `batchDate`, as the settlement object receives it. */
export interface HandoffPiece {
  seq: number;
  batchDate: string;
  entries: SettledEntry[];
  /**
   * Transactions of the pages marked settled in the same step that the run left out, an operation
   * being in flight on them (a piece of its own, before the entries: the search index keeps them
   * unsettled before it marks their pages settled).
   */
  held: string[];
}

/**
 * Entries per piece, and so per answer to a settlement object (the RPC limit is 32 MiB): an entry's
 * JSON is at most about 200 bytes (an id of 45 characters, a processor id of at most 80, a type,
 * an amount), so 5,000 are at most about 1 MB, half of Durable Object SQLite's 2 MB row
 * (DURABLE_OBJECTS.rowBytes), and a 32nd of the RPC limit.
 */
export const HANDOFF_ENTRIES_PER_PIECE = 5_000;
const MAX_ENTRY_BYTES = 200;
if (HANDOFF_ENTRIES_PER_PIECE * MAX_ENTRY_BYTES > DURABLE_OBJECTS.rowBytes * HALF) throw new Error('a handoff piece could pass half a row');
/**
 * The ids a step may leave out are among the records it marks: at most a piece's worth and one more
 * batch page (500 records), each id at most 50 bytes of JSON.
 */
const MAX_HELD_IDS = HANDOFF_ENTRIES_PER_PIECE + 500;
if (MAX_HELD_IDS * 50 > DURABLE_OBJECTS.rowBytes * HALF) throw new Error('a held piece could pass half a row');

type PackedEntry = [id: string, type: string, processorId: string, amount: number];

/**
 * Acknowledges every piece up to `seq` (the settlement object has recorded them): each piece that
 * lists transactions is kept in `settled_pieces`, where a settlement batch's transactions are read
 * from (the settlement object keeps only each piece's totals), until the shard is archived. The
 * shard holds its own transactions only, so this grows with the shard (about 55 bytes per settled
 * transaction), never with the merchant.
 */
export function acknowledgeHandoff(sql: SqlStorage, seq: number): void {
  sql.exec('INSERT OR IGNORE INTO settled_pieces (seq, batch_date, entries) SELECT seq, batch_date, entries FROM handoff WHERE seq <= ? AND num > 0', seq);
  sql.exec('DELETE FROM handoff WHERE seq <= ?', seq);
}

/** The first piece after `seq` that is not acknowledged, if any. */
export function nextHandoff(sql: SqlStorage, seq: number): HandoffPiece | null {
  const row = sql
    .exec<{ seq: number; batch_date: string; entries: string; held: string | null }>('SELECT seq, batch_date, entries, held FROM handoff WHERE seq > ? ORDER BY seq LIMIT 1', seq)
    .toArray()[0];
  if (!row) return null;
  const entries = (JSON.parse(row.entries) as PackedEntry[]).map(([id, type, processorId, amount]) => ({ id, type, processor_id: processorId, amount }));
  return { seq: row.seq, batchDate: row.batch_date, entries, held: row.held ? (JSON.parse(row.held) as string[]) : [] };
}

/**
 * Stores `entries` as pieces of at most `perPiece`, numbered from the shard's counter, after a piece
 * naming the `held` transactions if any; answers how many pieces.
 */
export function insertHandoff(sql: SqlStorage, batchDate: string, entries: readonly SettledEntry[], perPiece: number, held: readonly string[] = []): number {
  let pieces = 0;
  if (held.length > 0) {
    if (held.length > MAX_HELD_IDS) throw new Error('more transactions held than a step marks');
    const seq = sql.exec<{ seq: number }>('UPDATE meta SET handoff_seq = handoff_seq + 1 RETURNING handoff_seq AS seq').one().seq;
    sql.exec('INSERT INTO handoff (seq, batch_date, num, entries, held) VALUES (?, ?, 0, ?, ?)', seq, batchDate, '[]', JSON.stringify(held));
    pieces++;
  }
  for (let i = 0; i < entries.length; i += perPiece) {
    const piece = entries.slice(i, i + perPiece);
    const seq = sql.exec<{ seq: number }>('UPDATE meta SET handoff_seq = handoff_seq + 1 RETURNING handoff_seq AS seq').one().seq;
    const packed: PackedEntry[] = piece.map((e) => [e.id, e.type, e.processor_id, e.amount]);
    sql.exec('INSERT INTO handoff (seq, batch_date, num, entries) VALUES (?, ?, ?, ?)', seq, batchDate, piece.length, JSON.stringify(packed));
    pieces++;
  }
  return pieces;
}

/** Whether any piece waits for the settlement object. */
export function holdsHandoff(sql: SqlStorage): boolean {
  return sql.exec('SELECT 1 FROM handoff LIMIT 1').toArray().length > 0;
}

/** Which of a piece's transactions a batch listing asks for: those of one processor, from `skip`, at most `take`. */
export interface PieceSlice {
  seq: number;
  processorId: string;
  skip: number;
  take: number;
}

/**
 * The transactions `slices` ask for, one list per slice in order (acknowledged pieces, or one a run
 * is still handing over). A piece the shard no longer holds (archived) answers an empty list. The
 * answer is at most the slices' `take`s (a page of a batch), however large the pieces.
 */
export function readSettledSlices(sql: SqlStorage, slices: readonly PieceSlice[]): SettledEntry[][] {
  const seqs = [...new Set(slices.map((slice) => slice.seq))];
  const rows = sql
    .exec<{ seq: number; entries: string }>(
      `SELECT seq, entries FROM settled_pieces WHERE seq IN (SELECT value FROM json_each(?1))
       UNION ALL SELECT seq, entries FROM handoff WHERE seq IN (SELECT value FROM json_each(?1)) AND seq NOT IN (SELECT seq FROM settled_pieces)`,
      JSON.stringify(seqs),
    )
    .toArray();
  const bySeq = new Map(rows.map((row) => [row.seq, row.entries]));
  return slices.map((slice) => {
    const json = bySeq.get(slice.seq);
    if (json === undefined) return [];
    const out: SettledEntry[] = [];
    let seen = 0;
    for (const [id, type, processorId, amount] of JSON.parse(json) as PackedEntry[]) {
      if (processorId !== slice.processorId) continue;
      if (seen++ < slice.skip) continue;
      out.push({ id, type, processor_id: processorId, amount });
      if (out.length >= slice.take) break;
    }
    return out;
  });
}
