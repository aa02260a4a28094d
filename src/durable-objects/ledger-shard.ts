/**
 * A ledger shard: one merchant's transactions for one period, in the object's own SQLite
 * (`env.LEDGER_SHARD.getByName(ledgerShardName(...))`, services/transactions/ledger.ts). Two kinds:
 * a batch's rows (one shard per batch file, so at most BATCH_MAX_ROWS records) and a merchant's
 * API transactions of one UTC day. Nothing here grows with the number of merchants or with time.
 *
 * The object is single-threaded, and that is what makes a claim atomic: `claim` checks and takes
 * a chunk's keys in one synchronous step, so two deliveries of a chunk (or two API requests with one
 * key) can never both hold a key. Claims are kept in memory too (they are few and short-lived) and
 * rebuilt from SQLite when the object starts.
 *
 * Writes: a chunk costs one claim row, one page row and the claim's delete, whatever its size; an
 * API transaction a claim, its page and the delete. Retention is the object's own alarm: an API
 * shard drops its request hashes once the idempotency window of its last transaction is over, and
 * every shard is archived to R2 and emptied (`deleteAll`) TRANSACTION_RETENTION_DAYS after its
 * period began.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { ledgerArchiveKey, writeArchive } from '../storage/ledger-archive';
import { gunzipText, gzipText } from '../lib/gzip';
import {
  archiveLine,
  clearPageHashes,
  initialiseShard,
  insertClaim,
  insertPageRows,
  listClaims,
  markHashesCleared,
  packRecord,
  pageBatch,
  pagePieces,
  readMeta,
  readPageRows,
  recordedKeys,
  unpackRecord,
  updateClaim,
  type PageRow,
  answered,
  type ClaimAnswer,
  type ClaimRequest,
  type PackedRecord,
  type RetentionOutcome,
  type ShardIdentity,
  type ShardFailure,
  type ShardQuery,
  type StoredTransaction,
  allStates,
  answerOperation,
  deleteOperation,
  findOperation,
  holdsUnsettled,
  insertOperation,
  markPageSettled,
  operationsOf,
  pageRowsSettledOn,
  readStates,
  statesSettledOn,
  unsettledPageRows,
  unsettledStates,
  upgradeShardTables,
  readIndexing,
  writeIndexing,
  writeState,
  type OperationBegin,
  type OperationCompletion,
  type OperationRequest,
  type SettleAnswer,
  type SettledEntry,
  type SettleRequest,
  type StateRow,
} from '../storage/ledger-shard';
import type { TransactionRecord } from '../schemas/transaction-columns';
import { applyOperation, checkOperation, presentRecord, settle } from '../services/transactions/lifecycle-rules';
import { settlementObjectName } from '../services/settlement/index-registry';
// receipts (issue 32): the outbox's hooks and RPC answers live in services/receipts.
import { operationReceipt, receiptsForRecords } from '../services/receipts/facts';
import { receiptSenderDeps, runReceiptOutbox, type OutboxRun } from '../services/receipts/outbox';
import { armReceipts, queueReceipts, queueResendIn, rearmShardAlarm, receiptCountsIn, receiptStatesIn, type ReceiptState, type ResendOutcome } from '../services/receipts/shard';
import type { ReceiptEntry } from '../storage/receipt-outbox';
import { systemClock } from '../lib/time';

interface OpenClaim {
  claimId: number;
  stored: StoredTransaction;
}

/**
 * A write the shard could not make (its storage failed) is answered, not thrown, so the caller
 * (which retries the chunk or answers 500) sees it once, and the object does not also report it as
 * an uncaught exception of its own, as a rejected RPC would.
 */
async function answerOrFailure<T>(work: () => Promise<T>): Promise<T | ShardFailure> {
  try {
    return await work();
  } catch (err) {
    return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
  }
}

function keyOf(stored: StoredTransaction): string {
  return String(stored.record.idempotency_key);
}

/** Pages read per step while archiving (each page a chunk's records). */
const ARCHIVE_PAGES_PER_READ = 20;

export class LedgerShard extends DurableObject<Env> {
  /** Open claims by idempotency key, loaded from SQLite on first use. */
  #claims: Map<string, OpenClaim> | null = null;
  #claimRows = new Map<number, { page: string; createdAt: string; keys: Set<string> }>();

  #open(merchantId: string): Map<string, OpenClaim> {
    if (this.#claims) return this.#claims;
    const claims = new Map<string, OpenClaim>();
    for (const row of listClaims(this.ctx.storage.sql, merchantId)) {
      this.#claimRows.set(row.id, { page: row.page, createdAt: row.createdAt, keys: new Set(row.entries.map(keyOf)) });
      for (const stored of row.entries) claims.set(keyOf(stored), { claimId: row.id, stored });
    }
    this.#claims = claims;
    return claims;
  }

  /** Creates the tables and arms the retention alarm on the first write; later calls keep the first identity. */
  async #ensure(shard: ShardIdentity): Promise<void> {
    this.#upgrade();
    if (readMeta(this.ctx.storage.sql)) return;
    const meta = initialiseShard(this.ctx.storage.sql, shard);
    await this.ctx.storage.setAlarm(Date.parse(meta.hashesClearAt ?? meta.archiveAt));
  }

  /**
   * A shard made by an older version gets the tables it lacks before anything reads them (checked on
   * every call: two one-row reads, and no state in memory that could disagree with SQLite).
   */
  #upgrade(): void {
    upgradeShardTables(this.ctx.storage.sql);
  }

  /**
   * The records and open claims under `query.keys` (claims have record status `processing`), and the
   * records with `query.ids`; as processed, or with `query.current` as they are now.
   */
  async find(shard: ShardIdentity, query: ShardQuery): Promise<StoredTransaction[]> {
    this.#upgrade();
    const claims = this.#open(shard.merchantId);
    const wanted = new Set(query.keys ?? []);
    const ids = new Set(query.ids ?? []);
    const found = new Map<string, StoredTransaction>();
    for (const row of readPageRows(this.ctx.storage.sql, query)) {
      for (const packed of await decodePage(row)) {
        const stored = unpackRecord(shard.merchantId, packed);
        if (wanted.has(keyOf(stored)) || ids.has(String(stored.record.id))) {
          found.set(keyOf(stored), query.current ? { ...stored, record: presentRecord(stored.record, pageSettlement(row), query.current.expiredBefore), amountRefunded: 0 } : stored);
        }
      }
    }
    for (const key of wanted) {
      const claim = claims.get(key);
      if (claim && !found.has(key)) found.set(key, claim.stored);
    }
    if (!query.current) return [...found.values()];
    // Changed since processed (or a refund, which only `states` holds): the current record wins.
    const states = readStates(this.ctx.storage.sql, shard.merchantId, [...ids, ...[...found.values()].map((s) => String(s.record.id))]);
    const answer = [...found.values()].filter((stored) => !states.has(String(stored.record.id)));
    for (const state of states.values()) answer.push(currentOf(state, query.current.expiredBefore));
    return answer;
  }

  /**
   * Makes sure the merchant's settlement index lists this shard before money awaiting settlement is
   * written here: one call to the settlement object per stretch of such money (the first write after
   * the shard was last emptied by a settlement run), not one per write.
   */
  async #indexed(shard: ShardIdentity, now: string): Promise<void> {
    const sql = this.ctx.storage.sql;
    const before = readIndexing(sql);
    if (before.indexed) return;
    const generation = before.generation + 1;
    const settlement = this.env.MERCHANT_SETTLEMENT.getByName(settlementObjectName(shard.merchantId));
    await settlement.register(shard.merchantId, shard, generation, now);
    // Another call may have registered meanwhile: keep the later generation.
    const after = readIndexing(sql);
    writeIndexing(sql, true, Math.max(after.generation, generation));
  }

  /** The current record of one transaction (its state row, or its page's record as settled or expired). */
  async #current(shard: ShardIdentity, id: string, query: ShardQuery, expiredBefore: string): Promise<StateRow | null> {
    const state = readStates(this.ctx.storage.sql, shard.merchantId, [id]).get(id);
    if (state) return { ...state, stored: currentOf(state, expiredBefore) };
    for (const row of readPageRows(this.ctx.storage.sql, { exact: query.exact, floor: query.floor })) {
      for (const packed of await decodePage(row)) {
        const stored = unpackRecord(shard.merchantId, packed);
        if (String(stored.record.id) !== id) continue;
        const settlement = pageSettlement(row);
        return {
          stored: { ...stored, record: presentRecord(stored.record, settlement, expiredBefore) },
          original: true,
          amountRefunded: 0,
          unsettled: stored.record.status === 'pending_settlement' && !settlement.settledOn,
          capturedAt: stored.record.captured_at === null ? null : String(stored.record.captured_at),
          settledOn: stored.record.status === 'pending_settlement' ? settlement.settledOn : null,
        };
      }
    }
    return null;
  }

  /**
   * Claims a capture, void or refund of one transaction (docs/transactions.md, "Lifecycle"): in one
   * synchronous step, the key's earlier answer, or the transaction's status and amount checked and
   * the operation recorded as claimed, before its processor is asked. One operation at a time per
   * transaction: another one finds it claimed and is told to ask again.
   */
  async beginOperation(shard: ShardIdentity, request: OperationRequest): Promise<OperationBegin | ShardFailure> {
    return answerOrFailure(async () => {
      await this.#ensure(shard);
      // Reading a page may await (gzip): done first; the checks and the claim below do not await.
      const current = await this.#current(shard, request.transactionId, request.query, request.expiredBefore);
      const sql = this.ctx.storage.sql;
      const earlier = findOperation(sql, request.key);
      if (earlier?.answer != null) return { outcome: 'answered', answer: earlier.answer, requestHash: earlier.requestHash } satisfies OperationBegin;
      const state = readStates(sql, shard.merchantId, [request.transactionId]).get(request.transactionId);
      const now = state ? { ...state, stored: currentOf(state, request.expiredBefore) } : current;
      if (!now || now.stored.record.status === 'processing') return { outcome: 'not_found' } satisfies OperationBegin;
      const pending = operationsOf(sql, request.transactionId).find((op) => op.answer === null);
      if (pending) {
        return pending.createdAt < request.staleBefore
          ? ({ outcome: 'abandoned', operation: pending, record: now.stored.record } satisfies OperationBegin)
          : ({ outcome: 'in_progress', since: pending.createdAt } satisfies OperationBegin);
      }
      const check = checkOperation(request.kind, now.stored.record, now.amountRefunded, request.amount);
      if (!check.ok) return { outcome: 'refused', reason: check.reason, message: check.message } satisfies OperationBegin;
      const refunds = request.kind === 'refund' ? operationsOf(sql, request.transactionId).filter((op) => op.kind === 'refund').length : 0;
      const operation = {
        key: request.key,
        transactionId: request.transactionId,
        kind: request.kind,
        requestHash: request.requestHash,
        amount: check.amount,
        refundId: request.kind === 'refund' ? refundTransactionId(request.transactionId, refunds + 1) : null,
        createdAt: request.now,
        answer: null,
      };
      insertOperation(sql, operation);
      return { outcome: 'claimed', operation, record: now.stored.record } satisfies OperationBegin;
    });
  }

  /**
   * Applies a claimed operation's processor answer: the transaction's new state, the refund it made,
   * and the answer kept under the key; answers that answer (JSON). An operation answered already
   * keeps its first answer.
   */
  async completeOperation(shard: ShardIdentity, completion: OperationCompletion): Promise<{ answer: string } | ShardFailure> {
    return answerOrFailure(async () => {
      this.#upgrade();
      const sql = this.ctx.storage.sql;
      const claimed = findOperation(sql, completion.key);
      if (!claimed) throw new Error('no such operation was claimed');
      if (claimed.answer !== null) return { answer: claimed.answer };
      const base = await this.#current(shard, claimed.transactionId, completion.query, completion.expiredBefore);
      const again = findOperation(sql, completion.key);
      if (again?.answer != null) return { answer: again.answer };
      const state = readStates(sql, shard.merchantId, [claimed.transactionId]).get(claimed.transactionId);
      const now = state ? { ...state, stored: currentOf(state, completion.expiredBefore) } : base;
      if (!now) throw new Error('the transaction of a claimed operation is gone');
      const applied = applyOperation(claimed.kind, now.stored.record, now.amountRefunded, claimed.amount, completion.result, {
        now: completion.now,
        refundId: claimed.refundId,
        idempotencyKey: completion.idempotencyKey,
        ipAddress: completion.ipAddress,
      });
      const approved = completion.result.response === 'approved';
      if (approved && claimed.kind !== 'void') {
        await this.#indexed(shard, completion.now);
        // Registering awaited: another call may have answered this operation meanwhile.
        const answeredMeanwhile = findOperation(sql, completion.key);
        if (answeredMeanwhile?.answer != null) return { answer: answeredMeanwhile.answer };
      }
      // receipts (issue 32): an approved refund or void of a transaction with email_receipt sends one, queued with it below.
      const receipt = approved ? operationReceipt(claimed.kind, now.stored, { refund: applied.refund, amount: claimed.amount, authCode: completion.result.authCode, at: completion.now }) : null;
      const answer = JSON.stringify(
        claimed.kind === 'refund' || approved
          ? { status: claimed.kind === 'refund' ? 201 : 200, record: view(claimed.kind === 'refund' ? applied.refund : applied.original, claimed.kind === 'refund' ? 0 : applied.amountRefunded) }
          : { status: 402, message: `${claimed.kind} declined by the processor: ${completion.result.processorResponseText}` },
      );
      this.ctx.storage.transactionSync(() => {
        if (approved) {
          writeState(
            sql,
            {
              stored: { ...now.stored, record: applied.original },
              original: true,
              amountRefunded: applied.amountRefunded,
              unsettled: applied.unsettled,
              capturedAt: applied.original.captured_at === null ? null : String(applied.original.captured_at),
              settledOn: now.settledOn,
            },
            completion.now,
          );
        }
        if (applied.refund) {
          writeState(
            sql,
            {
              stored: { ...now.stored, record: applied.refund, requestHash: '', batchId: null, line: null },
              original: false,
              amountRefunded: 0,
              unsettled: approved,
              capturedAt: approved ? completion.now : null,
              settledOn: null,
            },
            completion.now,
          );
        }
        answerOperation(sql, completion.key, answer);
        if (receipt) queueReceipts(sql, [{ page: receipt.transactionId, entries: [receipt] }]); // receipts (issue 32)
      });
      await armReceipts(this.ctx.storage, receipt ? [{ page: null, entries: [receipt] }] : []); // receipts (issue 32)
      return { answer };
    });
  }

  /** Drops a claimed operation its processor never received (the key may be sent again). */
  async releaseOperation(shard: ShardIdentity, key: string): Promise<true | ShardFailure> {
    return answerOrFailure(async () => {
      this.#upgrade();
      if (readMeta(this.ctx.storage.sql)) deleteOperation(this.ctx.storage.sql, key);
      return true as const;
    });
  }

  /**
   * Settles the shard's money captured before `request.before` into the day's settlement batches
   * (one per processor): page rows whole, changed transactions one by one. Answers every transaction
   * settled on that day, by this run or an earlier one, so a run repeated after a crash reports the
   * same batch; and whether money is still waiting (captured after the cutoff).
   */
  async settle(shard: ShardIdentity, request: SettleRequest): Promise<SettleAnswer | ShardFailure> {
    return answerOrFailure(async () => {
      this.#upgrade();
      const sql = this.ctx.storage.sql;
      if (!readMeta(sql)) return { entries: [], holdsUnsettled: false, generation: 0 };
      // A page row is settled whole (its records are read when answered, below); no await before the write.
      this.ctx.storage.transactionSync(() => {
        const rows = unsettledPageRows(sql, request.before);
        for (const row of rows) markPageSettled(sql, row, request.batchDate, request.settledAt);
        for (const state of unsettledStates(sql, shard.merchantId, request.before)) {
          writeState(
            sql,
            { ...state, stored: { ...state.stored, record: settle(state.stored.record, request.batchDate, request.settledAt) }, unsettled: false, settledOn: request.batchDate },
            request.settledAt,
          );
        }
      });
      const entries: SettledEntry[] = [];
      const changed = new Set(statesSettledOn(sql, shard.merchantId, request.batchDate).map((state) => String(state.stored.record.id)));
      for (const row of pageRowsSettledOn(sql, request.batchDate)) {
        const packedRecords = await decodePage(row);
        const ids = packedRecords.map((packed) => String(unpackRecord(shard.merchantId, packed).record.id));
        // A transaction changed since (voided, or settled on its own) is counted from its state.
        const states = readStates(sql, shard.merchantId, ids);
        for (const packed of packedRecords) {
          const { record } = unpackRecord(shard.merchantId, packed);
          if (record.status !== 'pending_settlement' || states.has(String(record.id))) continue;
          entries.push(entryOf(record));
        }
      }
      for (const state of statesSettledOn(sql, shard.merchantId, request.batchDate)) {
        if (changed.has(String(state.stored.record.id)) && Number(state.stored.record.amount_settled) > 0 && state.stored.record.settlement_batch_id !== null) {
          entries.push(entryOf(state.stored.record));
        }
      }
      // Nothing left to settle: the shard counts itself out of the index (as of its generation) in
      // the same step, so money written later registers again under a newer generation.
      let holds = true;
      let generation = 0;
      this.ctx.storage.transactionSync(() => {
        holds = holdsUnsettled(sql);
        generation = readIndexing(sql).generation;
        if (!holds) writeIndexing(sql, false, generation);
      });
      return { entries, holdsUnsettled: holds, generation };
    });
  }

  /**
   * Claims every entry whose key holds neither a record nor an open claim, in one step (no await
   * between the check and the write); answers the keys claimed. The rest were taken by another attempt.
   */
  async claim(shard: ShardIdentity, requests: readonly ClaimRequest[], createdAt: string): Promise<string[] | ShardFailure> {
    return answerOrFailure(() => this.#claim(shard, requests, createdAt));
  }

  async #claim(shard: ShardIdentity, requests: readonly ClaimRequest[], createdAt: string): Promise<string[]> {
    await this.#ensure(shard);
    const claims = this.#open(shard.merchantId);
    const sql = this.ctx.storage.sql;
    const made: { claimId: number; page: string; free: StoredTransaction[] }[] = [];
    // Memory follows SQLite only once the transaction has committed: a failed write claims nothing.
    this.ctx.storage.transactionSync(() => {
      const seen = new Set<string>();
      for (const { page, entries } of requests) {
        const recorded = recordedKeys(sql, page);
        const free = entries.filter((stored) => {
          const key = keyOf(stored);
          if (claims.has(key) || recorded.has(key) || seen.has(key)) return false;
          seen.add(key);
          return true;
        });
        if (free.length > 0) made.push({ claimId: insertClaim(sql, page, createdAt, free), page, free });
      }
    });
    const claimed: string[] = [];
    for (const { claimId, page, free } of made) {
      this.#claimRows.set(claimId, { page, createdAt, keys: new Set(free.map(keyOf)) });
      for (const stored of free) {
        claims.set(keyOf(stored), { claimId, stored });
        claimed.push(keyOf(stored));
      }
    }
    return claimed;
  }

  /**
   * Writes the records of claims still open (their page: gzip for a batch chunk, plain JSON for an API
   * transaction) and closes those claims; answers the keys written.
   */
  async complete(shard: ShardIdentity, answers: readonly ClaimAnswer[]): Promise<string[] | ShardFailure> {
    return answerOrFailure(() => this.#complete(shard, answers));
  }

  async #complete(shard: ShardIdentity, answers: readonly ClaimAnswer[]): Promise<string[]> {
    // Once the shard has dropped its hashes, a late record keeps none either.
    const keepHashes = readMeta(this.ctx.storage.sql)?.hashesClearAt != null;
    if (answers.some(({ answer }) => answer.status === 'pending_settlement')) {
      // The claims' time is the engine's clock (tests inject theirs): the alarm is armed from it.
      const claimedAt = answers.map(({ key }) => this.#claims?.get(key)?.stored.record.created_at).find((at) => typeof at === 'string');
      await this.#indexed(shard, typeof claimedAt === 'string' ? claimedAt : new Date().toISOString());
    }
    for (;;) {
      // Each answer completes its claim's own record (the call carries only the answer's columns).
      const claims = this.#open(shard.merchantId);
      const records = answers.flatMap(({ key, answer }) => {
        const claim = claims.get(key);
        if (!claim) return [];
        const record = answered(claim.stored, answer);
        return [keepHashes ? record : { ...record, requestHash: '' }];
      });
      const byClaim = this.#byClaim(shard, records);
      const encoded = await Promise.all(
        [...byClaim].map(async ([claimId, list]) => {
          const row = this.#claimRows.get(claimId);
          const pieces = pagePieces(list);
          const compress = shard.name.includes('/batch/');
          const rows = await Promise.all(
            pieces.map(async (piece) => ({
              keys: piece.keys,
              format: compress ? ('gzip' as const) : ('json' as const),
              records: compress ? await gzipText(piece.json) : piece.json,
              // A claim's records share their time; money waiting for settlement marks the row for the next run.
              at: list[0] ? String(list[0].record.created_at) : null,
              unsettled: list.some((stored) => stored.record.status === 'pending_settlement'),
            })),
          );
          return { claimId, list, page: row?.page ?? null, rows };
        }),
      );
      // Compressing awaited: another call may have closed some of these claims meanwhile. Write only
      // if none changed, in one step; otherwise encode again what is still open.
      const unchanged = encoded.every(({ claimId, list }) => list.every((stored) => this.#claims?.get(keyOf(stored))?.claimId === claimId));
      if (!unchanged) continue;
      // receipts (issue 32): the receipts these records ask for, one outbox row per page, queued with them below.
      const receipts = encoded.map(({ page, list }) => ({ page, entries: receiptsForRecords(list) }));
      this.ctx.storage.transactionSync(() => {
        for (const { claimId, list, page, rows } of encoded) {
          if (page !== null) insertPageRows(this.ctx.storage.sql, page, rows);
          this.#writeClose(claimId, list.map(keyOf));
        }
        queueReceipts(this.ctx.storage.sql, receipts); // receipts (issue 32)
      });
      const armed = armReceipts(this.ctx.storage, receipts); // receipts (issue 32)
      const done = this.#forget(byClaim);
      await armed;
      return done;
    }
  }

  /** Drops open claims whose charge never reached the processor (their keys are free again); answers the keys released. */
  async release(shard: ShardIdentity, keys: readonly string[]): Promise<string[] | ShardFailure> {
    return answerOrFailure(() => this.#release(shard, keys));
  }

  async #release(shard: ShardIdentity, keys: readonly string[]): Promise<string[]> {
    const claims = this.#open(shard.merchantId);
    const byClaim = this.#byClaim(shard, keys.flatMap((key) => claims.get(key)?.stored ?? []));
    this.ctx.storage.transactionSync(() => {
      for (const [claimId, list] of byClaim) this.#writeClose(claimId, list.map(keyOf));
    });
    return this.#forget(byClaim);
  }

  /** Every open claim (a failed batch's partial download settles them first). */
  async openClaims(shard: ShardIdentity): Promise<StoredTransaction[]> {
    return [...this.#open(shard.merchantId).values()].map((claim) => claim.stored);
  }

  /** The given transactions whose keys are open claims, grouped by claim. */
  #byClaim(shard: ShardIdentity, items: readonly StoredTransaction[]): Map<number, StoredTransaction[]> {
    const claims = this.#open(shard.merchantId);
    const byClaim = new Map<number, StoredTransaction[]>();
    for (const stored of items) {
      const claim = claims.get(keyOf(stored));
      if (!claim) continue;
      byClaim.set(claim.claimId, [...(byClaim.get(claim.claimId) ?? []), stored]);
    }
    return byClaim;
  }

  /** Rewrites a claim's row with the entries that stay open once `keys` leave it, or deletes it. */
  #writeClose(claimId: number, keys: readonly string[]): void {
    const row = this.#claimRows.get(claimId);
    if (!row || !this.#claims) return;
    const leaving = new Set(keys);
    const remaining = [...row.keys].filter((key) => !leaving.has(key)).flatMap((key) => this.#claims?.get(key)?.stored ?? []);
    updateClaim(this.ctx.storage.sql, claimId, remaining);
  }

  /** After a committed close: the keys leave the claims in memory; answers them. */
  #forget(byClaim: Map<number, StoredTransaction[]>): string[] {
    const done: string[] = [];
    for (const [claimId, list] of byClaim) {
      const row = this.#claimRows.get(claimId);
      for (const stored of list) {
        row?.keys.delete(keyOf(stored));
        this.#claims?.delete(keyOf(stored));
        done.push(keyOf(stored));
      }
      if (row && row.keys.size === 0) this.#claimRows.delete(claimId);
    }
    return done;
  }

  /**
   * The shard's retention at `now` (the alarm passes the real time; tests their own clock): request
   * hashes dropped once their window is over, then, past TRANSACTION_RETENTION_DAYS, every record
   * written to R2 and the object emptied. Safe to repeat; answers what it did.
   */
  async runRetention(now: string): Promise<RetentionOutcome> {
    const meta = readMeta(this.ctx.storage.sql);
    const outcome: RetentionOutcome = { archived: false, key: null, lines: 0, hashesCleared: 0 };
    if (!meta) return outcome;
    if (meta.hashesClearAt !== null && meta.hashesClearAt <= now) {
      this.ctx.storage.transactionSync(() => {
        outcome.hashesCleared = clearPageHashes(this.ctx.storage.sql);
        markHashesCleared(this.ctx.storage.sql);
      });
    }
    if (meta.archiveAt > now) {
      await this.ctx.storage.setAlarm(Date.parse(meta.archiveAt));
      return outcome;
    }
    const merchantId = meta.name.split('/')[0] ?? '';
    const key = ledgerArchiveKey(meta.name);
    let after: { page: string; seq: number } | null = null;
    let claimsSent = false;
    let statesSent = false;
    const sql = this.ctx.storage.sql;
    outcome.lines = await writeArchive(this.env.FILES, key, async () => {
      if (!claimsSent) {
        claimsSent = true;
        // A claim never answered in 18 months is archived as it stands (status `processing`).
        return listClaims(sql, merchantId).flatMap((claim) =>
          claim.entries.map((stored) => archiveLine(merchantId, packRecord(stored))),
        );
      }
      const rows = pageBatch(sql, after, ARCHIVE_PAGES_PER_READ);
      const last = rows.at(-1);
      if (!last) {
        if (statesSent) return null;
        statesSent = true;
        // Transactions changed since processed, and refunds: their current records, after the pages (a later line wins).
        return allStates(sql, merchantId).map((state) => archiveLine(merchantId, packRecord(state.stored)));
      }
      after = { page: last.page, seq: last.seq };
      const lines: string[] = [];
      for (const row of rows) for (const packed of await decodePage(row)) lines.push(archiveLine(merchantId, packed));
      return lines;
    });
    await this.ctx.storage.deleteAll();
    this.#claims = null;
    this.#claimRows.clear();
    console.log(JSON.stringify({ level: 'info', event: 'ledger_archived', shard: meta.name, archive: key, records: outcome.lines }));
    return { ...outcome, archived: true, key };
  }

  override async alarm(): Promise<void> {
    // receipts (issue 32): the receipts due go first; then the alarm is set for whatever comes next.
    const receipts = await this.runReceipts();
    await this.runRetention(new Date().toISOString());
    await rearmShardAlarm(this.ctx.storage, receipts.nextRunAt); // receipts (issue 32)
  }

  // == receipts (issue 32): the outbox's RPC (services/receipts/shard.ts, outbox.ts) ==========

  /** Sends the receipts due (at `now`: tests pass their own time; the alarm the real one). */
  async runReceipts(now?: string): Promise<OutboxRun> {
    this.#upgrade();
    return runReceiptOutbox(this.ctx.storage, receiptSenderDeps(this.env, now === undefined ? systemClock : () => new Date(now)));
  }

  /** The receipts of transactions `ids` (their pages as a find names them). */
  async receiptStates(_shard: ShardIdentity, ids: readonly string[], pages: { exact: readonly string[]; floor: readonly string[] }): Promise<ReceiptState[]> {
    this.#upgrade();
    return receiptStatesIn(this.ctx.storage.sql, ids, pages);
  }

  /** The shard's receipts by state (a batch shard: its batch's). */
  async receiptCounts(_shard: ShardIdentity): Promise<{ queued: number; sent: number; failed: number }> {
    this.#upgrade();
    return receiptCountsIn(this.ctx.storage.sql);
  }

  /** Queues a receipt sent on request, and arms the alarm with it. */
  async queueResend(_shard: ShardIdentity, entry: ReceiptEntry, pages: { exact: readonly string[]; floor: readonly string[] }): Promise<ResendOutcome> {
    this.#upgrade();
    const outcome = queueResendIn(this.ctx.storage.sql, entry, pages);
    if (outcome.outcome === 'queued') await armReceipts(this.ctx.storage, [{ page: null, entries: [entry] }]);
    return outcome;
  }
}

function pageSettlement(row: PageRow): { settledOn: string | null; settledAt: string | null } {
  return { settledOn: row.settled_on ?? null, settledAt: row.settled_at ?? null };
}

/** A state row's record as it is now (an authorization may have expired since it was written). */
function currentOf(state: StateRow, expiredBefore: string): StoredTransaction {
  return { ...state.stored, record: presentRecord(state.stored.record, null, expiredBefore), amountRefunded: state.amountRefunded };
}

/** A refund's id: the original's (so it names the same shard) and its number among the original's refunds. */
export function refundTransactionId(originalId: string, n: number): string {
  return `txn_r${originalId.slice(4)}x${n}`;
}

function view(record: TransactionRecord | null, amountRefunded: number): Record<string, unknown> {
  return { ...record, amount_refunded: amountRefunded };
}

function entryOf(record: TransactionRecord): SettledEntry {
  return { id: String(record.id), type: String(record.type), processor_id: String(record.processor_id), amount: Number(record.amount_settled || record.amount_captured) };
}

/** A page row's records, decompressed if need be. */
async function decodePage(row: PageRow): Promise<PackedRecord[]> {
  const text = row.format === 'gzip' ? await gunzipText(row.records as ArrayBuffer) : String(row.records);
  return JSON.parse(text) as PackedRecord[];
}
