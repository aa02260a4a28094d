/**
 * A ledger shard's side of settlement (docs/transactions.md, "Settlement"): registering in the
 * merchant's settlement index before money awaiting settlement is written, and settling what was
 * captured before a cutoff into the day's batches.
 */
import type { Env } from '../../env';
import {
  acknowledgeHandoff,
  HANDOFF_ENTRIES_PER_PIECE,
  holdsUnsettled,
  insertHandoff,
  markPageSettled,
  nextHandoff,
  readCursor,
  readIndexing,
  readMeta,
  readStates,
  packedField,
  transactionsInFlight,
  unpackRecord,
  unsettledPageRows,
  unsettledStates,
  upgradeShardTables,
  writeCursor,
  writeIndexing,
  writeState,
  type PackedRecord,
  type PageRow,
  type SettleAnswer,
  type SettleCursor,
  type SettledEntry,
  type SettleRequest,
  type ShardIdentity,
} from '../../storage/ledger-shard';
import { settle } from '../../services/transactions/lifecycle-rules';
import { settlementObjectName } from '../../services/settlement/index-registry';
import { decodePage, entryOf, packedEntry, type ShardContext } from './reading';

/**
 * Makes sure the merchant's settlement index lists this shard before money awaiting settlement is
 * written here: one call to the settlement object per stretch of such money (the first write after
 * the shard was last emptied by a settlement run), not one per write.
 */
export async function ensureIndexed(shard: ShardContext, env: Env, identity: ShardIdentity, now: string): Promise<void> {
  const sql = shard.sql;
  const before = readIndexing(sql);
  if (before.indexed) return;
  const generation = before.generation + 1;
  const settlement = env.MERCHANT_SETTLEMENT.getByName(settlementObjectName(identity.merchantId));
  await settlement.register(identity.merchantId, identity, generation, now);
  // Another call may have registered meanwhile: keep the later generation.
  const after = readIndexing(sql);
  writeIndexing(sql, true, Math.max(after.generation, generation));
}

/** Page rows read per query while marking (a batch page holds up to 500 records, an API page one). */
const PAGE_ROWS_PER_READ = 64;
/**
 * Rows (page rows and states) one call may pass, whether or not they hold money still to settle
 * (voided since, say): the call's work is bounded by this and by a piece's worth of records.
 */
const ROWS_PER_CALL = 5_000;

/**
 * One call of a settlement run (docs/transactions.md, "Settlement"): acknowledges the pieces up to
 * `request.after`, and answers the next piece of the handoff; when none is waiting, first marks the
 * next rows captured before `request.before` settled into `request.batchDate`, page rows whole and
 * changed transactions in their state, writing what they settled as new pieces in the same step.
 * A transaction whose capture, void or refund is claimed and not answered is not settled by this
 * run (docs/transactions.md, "Settlement and operations").
 * When nothing is left for the run: done, and whether money is still waiting (captured after the cutoff).
 */
export async function settleShard(shard: ShardContext, identity: ShardIdentity, request: SettleRequest): Promise<SettleAnswer> {
  upgradeShardTables(shard.sql);
  const sql = shard.sql;
  if (!readMeta(sql)) return { piece: null, done: true, holdsUnsettled: false, generation: 0 };
  const perPiece = Math.max(1, Math.min(request.pageEntries ?? HANDOFF_ENTRIES_PER_PIECE, HANDOFF_ENTRIES_PER_PIECE));
  acknowledgeHandoff(sql, request.after);
  const waiting = nextHandoff(sql, request.after);
  if (waiting) return { piece: waiting, done: false };

  const saved = readCursor<SettleCursor>(sql, 'settle');
  const cursor: SettleCursor =
    saved && saved.batchDate === request.batchDate && saved.before === request.before ? saved : { batchDate: request.batchDate, before: request.before, page: null, seq: 0, stateId: null };
  // Reading a page may await (gzip): the rows are read first, then marked in one synchronous step
  // that checks each is still unsettled and each record has no state written meanwhile.
  const read: { row: PageRow; records: PackedRecord[] }[] = [];
  let records = 0;
  let pagesLeft = true;
  let last = { page: cursor.page, seq: cursor.seq };
  while (records < perPiece && read.length < ROWS_PER_CALL) {
    const rows = unsettledPageRows(sql, request.before, { ...cursor, ...last }, Math.min(PAGE_ROWS_PER_READ, ROWS_PER_CALL - read.length));
    if (rows.length === 0) {
      pagesLeft = false;
      break;
    }
    for (const row of rows) {
      const packed = await decodePage(row);
      read.push({ row, records: packed });
      records += packed.length;
      last = { page: row.page, seq: row.seq };
      if (records >= perPiece) break;
    }
  }
  let statesLeft = false;
  shard.storage.transactionSync(() => {
    const settled: SettledEntry[] = [];
    const marked = read.filter(({ row }) => markPageSettled(sql, row, request.batchDate, request.settledAt));
    // Only a few columns are read: unpacking every record of a page would cost most of the step.
    const pending = marked.flatMap(({ records: packedRecords }) => packedRecords.filter((packed) => packedField(packed, 'status') === 'pending_settlement'));
    const ids = pending.map((packed) => String(packedField(packed, 'id')));
    // A transaction changed since it was processed (captured, voided) is settled from its state.
    const changed = readStates(sql, identity.merchantId, ids);
    // One whose operation is in flight (a void with its processor) is left out: it gets a state row
    // of its own, as processed and still awaiting settlement, which keeps it out of its page's mark
    // (the page's other records settle now) and lets a later run settle it once the operation is
    // answered, if it is not voided.
    const inFlight = transactionsInFlight(sql, ids.filter((id) => !changed.has(id)));
    const held: string[] = [];
    for (const packed of pending) {
      const id = String(packedField(packed, 'id'));
      if (changed.has(id)) continue;
      if (!inFlight.has(id)) {
        settled.push(packedEntry(packed));
        continue;
      }
      const stored = unpackRecord(identity.merchantId, packed);
      const capturedAt = stored.record.captured_at === null ? null : String(stored.record.captured_at);
      writeState(sql, { stored, original: true, amountRefunded: 0, unsettled: true, capturedAt, settledOn: null }, request.settledAt);
      held.push(id);
    }
    let stateId = cursor.stateId;
    if (!pagesLeft) {
      const room = Math.min(perPiece - settled.length, ROWS_PER_CALL - read.length);
      const states = room > 0 ? unsettledStates(sql, identity.merchantId, request.before, stateId, room) : [];
      statesLeft = room <= 0 || states.length === room;
      for (const state of states) {
        const record = settle(state.stored.record, request.batchDate, request.settledAt);
        writeState(sql, { ...state, stored: { ...state.stored, record }, unsettled: false, settledOn: request.batchDate }, request.settledAt);
        if (Number(record.amount_settled) > 0) settled.push(entryOf(record));
        stateId = String(record.id);
      }
    }
    insertHandoff(sql, request.batchDate, settled, perPiece, held);
    writeCursor(sql, 'settle', { ...cursor, page: last.page, seq: last.seq, stateId });
  });
  const piece = nextHandoff(sql, request.after);
  if (piece) return { piece, done: false };
  if (pagesLeft || statesLeft) return { piece: null, done: false };
  // Nothing left for this run: the shard counts itself out of the index (as of its generation) in
  // the same step when no money waits, so money written later registers again under a newer generation.
  let holds = true;
  let generation = 0;
  shard.storage.transactionSync(() => {
    holds = holdsUnsettled(sql);
    generation = readIndexing(sql).generation;
    if (!holds) writeIndexing(sql, false, generation);
    writeCursor(sql, 'settle', null);
  });
  return { piece: null, done: true, holdsUnsettled: holds, generation };
}
