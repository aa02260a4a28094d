/**
 * A ledger shard's open claims (docs/transactions.md, "Claim before charge"): the keys an attempt
 * has taken before asking its processors. The object is single-threaded, and that is what makes a
 * claim atomic: `claim` checks and takes a chunk's keys in one synchronous step, so two deliveries of
 * a chunk (or two API requests with one key) can never both hold a key. Claims are kept in memory
 * too (they are few and short-lived) and rebuilt from SQLite when the object starts.
 */
import { gzipText } from '../../lib/gzip';
import {
  answered,
  insertClaims,
  insertPageRows,
  listClaims,
  pagePieces,
  readMeta,
  recordedKeys,
  updateClaim,
  type ClaimAnswer,
  type ClaimRequest,
  type ShardIdentity,
  type StoredTransaction,
} from '../../storage/ledger-shard';
import { keyOf, type ShardContext } from './reading';
// The receipt outbox's hooks live in services/receipts, so this file holds one call each.
import { receiptsForRecords } from '../../services/receipts/facts';
import { armReceipts, queueReceipts } from '../../services/receipts/shard';

interface OpenClaim {
  claimId: number;
  stored: StoredTransaction;
}

export class OpenClaims {
  readonly #shard: ShardContext;
  /** Open claims by idempotency key, loaded from SQLite on first use. */
  #claims: Map<string, OpenClaim> | null = null;
  #claimRows = new Map<number, { page: string; createdAt: string; keys: Set<string> }>();

  constructor(shard: ShardContext) {
    this.#shard = shard;
  }

  #open(merchantId: string): Map<string, OpenClaim> {
    if (this.#claims) return this.#claims;
    const claims = new Map<string, OpenClaim>();
    for (const row of listClaims(this.#shard.sql, merchantId)) {
      this.#claimRows.set(row.id, { page: row.page, createdAt: row.createdAt, keys: new Set(row.entries.map(keyOf)) });
      for (const stored of row.entries) claims.set(keyOf(stored), { claimId: row.id, stored });
    }
    this.#claims = claims;
    return claims;
  }

  /** The open claim under `key`, if any. */
  get(merchantId: string, key: string): StoredTransaction | undefined {
    return this.#open(merchantId).get(key)?.stored;
  }

  /** Every open claim (a failed batch's partial download settles them first). */
  list(merchantId: string): StoredTransaction[] {
    return [...this.#open(merchantId).values()].map((claim) => claim.stored);
  }

  /** Forgets what memory holds (the shard was emptied). */
  reset(): void {
    this.#claims = null;
    this.#claimRows.clear();
  }

  /**
   * Claims every entry whose key holds neither a record nor an open claim, in one step (no await
   * between the check and the write); answers the keys claimed. The rest were taken by another attempt.
   */
  claim(shard: ShardIdentity, requests: readonly ClaimRequest[], createdAt: string): string[] {
    const claims = this.#open(shard.merchantId);
    const sql = this.#shard.sql;
    const made: { claimId: number; page: string; free: StoredTransaction[] }[] = [];
    // A claim's records may need several rows (claims.ts): each row is a claim of its own.
    // Memory follows SQLite only once the transaction has committed: a failed write claims nothing.
    this.#shard.storage.transactionSync(() => {
      const seen = new Set<string>();
      for (const { page, entries } of requests) {
        const recorded = recordedKeys(sql, page);
        const free = entries.filter((stored) => {
          const key = keyOf(stored);
          if (claims.has(key) || recorded.has(key) || seen.has(key)) return false;
          seen.add(key);
          return true;
        });
        if (free.length > 0) for (const row of insertClaims(sql, page, createdAt, free)) made.push({ claimId: row.id, page, free: row.entries });
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
   * transaction) and closes those claims; answers the keys written. `indexed` makes sure the
   * settlement index lists the shard before money awaiting settlement is written.
   */
  async complete(shard: ShardIdentity, answers: readonly ClaimAnswer[], indexed: (now: string) => Promise<void>): Promise<string[]> {
    // Once the shard has dropped its hashes, a late record keeps none either.
    const keepHashes = readMeta(this.#shard.sql)?.hashesClearAt != null;
    if (answers.some(({ answer }) => answer.status === 'pending_settlement')) {
      // The claims' time is the engine's clock (tests inject theirs): the alarm is armed from it.
      const claimedAt = answers.map(({ key }) => this.#claims?.get(key)?.stored.record.created_at).find((at) => typeof at === 'string');
      await indexed(typeof claimedAt === 'string' ? claimedAt : new Date().toISOString());
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
      // The receipts these records ask for, one outbox row per claim row, queued in the same write below.
      const receipts = encoded.map(({ page, list }) => ({ page, entries: receiptsForRecords(list) }));
      this.#shard.storage.transactionSync(() => {
        for (const { claimId, list, page, rows } of encoded) {
          if (page !== null) insertPageRows(this.#shard.sql, page, rows);
          this.#writeClose(claimId, list.map(keyOf));
        }
        queueReceipts(this.#shard.sql, receipts);
      });
      const armed = armReceipts(this.#shard.storage, receipts);
      const done = this.#forget(byClaim);
      await armed;
      return done;
    }
  }

  /** Drops open claims whose charge never reached the processor (their keys are free again); answers the keys released. */
  release(shard: ShardIdentity, keys: readonly string[]): string[] {
    const claims = this.#open(shard.merchantId);
    const byClaim = this.#byClaim(shard, keys.flatMap((key) => claims.get(key)?.stored ?? []));
    this.#shard.storage.transactionSync(() => {
      for (const [claimId, list] of byClaim) this.#writeClose(claimId, list.map(keyOf));
    });
    return this.#forget(byClaim);
  }

  /** The given transactions whose keys are open claims, grouped by claim. */
  #byClaim(shard: ShardIdentity, items: readonly StoredTransaction[]): Map<number, StoredTransaction[]> {
    const claims = this.#open(shard.merchantId);
    const byClaim = new Map<number, StoredTransaction[]>();
    for (const stored of items) {
      const claim = claims.get(keyOf(stored));
      if (!claim) continue;
      const list = byClaim.get(claim.claimId);
      if (list) list.push(stored);
      else byClaim.set(claim.claimId, [stored]);
    }
    return byClaim;
  }

  /** Rewrites a claim's row with the entries that stay open once `keys` leave it, or deletes it. */
  #writeClose(claimId: number, keys: readonly string[]): void {
    const row = this.#claimRows.get(claimId);
    if (!row || !this.#claims) return;
    const leaving = new Set(keys);
    const remaining = [...row.keys].filter((key) => !leaving.has(key)).flatMap((key) => this.#claims?.get(key)?.stored ?? []);
    updateClaim(this.#shard.sql, claimId, remaining);
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
}
