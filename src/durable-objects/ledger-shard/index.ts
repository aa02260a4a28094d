/**
 * A ledger shard: one merchant's transactions for one period, in the object's own SQLite
 * (`env.LEDGER_SHARD.getByName(ledgerShardName(...))`, services/transactions/ledger.ts). Two kinds:
 * a batch's rows (one shard per batch file, so at most BATCH_MAX_ROWS records) and a merchant's
 * API transactions of one UTC day. Nothing here grows with the number of merchants or with time.
 *
 * This class is the object's RPC surface; each concern lives beside it: open claims
 * (`open-claims.ts`), captures, voids and refunds (`operations.ts`), settlement (`settlement.ts`),
 * retention (`retention.ts`), and reading records (`reading.ts`).
 *
 * Writes: a chunk costs one claim row, one page row and the claim's delete, whatever its size; an
 * API transaction a claim, its page and the delete. Retention is the object's own alarm: an API
 * shard drops its request hashes once the idempotency window of its last transaction is over, and
 * every shard is archived to R2 and emptied (`deleteAll`) TRANSACTION_RETENTION_DAYS after its
 * period began.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import {
  initialiseShard,
  readMeta,
  upgradeShardTables,
  type ClaimAnswer,
  type ClaimRequest,
  type OperationBegin,
  type OperationCompleted,
  type OperationCompletion,
  type OperationRequest,
  type PieceSlice,
  readSettledSlices,
  type SettledEntry,
  type RetentionOutcome,
  type SettleAnswer,
  type SettleRequest,
  type ShardFailure,
  type ShardIdentity,
  type ShardQuery,
  type StoredTransaction,
} from '../../storage/ledger-shard';
import { OpenClaims } from './open-claims';
import { beginOperation, beginOperations, completeOperation, completeOperations, releaseOperation } from './operations';
import { DecodedPages } from './decoded-pages';
import { findRecords, type ShardContext } from './reading';
import { runRetention, type RetentionBudget } from './retention';
import { ensureIndexed, settleShard } from './settlement';
// The receipt outbox's RPC answers live in services/receipts, so the shard's files hold one call each.
import { receiptSenderDeps, runReceiptOutbox, type OutboxRun } from '../../services/receipts/outbox';
import { armReceipts, queueResendIn, rearmShardAlarm, receiptCountsIn, receiptStatesIn, retentionWaits, type ReceiptState, type ResendOutcome } from '../../services/receipts/shard';
import type { ReceiptEntry } from '../../storage/receipt-outbox';
import { systemClock } from '../../lib/time';
import { rearmAfterFailure } from '../../lib/alarm-guard';
import { armNoLaterThan, claimSweepAt, isApiShard, sweepClaimsStep, type ClaimSweep } from './claim-sweep';

export { refundTransactionId } from './operations';

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

export class LedgerShard extends DurableObject<Env> {
  // Page rows decoded by one call kept for the next (decoded-pages.ts): a chunk's claims, then its answers.
  readonly #shard: ShardContext = { storage: this.ctx.storage, sql: this.ctx.storage.sql, pages: new DecodedPages() };
  readonly #claims = new OpenClaims(this.#shard);

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

  #indexed(shard: ShardIdentity): (now: string) => Promise<void> {
    return (now) => ensureIndexed(this.#shard, this.env, shard, now);
  }

  /**
   * The records and open claims under `query.keys` (claims have record status `processing`), and the
   * records with `query.ids`; as processed, or with `query.current` as they are now.
   */
  async find(shard: ShardIdentity, query: ShardQuery): Promise<StoredTransaction[]> {
    this.#upgrade();
    return findRecords(this.ctx.storage.sql, shard, query, (key) => this.#claims.get(shard.merchantId, key));
  }

  /** Claims a capture, void or refund of one transaction (operations.ts); a shard never written answers not found and stays empty. */
  async beginOperation(shard: ShardIdentity, request: OperationRequest): Promise<OperationBegin | ShardFailure> {
    return answerOrFailure(() => beginOperation(this.#shard, shard, request));
  }

  /** Applies a claimed operation's processor answer (operations.ts). */
  async completeOperation(shard: ShardIdentity, completion: OperationCompletion): Promise<OperationCompleted | ShardFailure> {
    return answerOrFailure(() => completeOperation(this.#shard, shard, completion, this.#indexed(shard)));
  }

  /**
   * Many operations' claims, each exactly as `beginOperation` (one after another: each sees the
   * claims before it), in one write; answers in order. At most a chunk's rows (500): a few KB each way.
   */
  async beginOperations(shard: ShardIdentity, requests: readonly OperationRequest[]): Promise<OperationBegin[] | ShardFailure> {
    return answerOrFailure(() => beginOperations(this.#shard, shard, requests));
  }

  /** Many claimed operations' answers, each exactly as `completeOperation`, in one write; in order. */
  async completeOperations(shard: ShardIdentity, completions: readonly OperationCompletion[]): Promise<OperationCompleted[] | ShardFailure> {
    return answerOrFailure(() => completeOperations(this.#shard, shard, completions, this.#indexed(shard)));
  }

  /** Drops a claimed operation its processor never received (the key may be sent again). */
  async releaseOperation(shard: ShardIdentity, key: string): Promise<true | ShardFailure> {
    return answerOrFailure(async () => releaseOperation(this.#shard, key));
  }

  /** Settles the shard's money captured before `request.before` (settlement.ts). */
  async settle(shard: ShardIdentity, request: SettleRequest): Promise<SettleAnswer | ShardFailure> {
    return answerOrFailure(() => settleShard(this.#shard, shard, request));
  }

  /**
   * Slices of the pieces this shard handed to settlement: a settlement batch's transactions are read
   * here (the settlement object keeps each piece's totals only). A shard never written answers empty
   * lists and stays empty.
   */
  async settledSlices(slices: readonly PieceSlice[]): Promise<SettledEntry[][]> {
    this.#upgrade();
    if (!readMeta(this.ctx.storage.sql)) return slices.map(() => []);
    return readSettledSlices(this.ctx.storage.sql, slices);
  }

  /**
   * Claims every entry whose key holds neither a record nor an open claim, in one step (no await
   * between the check and the write); answers the keys claimed. The rest were taken by another attempt.
   */
  async claim(shard: ShardIdentity, requests: readonly ClaimRequest[], createdAt: string): Promise<string[] | ShardFailure> {
    return answerOrFailure(async () => {
      await this.#ensure(shard);
      const claimed = this.#claims.claim(shard, requests, createdAt);
      // An API claim left open by a crash is swept by the alarm (claim-sweep.ts).
      // The alarm is already due no later than any older claim's sweep, so this call's own time is enough.
      if (claimed.length > 0 && isApiShard(shard.name)) await armNoLaterThan(this.ctx.storage, claimSweepAt(createdAt));
      return claimed;
    });
  }

  /**
   * Writes the records of claims still open (their page: gzip for a batch chunk, plain JSON for an API
   * transaction) and closes those claims; answers the keys written.
   */
  async complete(shard: ShardIdentity, answers: readonly ClaimAnswer[]): Promise<string[] | ShardFailure> {
    return answerOrFailure(() => this.#claims.complete(shard, answers, this.#indexed(shard)));
  }

  /** Drops open claims whose charge never reached the processor (their keys are free again); answers the keys released. */
  async release(shard: ShardIdentity, keys: readonly string[]): Promise<string[] | ShardFailure> {
    return answerOrFailure(async () => this.#claims.release(shard, keys));
  }

  /** Every open claim (a failed batch's partial download settles them first). */
  async openClaims(shard: ShardIdentity): Promise<StoredTransaction[]> {
    return this.#claims.list(shard.merchantId);
  }

  /** One step of the shard's retention at `now` (retention.ts): hashes dropped, then archived and emptied. */
  async runRetention(now: string, budget?: RetentionBudget): Promise<RetentionOutcome> {
    return runRetention(this.#shard, this.env.FILES, now, () => this.#claims.reset(), budget);
  }

  override async alarm(): Promise<void> {
    // A failing step (R2 down at archive time) is tried again a minute later, never dropped: a shard
    // never archived would keep its transactions and request hashes past retention.
    await rearmAfterFailure(this.ctx.storage, 'ledger_shard_alarm_failed', async () => {
      // The receipts due go first (a customer waits for them); then the alarm is set for whatever comes next.
      const receipts = await this.runReceipts();
      // A run that sent leaves due retention to the next alarm, at once: sends count in the Email binding's 50 subrequests.
      if (retentionWaits(this.ctx.storage.sql, receipts, Date.now())) return this.ctx.storage.setAlarm(Date.now());
      const retention = await this.runRetention(new Date().toISOString());
      // An archived shard is empty (no alarm); one with retention steps left keeps the alarm they set.
      if (!retention.archived && !retention.more) await rearmShardAlarm(this.ctx.storage, receipts.nextRunAt);
      if (!retention.archived) await this.sweepClaims(new Date().toISOString());
    });
  }

  /**
   * One step of the sweep of API claims abandoned by a crash between the charge and its record
   * (claim-sweep.ts) at `now` (tests pass their own); it arms the alarm for what is left.
   */
  async sweepClaims(now: string): Promise<ClaimSweep> {
    // One step at a time in this object: a step awaits the processor and the queues, and two at once
    // (the alarm's and a direct call's) would both announce the follow-ups an earlier step noted.
    const step = this.#sweeping.then(() => this.#sweepStep(now));
    this.#sweeping = step.catch(() => undefined);
    return step;
  }

  #sweeping: Promise<unknown> = Promise.resolve();

  async #sweepStep(now: string): Promise<ClaimSweep> {
    this.#upgrade();
    const meta = readMeta(this.ctx.storage.sql);
    if (!meta || !isApiShard(meta.name)) return { completed: 0, released: 0, open: 0, more: false };
    const identity = { ...meta, merchantId: meta.name.split('/')[0] ?? '' };
    return sweepClaimsStep(this.env, this.#shard, identity, (key) => this.#claims.get(identity.merchantId, key), new Date(now));
  }

  // == the receipt outbox's RPC (services/receipts/shard.ts, outbox.ts) ==========

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
  async queueResend(_shard: ShardIdentity, entry: ReceiptEntry, pages: { exact: readonly string[]; floor: readonly string[] }, refusal: string | null = null): Promise<ResendOutcome> {
    this.#upgrade();
    const outcome = queueResendIn(this.ctx.storage.sql, entry, pages, refusal);
    if (outcome.outcome === 'queued') await armReceipts(this.ctx.storage, [{ page: null, entries: [entry] }]);
    return outcome;
  }
}
