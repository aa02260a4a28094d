/**
 * The built-in sandbox processor's side of the wire: the "acquirer" it stands for, one object per
 * processor account and UTC day of the claims it is sent (`sandboxAcquirerName`). Like a gateway it
 * remembers every charge under its idempotency key, answers a key sent again with its first answer,
 * and answers lookups by key (services/transactions/processors/sandbox.ts decides the answers).
 * Its memory is kept SANDBOX_MEMORY_DAYS, then the object empties itself (alarm, `deleteAll`).
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import {
  chargedBetween,
  createCallsTable,
  hasCalls,
  insertChargeCall,
  insertLookupCall,
  listCalls,
  type SandboxChargeEntry,
  type SandboxFailure,
  type SandboxLedgerRow,
} from '../storage/sandbox-calls';

/** Days the sandbox remembers a charge: long past any claim's settlement. */
export const SANDBOX_MEMORY_DAYS = 30;

/**
 * A charge is sent after its claim and within the claim's lifetime (services/transactions/claims.ts,
 * 60 s). Looking a key up (rare: a claim left open) reads the calls from a minute before its claim
 * (clocks of two isolates) to 10 minutes after. A charge's check for an earlier charge of its keys
 * (on every call) reads only the calls made since its claim, less a second: a few rows, not a
 * minute's worth of chunks.
 */
const BEFORE_CLAIM_MS = 60_000;
const AFTER_CLAIM_MS = 10 * 60_000;
const CHARGE_CHECK_MARGIN_MS = 1_000;

function shifted(iso: string, ms: number): string {
  return new Date(Date.parse(iso) + ms).toISOString();
}

export class SandboxAcquirer extends DurableObject<Env> {
  /** Records a call's charges and answers each key's answer: its first one, if the key was charged already. */
  async charge(day: string, entries: readonly SandboxChargeEntry[], claimedFrom: string, now: string): Promise<{ answers: Record<string, string> } | SandboxFailure> {
    // A charge the memory could not record is answered, not thrown: the caller throws it (the charge
    // then counts as never received), and the object does not also report an uncaught exception.
    try {
      return { answers: await this.#charge(day, entries, claimedFrom, now) };
    } catch (err) {
      return { failed: err instanceof Error ? `${err.name}: ${err.message}` : 'unknown error' };
    }
  }

  async #charge(day: string, entries: readonly SandboxChargeEntry[], claimedFrom: string, now: string): Promise<Record<string, string>> {
    await this.#ensure(day);
    const sql = this.ctx.storage.sql;
    const earlier = chargedBetween(sql, new Set(entries.map((e) => e.idempotencyKey)), shifted(claimedFrom, -CHARGE_CHECK_MARGIN_MS), now);
    insertChargeCall(sql, now, entries);
    const answers: Record<string, string> = {};
    for (const entry of entries) answers[entry.idempotencyKey] ??= earlier.get(entry.idempotencyKey) ?? entry.result;
    return answers;
  }

  /** The answers for keys claimed at `claimedAt` (absent: never charged); counts one lookup on each key found. */
  async lookup(keys: readonly string[], claimedAt: string, now: string): Promise<Record<string, string>> {
    if (!hasCalls(this.ctx.storage.sql)) return {};
    const found = chargedBetween(this.ctx.storage.sql, new Set(keys), shifted(claimedAt, -BEFORE_CLAIM_MS), shifted(claimedAt, AFTER_CLAIM_MS));
    if (found.size > 0) insertLookupCall(this.ctx.storage.sql, now, [...found.keys()]);
    return Object.fromEntries(found);
  }

  /** Every key charged, with its first answer and call counts. */
  async list(): Promise<SandboxLedgerRow[]> {
    return listCalls(this.ctx.storage.sql);
  }

  async #ensure(day: string): Promise<void> {
    if (hasCalls(this.ctx.storage.sql)) return;
    createCallsTable(this.ctx.storage.sql);
    await this.ctx.storage.setAlarm(forgetAt(day));
  }

  /**
   * Empties the object once its day's memory has passed SANDBOX_MEMORY_DAYS (the alarm passes the
   * real time, the bench its own); answers whether it did.
   */
  async forgetIfDue(day: string, now: string): Promise<boolean> {
    if (Date.parse(now) < forgetAt(day)) return false;
    await this.ctx.storage.deleteAll();
    return true;
  }

  override async alarm(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
}

/** When a day's memory is forgotten: SANDBOX_MEMORY_DAYS after the day ended. */
function forgetAt(day: string): number {
  return Date.parse(`${day}T00:00:00.000Z`) + (SANDBOX_MEMORY_DAYS + 1) * 86_400_000;
}
