/**
 * Claims an API request left open (docs/transactions.md, "Claim before charge"): the engine claims a
 * key, asks the processor, then writes the answer. If the invocation dies between the charge and
 * that write (a CPU or memory kill, a deploy, the shard failing the write) and the client never
 * sends the key again (an `auto_` key is never sent again), the charge would sit as a claim for
 * ever: charged, but in no ledger page, no search and no settlement. A batch row has its chunk's
 * redelivery and the partial download; an API claim has this sweep.
 *
 * An API shard arms its alarm for when its oldest open claim counts as abandoned
 * (CLAIM_TIMEOUT_SECONDS) and a grace of four minutes more (the client's own retry goes first); the alarm then settles every abandoned claim the
 * way a retry would (services/transactions/claims.ts, `settleClaims`): the processor is asked what
 * it did under the claim's key, never to charge: a charge it has is recorded (and indexed for
 * search and announced as `transaction_create`, as a request's charge is; settlement registers as
 * for any record), one it never received is released. A claim the processor could not be asked
 * about stays open and the alarm tries again a grace later.
 *
 * A step reads and settles at most CLAIMS_PER_SWEEP claims, from a cursor over the `claims` table,
 * however many a crash left open at an API day's peak; the next step is the next alarm, set at once.
 */
import type { Env } from '../../env';
import { isoTimestamp } from '../../lib/time';
import {
  clearClaimFollowUps,
  listClaimsPage,
  markClaimFollowUps,
  oldestClaimAt,
  pendingClaimFollowUps,
  type ShardIdentity,
  type StoredTransaction,
} from '../../storage/ledger-shard';
import { CLAIM_TIMEOUT_SECONDS, isClaim, processorAccounts, settleClaims, takeoverInSeconds } from '../../services/transactions/claims';
import { Ledger } from '../../services/transactions/ledger';
import { merchantProcessors } from '../../services/transactions/processors/registry';
import { followUpSweptCharges } from '../../services/swept-charges';
import { WORKERS } from '../../lib/platform-limits';
import { findRecords, keyOf, type ShardContext } from './reading';

/** After a claim counts as abandoned, the sweep waits this much more (a retry by the client goes first). */
export const CLAIM_SWEEP_GRACE_MS = 4 * 60_000;
/**
 * Claims one alarm settles, and claim rows it reads: a tenth of the subrequests planned per
 * invocation (WORKERS.subrequestsPlanned, 1,000). A claim costs one processor lookup (the
 * sandbox's are coalesced per day); the step adds two ledger writes, a few search index calls, and
 * its `transaction_create` sends packed 3 to 100 messages a call (at most 100 × 10 endpoints / 3 ≈
 * 334 calls with every message at its 40 KB largest): under 500, half the plan. Its memory is the
 * step's claims, about 1 KB each. More wait for the next alarm, which is set at once.
 */
export const CLAIMS_PER_SWEEP = WORKERS.subrequestsPlanned / 10;
/** Where the next step starts in the `claims` table (a row id; 0: the start), in the object's key-value storage. */
const CURSOR_KEY = 'claim_sweep_cursor';

export function isApiShard(name: string): boolean {
  return name.includes('/api/');
}

/** When a claim made at `createdAt` may be swept. */
export function claimSweepAt(createdAt: string): number {
  return Date.parse(createdAt) + CLAIM_TIMEOUT_SECONDS * 1000 + CLAIM_SWEEP_GRACE_MS;
}

/** Brings the alarm forward to `at` when it is set later (or not at all). */
export async function armNoLaterThan(storage: DurableObjectStorage, at: number | null): Promise<void> {
  if (at === null) return;
  const current = await storage.getAlarm();
  if (current === null || current > at) await storage.setAlarm(at);
}

export interface ClaimSweep {
  completed: number;
  released: number;
  open: number;
  /** Claims (or follow-ups) are left past this step's bound: the next step is due at once. */
  more: boolean;
}

/**
 * One step of the sweep at `now`: first the follow-ups a step that died left pending, then at most
 * CLAIMS_PER_SWEEP abandoned claims from the cursor, settled as a retry would (the ledger writes
 * go through the shard's own stub, as the engine's do); the charges recorded get their follow-ups.
 * Then the alarm is armed: at once when there is more, else for the oldest claim still open.
 */
export async function sweepClaimsStep(env: Env, shard: ShardContext, identity: ShardIdentity, openClaim: (key: string) => StoredTransaction | undefined, now: Date): Promise<ClaimSweep> {
  const { merchantId } = identity;
  const pending = pendingClaimFollowUps(shard.sql, CLAIMS_PER_SWEEP + 1);
  if (pending.length > 0) {
    const ids = pending.slice(0, CLAIMS_PER_SWEEP);
    // Recorded ones are followed up; a claim still open is swept again, a released one has none.
    const recorded = await findRecords(shard.sql, identity, { ids, exact: ids, floor: [] }, () => undefined);
    await followUpSweptCharges(env, merchantId, recorded.filter((stored) => !isClaim(stored)).map((stored) => stored.record));
    clearClaimFollowUps(shard.sql, ids);
  }

  const cursor = (await shard.storage.get<number>(CURSOR_KEY)) ?? 0;
  const before = isoTimestamp(new Date(now.getTime() - CLAIM_TIMEOUT_SECONDS * 1000));
  const rows = listClaimsPage(shard.sql, merchantId, cursor, before, CLAIMS_PER_SWEEP);
  const moreRows = rows.length === CLAIMS_PER_SWEEP;
  // Memory holds the open claims as committed; a row's entry another attempt just closed is skipped.
  const abandoned = rows
    .flatMap((row) => row.entries)
    .flatMap((stored) => openClaim(keyOf(stored)) ?? [])
    .filter((claim) => isClaim(claim) && takeoverInSeconds(claim, now) === 0)
    .slice(0, CLAIMS_PER_SWEEP);
  let settled = { completed: [] as StoredTransaction[], released: [] as StoredTransaction[], open: [] as StoredTransaction[] };
  if (abandoned.length > 0) {
    const ids = abandoned.map((claim) => String(claim.record.id));
    markClaimFollowUps(shard.sql, ids);
    const ledger = new Ledger(env, merchantId, { source: 'api', ipAddress: null }, now);
    const accounts = processorAccounts(env, await merchantProcessors(env.DB, merchantId, () => now), () => now);
    settled = await settleClaims(ledger, accounts, abandoned);
    await followUpSweptCharges(env, merchantId, settled.completed.map((stored) => stored.record));
    clearClaimFollowUps(shard.sql, ids);
    console.log(JSON.stringify({ level: 'warn', event: 'abandoned_claims_swept', completed: settled.completed.length, released: settled.released.length, open: settled.open.length }));
  }
  const lastRow = rows.at(-1);
  await shard.storage.put(CURSOR_KEY, moreRows && lastRow ? lastRow.id : 0);

  const more = moreRows || pending.length > CLAIMS_PER_SWEEP;
  const oldest = oldestClaimAt(shard.sql);
  // Claims the processor could not be asked about are tried again a grace on; younger ones when they are due.
  const at = more ? now.getTime() : oldest === null ? null : Math.max(claimSweepAt(oldest), now.getTime() + CLAIM_SWEEP_GRACE_MS);
  await armNoLaterThan(shard.storage, at);
  return { completed: settled.completed.length, released: settled.released.length, open: settled.open.length, more };
}
