/**
 * Where a transaction lives (docs/architecture.md, "Capacity"). The ledger is sharded across
 * LedgerShard Durable Objects, never one store for every merchant:
 *
 *   {merchant id}/batch/{batch id}   the rows of one batch file (at most BATCH_MAX_ROWS), one page per chunk
 *   {merchant id}/api/{YYYY-MM-DD}   the merchant's POST /api/transaction requests of one UTC day
 *   {merchant id}/api/{YYYY-MM-DD}/{k}  ... in sub-shard k (1 to 7) of a day spread over several (api-shards.ts)
 *
 * A transaction id names its shard, so GET /api/transaction/{id} needs no global index:
 *
 *   txn_b{YYYYMMDD}{batch id without "bat_"}{line}   a batch row: the UTC day the batch was
 *                                                    uploaded, the batch (20 base32 characters), the line
 *   txn_a{YYYYMMDD}{20 base32 characters}            an API transaction: SHA-256 of (merchant, key),
 *                                                    so the same key on the same day names the same id
 *   txn_a{YYYYMMDD}{20 base32 characters}s{k}        the same, in sub-shard k of its day (1 to 7)
 *
 * The day in both lets an id past retention be answered "archived" without any lookup.
 *
 * The 24-hour idempotency window of an API key spans at most two day shards: a key is looked up in
 * today's and yesterday's, and claimed in today's. Near midnight a claim is checked once more against
 * the neighbouring day, so two requests on either side of midnight cannot both be charged.
 */
import type { Env } from '../../env';
import { isoTimestamp } from '../../lib/time';
import type { TransactionContext } from '../../schemas/transaction-columns';
import { answerOf, CLAIMED_STATUS, MAX_OPERATIONS_PER_TRANSACTION, type ShardFailure, type ShardIdentity, type StoredTransaction } from '../../storage/ledger-shard';
import { IDEMPOTENCY_WINDOW_MS } from './idempotency';
import { shardsOn, subShardOf, type ApiShardSchedule } from './api-shards';

const DAY_MS = 86_400_000;
const ID_ALPHABET = '0123456789abcdefghijklmnopqrstuv';
const BATCH_ID = /^bat_([0-9a-v]{20})$/;
const BATCH_TRANSACTION_ID = /^txn_b([0-9]{8})([0-9a-v]{20})([1-9][0-9]{0,8})$/;
const API_TRANSACTION_ID = /^txn_a([0-9]{8})([0-9a-v]{20})(?:s([1-7]))?$/;
/**
 * A refund: its original's id without `txn_` (an API sub-shard's `s{k}` included: `s` is a base32
 * digit here), then `x` and its number among the original's refunds,
 * 1 to MAX_OPERATIONS_PER_TRANSACTION (every refund the shard can number parses; checked below).
 */
const REFUND_TRANSACTION_ID = /^txn_r([ab][0-9a-v]+)x([1-9][0-9]{0,4})$/;
if (MAX_OPERATIONS_PER_TRANSACTION > 99_999) throw new Error('a refund number could pass the digits its id parses');

/** A claim made this close to midnight is checked against the neighbouring day's shard as well. */
export const BOUNDARY_RECHECK_MS = 5 * 60_000;

/** An API shard's `sub` is its sub-shard of the day (api-shards.ts); 0 or absent: the day's first, named as before sub-shards. */
export type ShardKey = { kind: 'batch'; merchantId: string; batchId: string } | { kind: 'api'; merchantId: string; day: string; sub?: number };

/** The one place a shard's name is made: the shard key is (merchant, batch) or (merchant, UTC day, sub-shard). */
export function ledgerShardName(key: ShardKey): string {
  if (key.kind === 'batch') return `${key.merchantId}/batch/${key.batchId}`;
  return key.sub ? `${key.merchantId}/api/${key.day}/${key.sub}` : `${key.merchantId}/api/${key.day}`;
}

/** Days a shard keeps its transactions (TRANSACTION_RETENTION_DAYS, default 548). */
export function retentionDays(env: Env): number {
  const days = Number(env.TRANSACTION_RETENTION_DAYS);
  return Number.isFinite(days) && days > 0 ? days : 548;
}

export function utcDay(date: Date): string {
  return isoTimestamp(date).slice(0, 10);
}

function addDays(day: string, days: number): string {
  return utcDay(new Date(Date.parse(`${day}T00:00:00.000Z`) + days * DAY_MS));
}

/** A batch row's page: its chunk's first line, padded so that text order is line order. */
export function chunkPage(firstLine: number): string {
  return String(firstLine).padStart(10, '0');
}

export function batchTransactionId(batchId: string, batchCreatedAt: string, line: number): string {
  const core = BATCH_ID.exec(batchId)?.[1];
  if (!core) throw new Error('batch id has an unexpected form');
  return `txn_b${compactDay(batchCreatedAt.slice(0, 10))}${core}${line}`;
}

function compactDay(day: string): string {
  return day.replaceAll('-', '');
}

/**
 * The days an id can name at all (docs/transactions.md, "Transaction ids"), checked when it is
 * parsed, before any object is touched. The first: ids of this form were first issued in 2026 (the
 * service's first release), so an earlier day names nothing. The last: a shard's alarms run to its
 * archive, TRANSACTION_RETENTION_DAYS after its day, and workerd keeps time as nanoseconds in 64
 * bits, which end on 2262-04-11; an id dated after 2199 could only make a shard whose alarm cannot
 * be set. The clock's own bound (ISSUED_DAYS_AHEAD) is the caller's (engine.ts).
 */
export const FIRST_ID_DAY = '2026-01-01';
export const LAST_ID_DAY = '2199-12-31';

/**
 * Days already checked, by their `YYYYMMDD`: a batch chunk's rows name a few days, parsed 3 times a
 * row (placing, search, upload checks), and the check allocates dates. At most DASHED_DAYS_KEPT
 * entries (emptied when full), a few KB of the isolate's 128 MB.
 */
const dashedDays = new Map<string, string | null>();
const DASHED_DAYS_KEPT = 512;

/** `YYYYMMDD` as `YYYY-MM-DD`, if it is a real calendar day (not 20270231) between the bounds above. */
function dashedDay(compact: string): string | null {
  const known = dashedDays.get(compact);
  if (known !== undefined) return known;
  if (dashedDays.size >= DASHED_DAYS_KEPT) dashedDays.clear();
  const checked = checkedDay(compact);
  dashedDays.set(compact, checked);
  return checked;
}

function checkedDay(compact: string): string | null {
  const day = `${compact.slice(0, 4)}-${compact.slice(4, 6)}-${compact.slice(6, 8)}`;
  if (day < FIRST_ID_DAY || day > LAST_ID_DAY) return null;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  // Date.parse takes 2027-02-31 as 2027-03-03: the day must read back as itself.
  return Number.isNaN(ms) || utcDay(new Date(ms)) !== day ? null : day;
}

/**
 * Days after `now` an id may name and still be looked up. Ids are dated by the clock that issued
 * them, so none names a later day than today; the margin is generous on purpose (clocks a little
 * ahead, and the engine run on a clock of its own, as tests and replays of a day do): it keeps a
 * made-up id of a far day from waking any object, not a near one (whose shard answers not found
 * and writes nothing).
 */
export const ISSUED_DAYS_AHEAD = 366;

/** The latest day an id looked up at `now` may name. */
export function lastIssuedDay(now: Date): string {
  return utcDay(new Date(now.getTime() + ISSUED_DAYS_AHEAD * DAY_MS));
}

/** The id of a key's API transaction on `day`, of a day with `shards` sub-shards (api-shards.ts). */
export async function apiTransactionId(merchantId: string, idempotencyKey: string, day: string, shards = 1): Promise<string> {
  return (await apiPlacement(merchantId, idempotencyKey, day, shards)).id;
}

/** A key's API transaction id on `day` and its sub-shard: both from one digest. */
export async function apiPlacement(merchantId: string, idempotencyKey: string, day: string, shards: number): Promise<{ id: string; sub: number }> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${merchantId}\n${idempotencyKey}`)));
  let hash = '';
  for (let i = 0; i < 20; i++) hash += ID_ALPHABET[(digest[i] ?? 0) & 31];
  const sub = subShardOf(digest[0] ?? 0, shards);
  return { id: `txn_a${compactDay(day)}${hash}${sub === 0 ? '' : `s${sub}`}`, sub };
}

type OriginalId = { kind: 'batch'; day: string; batchId: string; line: number } | { kind: 'api'; day: string; sub: number };
export type ParsedTransactionId = OriginalId | { kind: 'refund'; originalId: string; original: OriginalId };

/** Which shard an id names; null for an id of no known form. A refund's shard is its original's. */
export function parseTransactionId(id: string): ParsedTransactionId | null {
  const refund = REFUND_TRANSACTION_ID.exec(id);
  if (refund && Number(refund[2]) <= MAX_OPERATIONS_PER_TRANSACTION) {
    const originalId = `txn_${refund[1]}`;
    const original = parseOriginalId(originalId);
    return original ? { kind: 'refund', originalId, original } : null;
  }
  return parseOriginalId(id);
}

function parseOriginalId(id: string): OriginalId | null {
  const batch = BATCH_TRANSACTION_ID.exec(id);
  const batchDay = batch?.[1] ? dashedDay(batch[1]) : null;
  if (batch && batchDay) return { kind: 'batch', day: batchDay, batchId: `bat_${batch[2]}`, line: Number(batch[3]) };
  const api = API_TRANSACTION_ID.exec(id);
  const apiDay = api?.[1] ? dashedDay(api[1]) : null;
  return apiDay ? { kind: 'api', day: apiDay, sub: api?.[3] ? Number(api[3]) : 0 } : null;
}

/** Whether a shard whose period began at `periodStart` is past TRANSACTION_RETENTION_DAYS (archived, or about to be). */
export function archivedBy(env: Env, periodStart: string, now: Date): boolean {
  return Date.parse(periodStart) + retentionDays(env) * DAY_MS <= now.getTime();
}

/** A shard as the caller addresses it: its stub and the identity its calls carry. */
export interface Shard {
  identity: ShardIdentity;
  stub: ReturnType<Env['LEDGER_SHARD']['getByName']>;
}

export function shardFor(env: Env, key: ShardKey, periodStart: string): Shard {
  const name = ledgerShardName(key);
  const days = retentionDays(env);
  const start = Date.parse(periodStart);
  const identity: ShardIdentity = {
    name,
    merchantId: key.merchantId,
    periodStart,
    // An API shard's request hashes are needed until the window of its last transaction ends.
    hashesClearAt: key.kind === 'api' ? isoTimestamp(new Date(start + DAY_MS + IDEMPOTENCY_WINDOW_MS)) : null,
    archiveAt: isoTimestamp(new Date(start + days * DAY_MS)),
  };
  return { identity, stub: env.LEDGER_SHARD.getByName(name) };
}

function apiShard(env: Env, merchantId: string, day: string, sub: number): Shard {
  return shardFor(env, { kind: 'api', merchantId, day, sub }, `${day}T00:00:00.000Z`);
}

/** A shard's answer to a write, or its failure thrown here, in the caller (the chunk is retried, the API answers 500). */
function written(answer: string[] | ShardFailure): string[] {
  if (Array.isArray(answer)) return answer;
  throw new Error(`ledger shard write failed: ${answer.failed}`);
}

function keyOf(stored: StoredTransaction): string {
  return String(stored.record.idempotency_key);
}

/**
 * A merchant's ledger as one engine call sees it: the batch's shard for batch rows, the day shards
 * (each day's sub-shards, by the merchant's `apiShards` schedule) for API requests. Keys are
 * grouped by sub-shard and the sub-shards called at once: an engine call of many keys makes at most
 * MAX_API_SHARDS calls per step (find: today's and yesterday's, 16; claim 8; the midnight recheck 8;
 * complete or release 8), 40 subrequests at most against the 1,000 an invocation plans on
 * (WORKERS.subrequestsPlanned); a single request's one key reaches one sub-shard a day. Every method
 * takes or answers StoredTransactions (a claim is one whose record has status `processing`).
 */
export class Ledger {
  readonly #env: Env;
  readonly #merchantId: string;
  readonly #context: TransactionContext;
  readonly #now: Date;
  readonly #apiShards: ApiShardSchedule | undefined;

  constructor(env: Env, merchantId: string, context: TransactionContext, now: Date, apiShards?: ApiShardSchedule) {
    this.#env = env;
    this.#merchantId = merchantId;
    this.#context = context;
    this.#now = now;
    this.#apiShards = apiShards;
  }

  get #today(): string {
    return utcDay(this.#now);
  }

  #batchShard(batchId: string): Shard {
    return shardFor(this.#env, { kind: 'batch', merchantId: this.#merchantId, batchId }, this.#context.batchCreatedAt ?? isoTimestamp(this.#now));
  }

  /** The shard that holds a transaction, from its id. */
  #shardOf(stored: StoredTransaction): Shard {
    if (this.#context.source === 'batch' && this.#context.batchId !== undefined) return this.#batchShard(this.#context.batchId);
    const named = parseTransactionId(String(stored.record.id));
    const parsed = named?.kind === 'refund' ? named.original : named;
    if (!parsed) throw new Error('a stored transaction has an id of no known form');
    return parsed.kind === 'batch' ? this.#batchShard(parsed.batchId) : apiShard(this.#env, this.#merchantId, parsed.day, parsed.sub);
  }

  /** The id a new transaction under `key` gets. */
  async newId(key: string, line: number | undefined): Promise<string> {
    const batchId = this.#context.batchId;
    if (this.#context.source === 'batch' && batchId !== undefined) {
      // A batch row's key is `{batch id}:{line}` (services/batches/chunks.ts).
      const createdAt = this.#context.batchCreatedAt ?? isoTimestamp(this.#now);
      return batchTransactionId(batchId, createdAt, line ?? Number(key.slice(key.lastIndexOf(':') + 1)));
    }
    return apiTransactionId(this.#merchantId, key, this.#today, shardsOn(this.#apiShards, this.#today));
  }

  /**
   * The merchant's transactions and open claims under `keys`, by key. API keys: today's record, or
   * yesterday's if still within its idempotency window; an open claim however old.
   */
  async find(keys: readonly string[]): Promise<Map<string, StoredTransaction>> {
    const found = new Map<string, StoredTransaction>();
    if (keys.length === 0) return found;
    const { batchId, chunkFirstLine } = this.#context;
    if (this.#context.source === 'batch' && batchId !== undefined) {
      const shard = this.#batchShard(batchId);
      const query =
        chunkFirstLine !== undefined
          ? { keys, exact: [chunkPage(chunkFirstLine)], floor: [] }
          : { keys, exact: [], floor: keys.map((key) => chunkPage(Number(key.slice(key.lastIndexOf(':') + 1)))) };
      for (const stored of await shard.stub.find(shard.identity, query)) found.set(keyOf(stored), stored);
      return found;
    }
    const yesterday = addDays(this.#today, -1);
    const [today, before] = await Promise.all([this.#findApi(keys, this.#today), this.#findApi(keys, yesterday)]);
    const cutoff = isoTimestamp(new Date(this.#now.getTime() - IDEMPOTENCY_WINDOW_MS));
    for (const stored of before) {
      if (stored.record.status === CLAIMED_STATUS || String(stored.record.created_at) >= cutoff) found.set(keyOf(stored), stored);
    }
    for (const stored of today) found.set(keyOf(stored), stored);
    return found;
  }

  /** `keys` looked up in `day`'s sub-shards (the count that day had): each key in its own, the sub-shards at once. */
  async #findApi(keys: readonly string[], day: string): Promise<StoredTransaction[]> {
    const shards = shardsOn(this.#apiShards, day);
    const placed = await Promise.all(keys.map((key) => apiPlacement(this.#merchantId, key, day, shards)));
    const bySub = new Map<number, { keys: string[]; ids: string[] }>();
    placed.forEach(({ id, sub }, i) => {
      const group = bySub.get(sub) ?? { keys: [], ids: [] };
      group.keys.push(keys[i] ?? '');
      group.ids.push(id);
      bySub.set(sub, group);
    });
    const answers = await Promise.all(
      [...bySub].map(([sub, group]) => {
        const shard = apiShard(this.#env, this.#merchantId, day, sub);
        return shard.stub.find(shard.identity, { keys: group.keys, exact: group.ids, floor: [] });
      }),
    );
    return answers.flat();
  }

  /** Claims the requests whose keys are free, before any processor is asked; answers the ids claimed. */
  async claim(claims: readonly StoredTransaction[]): Promise<Set<string>> {
    if (claims.length === 0) return new Set();
    const createdAt = isoTimestamp(this.#now);
    const { batchId, chunkFirstLine } = this.#context;
    if (this.#context.source === 'batch' && batchId !== undefined) {
      const shard = this.#batchShard(batchId);
      const page = chunkPage(chunkFirstLine ?? Math.min(...claims.map((c) => c.line ?? 0)));
      const keys = new Set(written(await shard.stub.claim(shard.identity, [{ page, entries: claims }], createdAt)));
      return new Set(claims.filter((c) => keys.has(keyOf(c))).map((c) => String(c.record.id)));
    }
    // Each claim in today's sub-shard its id names (newId), the sub-shards at once.
    const claimedIds = await this.#byShard(claims, async (shard, group) => {
      const requests = group.map((stored) => ({ page: String(stored.record.id), entries: [stored] }));
      return written(await shard.stub.claim(shard.identity, requests, createdAt));
    });
    const neighbour = this.#neighbourDay();
    if (neighbour !== null && claimedIds.size > 0) {
      // A request on the other side of midnight may have claimed the same key there meanwhile
      // (looked up in the sub-shard that day's count gives it).
      const mine = claims.filter((c) => claimedIds.has(String(c.record.id)));
      const taken = await this.#findApi(mine.map(keyOf), neighbour);
      const cutoff = isoTimestamp(new Date(this.#now.getTime() - IDEMPOTENCY_WINDOW_MS));
      const clash = new Set(taken.filter((s) => s.record.status === CLAIMED_STATUS || String(s.record.created_at) >= cutoff).map(keyOf));
      if (clash.size > 0) {
        const clashing = mine.filter((c) => clash.has(keyOf(c)));
        await this.release(clashing);
        for (const c of clashing) claimedIds.delete(String(c.record.id));
      }
    }
    return claimedIds;
  }

  #neighbourDay(): string | null {
    const sinceMidnight = this.#now.getTime() - Date.parse(`${this.#today}T00:00:00.000Z`);
    if (sinceMidnight < BOUNDARY_RECHECK_MS) return addDays(this.#today, -1);
    if (DAY_MS - sinceMidnight < BOUNDARY_RECHECK_MS) return addDays(this.#today, 1);
    return null;
  }

  /** Writes the answers of claims still open; answers the ids written (a claim settled elsewhere is absent). */
  async complete(records: readonly StoredTransaction[]): Promise<Set<string>> {
    return this.#byShard(records, async (shard, group) => written(await shard.stub.complete(shard.identity, group.map(answerOf))));
  }

  /** Releases open claims whose charge never reached the processor; answers the ids released. */
  async release(claims: readonly StoredTransaction[]): Promise<Set<string>> {
    return this.#byShard(claims, async (shard, group) => written(await shard.stub.release(shard.identity, group.map(keyOf))));
  }

  /** The open claims of this call's batch (a failed batch's partial download settles them). */
  async openBatchClaims(): Promise<StoredTransaction[]> {
    const batchId = this.#context.batchId;
    if (batchId === undefined) return [];
    const shard = this.#batchShard(batchId);
    return shard.stub.openClaims(shard.identity);
  }

  async #byShard(
    items: readonly StoredTransaction[],
    call: (shard: Shard, group: StoredTransaction[]) => Promise<string[]>,
  ): Promise<Set<string>> {
    const groups = new Map<string, { shard: Shard; items: StoredTransaction[] }>();
    for (const stored of items) {
      const shard = this.#shardOf(stored);
      const group = groups.get(shard.identity.name) ?? { shard, items: [] };
      group.items.push(stored);
      groups.set(shard.identity.name, group);
    }
    const done = new Set<string>();
    await Promise.all(
      [...groups.values()].map(async ({ shard, items: group }) => {
        const keys = new Set(await call(shard, group));
        for (const stored of group) if (keys.has(keyOf(stored))) done.add(String(stored.record.id));
      }),
    );
    return done;
  }
}
