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
} from '../storage/ledger-shard';

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
    if (readMeta(this.ctx.storage.sql)) return;
    const meta = initialiseShard(this.ctx.storage.sql, shard);
    await this.ctx.storage.setAlarm(Date.parse(meta.hashesClearAt ?? meta.archiveAt));
  }

  /** The records and open claims under `query.keys` (claims have record status `processing`). */
  async find(shard: ShardIdentity, query: ShardQuery): Promise<StoredTransaction[]> {
    const claims = this.#open(shard.merchantId);
    const wanted = new Set(query.keys ?? []);
    const ids = new Set(query.ids ?? []);
    const found = new Map<string, StoredTransaction>();
    for (const row of readPageRows(this.ctx.storage.sql, query)) {
      for (const packed of await decodePage(row)) {
        const stored = unpackRecord(shard.merchantId, packed);
        if (wanted.has(keyOf(stored)) || ids.has(String(stored.record.id))) found.set(keyOf(stored), stored);
      }
    }
    for (const key of wanted) {
      const claim = claims.get(key);
      if (claim && !found.has(key)) found.set(key, claim.stored);
    }
    return [...found.values()];
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
            pieces.map(async (piece) => ({ keys: piece.keys, format: compress ? ('gzip' as const) : ('json' as const), records: compress ? await gzipText(piece.json) : piece.json })),
          );
          return { claimId, list, page: row?.page ?? null, rows };
        }),
      );
      // Compressing awaited: another call may have closed some of these claims meanwhile. Write only
      // if none changed, in one step; otherwise encode again what is still open.
      const unchanged = encoded.every(({ claimId, list }) => list.every((stored) => this.#claims?.get(keyOf(stored))?.claimId === claimId));
      if (!unchanged) continue;
      this.ctx.storage.transactionSync(() => {
        for (const { claimId, list, page, rows } of encoded) {
          if (page !== null) insertPageRows(this.ctx.storage.sql, page, rows);
          this.#writeClose(claimId, list.map(keyOf));
        }
      });
      return this.#forget(byClaim);
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
      if (!last) return null;
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
    await this.runRetention(new Date().toISOString());
  }
}

/** A page row's records, decompressed if need be. */
async function decodePage(row: PageRow): Promise<PackedRecord[]> {
  const text = row.format === 'gzip' ? await gunzipText(row.records as ArrayBuffer) : String(row.records);
  return JSON.parse(text) as PackedRecord[];
}
