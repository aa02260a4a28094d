/**
 * Claim before charge (docs/transactions.md, "Idempotency"). The engine records each request
 * under its (merchant, idempotency key) in status `processing` before its processor is asked,
 * and completes that record with the answer. Whoever finds a claim open either waits (it is
 * fresh: its holder may be asking the processor right now) or, once the claim is older than
 * CLAIM_TIMEOUT_SECONDS (its holder crashed), settles it by asking the processor what it did
 * under that key: a charge the processor has is completed from its record, a charge it never
 * received is released so the key can be charged; nothing is ever charged a second time.
 */
import type { Caller, Env } from '../../env';
import type { Clock } from '../../lib/time';
import { CLAIMED_STATUS, type StoredTransaction } from '../../storage/ledger-shard';
import type { ProcessorRecord } from '../../storage/processors';
import { Ledger } from './ledger';
import type { Charge, ChargeResult, PaymentProcessor } from './processors/processor';
import { merchantProcessors, processorFor } from './processors/registry';
import { settledRecord } from './records';

/**
 * A claim older than this is taken to be abandoned by a holder that crashed, and the next attempt
 * settles it. A processor call must give up well within it (the sandbox answers in milliseconds).
 */
export const CLAIM_TIMEOUT_SECONDS = 60;

export function isClaim(stored: StoredTransaction): boolean {
  return stored.record.status === CLAIMED_STATUS;
}

/** Seconds until an open claim counts as abandoned; 0 when it already does. */
export function takeoverInSeconds(claim: StoredTransaction, now: Date): number {
  const remaining = Date.parse(String(claim.record.created_at)) + CLAIM_TIMEOUT_SECONDS * 1000 - now.getTime();
  return remaining > 0 ? Math.ceil(remaining / 1000) : 0;
}

/** The merchant's processor accounts for one engine call: one instance each, so their calls share round trips. */
export type ProcessorAccounts = (processorId: string) => PaymentProcessor | null;

export function processorAccounts(env: Env, processors: readonly ProcessorRecord[], clock: Clock): ProcessorAccounts {
  const instances = new Map<string, PaymentProcessor>();
  return (processorId) => {
    let instance = instances.get(processorId);
    if (!instance) {
      const record = processors.find((p) => p.id === processorId);
      if (!record) return null;
      instance = processorFor(env, record, clock);
      instances.set(processorId, instance);
    }
    return instance;
  };
}

function completed(claim: StoredTransaction, result: ChargeResult): StoredTransaction {
  return { ...claim, record: settledRecord(claim.record, result) };
}

export interface ClaimSettlement {
  /** Completed from the processor's record by this call. */
  completed: StoredTransaction[];
  /** Released: the processor never received the charge, so the key is free again. */
  released: StoredTransaction[];
  /** Still open: the processor could not be asked, or another attempt settled the claim first. */
  open: StoredTransaction[];
}

/**
 * Asks each claim's processor what it did under the claim's key (never charging), then completes
 * the charged claims and releases the others, in one statement each.
 */
export async function settleClaims(
  ledger: Ledger,
  accounts: ProcessorAccounts,
  claims: readonly StoredTransaction[],
): Promise<ClaimSettlement> {
  const answers = await Promise.allSettled(
    claims.map(async (claim) => {
      const processor = accounts(String(claim.record.processor_id));
      if (!processor) throw new Error(`claim ${String(claim.record.id)} names an unknown processor`);
      return processor.lookup(String(claim.record.idempotency_key), String(claim.record.created_at));
    }),
  );
  const charged: StoredTransaction[] = [];
  const neverReceived: StoredTransaction[] = [];
  const open: StoredTransaction[] = [];
  answers.forEach((answer, i) => {
    const claim = claims[i] as StoredTransaction;
    if (answer.status === 'rejected') open.push(claim);
    else if (answer.value === null) neverReceived.push(claim);
    else charged.push(completed(claim, answer.value));
  });
  const [completedIds, releasedIds] = await Promise.all([ledger.complete(charged), ledger.release(neverReceived)]);
  const settlement: ClaimSettlement = { completed: [], released: [], open };
  for (const claim of charged) (completedIds.has(String(claim.record.id)) ? settlement.completed : open).push(claim);
  for (const claim of neverReceived) (releasedIds.has(String(claim.record.id)) ? settlement.released : open).push(claim);
  return settlement;
}

/** A claim this call holds, with the charge to send for it. */
export interface HeldClaim {
  stored: StoredTransaction;
  charge: Charge;
}

/**
 * Sends each held claim's charge to its processor, once, and writes the answers (one statement).
 * Answers the completed records by claim id; a claim another attempt settled meanwhile (only
 * possible after CLAIM_TIMEOUT_SECONDS) is absent, and its key must be read again.
 *
 * A charge whose call failed may or may not have been made. Once every call of this attempt has
 * ended, the processor's record is final, so it is looked up at once: charged, the claim is
 * completed; never received, it is released. Then, if any request is left without an answer, the
 * call's error is thrown (the chunk or the API request is retried; a retry charges only what was
 * released). If the answers cannot be written, the claims stay open until they count as abandoned.
 */
export async function chargeClaims(
  ledger: Ledger,
  accounts: ProcessorAccounts,
  held: readonly HeldClaim[],
): Promise<Map<string, StoredTransaction>> {
  const answers = await Promise.allSettled(
    held.map(async ({ stored, charge }) => {
      const processor = accounts(String(stored.record.processor_id));
      if (!processor) throw new Error(`claim ${String(stored.record.id)} names an unknown processor`);
      return processor.charge(charge);
    }),
  );
  const answered: StoredTransaction[] = [];
  const unanswered: StoredTransaction[] = [];
  let failure: unknown = null;
  answers.forEach((answer, i) => {
    const { stored } = held[i] as HeldClaim;
    if (answer.status === 'fulfilled') answered.push(completed(stored, answer.value));
    else {
      unanswered.push(stored);
      failure ??= answer.reason;
    }
  });

  const done = new Map<string, StoredTransaction>();
  const written = await ledger.complete(answered);
  for (const claim of answered) if (written.has(String(claim.record.id))) done.set(String(claim.record.id), claim);
  if (unanswered.length === 0) return done;

  const settlement = await settleClaims(ledger, accounts, unanswered).catch(() => null);
  for (const claim of settlement?.completed ?? []) done.set(String(claim.record.id), claim);
  if (settlement === null || settlement.completed.length < unanswered.length) throw failure;
  return done;
}

/** Open claims of a failed batch that are left after settling the abandoned ones, and when to ask again. */
export interface BatchClaimsState {
  open: number;
  retryAfterSeconds: number;
}

/**
 * Settles the abandoned claims of a batch's rows (its partial download does this first, so every
 * row charged is reported). Claims still fresh are left to their holders.
 */
export async function settleBatchClaims(
  env: Env,
  caller: Caller,
  batch: { id: string; createdAt: string },
  clock: Clock,
): Promise<BatchClaimsState> {
  const now = clock();
  const merchantId = caller.merchantId;
  const ledger = new Ledger(env, merchantId, { source: 'batch', ipAddress: null, batchId: batch.id, batchCreatedAt: batch.createdAt }, now);
  const claims = await ledger.openBatchClaims();
  if (claims.length === 0) return { open: 0, retryAfterSeconds: 0 };
  const fresh = claims.filter((claim) => takeoverInSeconds(claim, now) > 0);
  const abandoned = claims.filter((claim) => takeoverInSeconds(claim, now) === 0);
  let retryAfterSeconds = Math.max(0, ...fresh.map((claim) => takeoverInSeconds(claim, now)));
  let open = fresh.length;
  if (abandoned.length > 0) {
    const processors = await merchantProcessors(env.DB, merchantId, clock);
    const settlement = await settleClaims(ledger, processorAccounts(env, processors, clock), abandoned);
    open += settlement.open.length;
    // A processor that could not be asked is asked again on the next download.
    if (settlement.open.length > 0) retryAfterSeconds = Math.max(retryAfterSeconds, 5);
  }
  return { open, retryAfterSeconds };
}
