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
 * search; settlement registers as for any record), one it never received is released. A claim the
 * processor could not be asked about stays open and the alarm tries again a minute later.
 */
import type { Env } from '../../env';
import type { Clock } from '../../lib/time';
import type { StoredTransaction } from '../../storage/ledger-shard';
import { CLAIM_TIMEOUT_SECONDS, isClaim, processorAccounts, settleClaims, takeoverInSeconds } from '../../services/transactions/claims';
import { Ledger } from '../../services/transactions/ledger';
import { merchantProcessors } from '../../services/transactions/processors/registry';
import { indexOutcomes } from '../../services/search/indexer';
import { WORKERS } from '../../lib/platform-limits';

/** After a claim counts as abandoned, the sweep waits this much more (a retry by the client goes first). */
export const CLAIM_SWEEP_GRACE_MS = 4 * 60_000;
/**
 * Claims one alarm settles: each is one processor lookup (the sandbox's are coalesced per day)
 * and they are written in one call; a tenth of the planned subrequests. More wait for the next alarm.
 */
export const CLAIMS_PER_SWEEP = WORKERS.subrequestsPlanned / 10;

export function isApiShard(name: string): boolean {
  return name.includes('/api/');
}

/** When the oldest of `claims` may be swept; null when there are none. */
export function claimSweepAt(claims: readonly StoredTransaction[]): number | null {
  let oldest: number | null = null;
  for (const claim of claims) {
    const at = Date.parse(String(claim.record.created_at));
    if (Number.isFinite(at) && (oldest === null || at < oldest)) oldest = at;
  }
  return oldest === null ? null : oldest + CLAIM_TIMEOUT_SECONDS * 1000 + CLAIM_SWEEP_GRACE_MS;
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
}

/**
 * Settles the abandoned ones among `claims` (at most CLAIMS_PER_SWEEP), as a retry would. The ledger
 * writes go through the shard's own stub, as the engine's do.
 */
export async function sweepAbandonedClaims(env: Env, merchantId: string, claims: readonly StoredTransaction[], clock: Clock): Promise<ClaimSweep> {
  const now = clock();
  const abandoned = claims.filter((claim) => isClaim(claim) && takeoverInSeconds(claim, now) === 0).slice(0, CLAIMS_PER_SWEEP);
  if (abandoned.length === 0) return { completed: 0, released: 0, open: 0 };
  const context = { source: 'api' as const, ipAddress: null };
  const ledger = new Ledger(env, merchantId, context, now);
  const accounts = processorAccounts(env, await merchantProcessors(env.DB, merchantId, clock), clock);
  const settled = await settleClaims(ledger, accounts, abandoned);
  if (settled.completed.length > 0) {
    await indexOutcomes(env, merchantId, [], context, settled.completed.map((stored) => ({ ok: true as const, record: stored.record, replayed: false })));
  }
  console.log(JSON.stringify({ level: 'warn', event: 'abandoned_claims_swept', completed: settled.completed.length, released: settled.released.length, open: settled.open.length }));
  return { completed: settled.completed.length, released: settled.released.length, open: settled.open.length };
}
