/**
 * The built-in sandbox processor's side of the wire: the "acquirer" it stands for, one object per
 * processor account and UTC day of the claims it is sent (`sandboxAcquirerName`). Like a gateway it
 * remembers every charge under its idempotency key, answers a key sent again with its first answer,
 * and answers lookups by key (services/transactions/processors/sandbox.ts decides the answers).
 * Its memory is kept SANDBOX_MEMORY_DAYS, then the object empties itself (alarm, `deleteAll`).
 *
 * A charge or a lookup reads only the blocks of its own keys (storage/sandbox-calls.ts), so what one
 * call costs does not grow with the merchant's day: the object of a merchant's busiest day sees one
 * call per chunk or API charge, each reading and writing a row or two (docs/capacity.md, "The sandbox
 * processor's memory").
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import {
  createChargeTable,
  findCharges,
  hasChargeTable,
  hasLegacyCalls,
  legacyChargedBetween,
  listCharges,
  recordCharges,
  recordLookups,
  type SandboxChargeEntry,
  type SandboxFailure,
  type SandboxLedgerRow,
} from '../storage/sandbox-calls';

/** Days the sandbox remembers a charge: long past any claim's settlement. */
export const SANDBOX_MEMORY_DAYS = 30;

/**
 * Only for objects made before blocks (their `calls` table is keyed by time): a lookup reads the
 * calls from a minute before its claim to 10 minutes after, a charge those since its claim less a
 * second, as that code did.
 */
const LEGACY_BEFORE_CLAIM_MS = 60_000;
const LEGACY_AFTER_CLAIM_MS = 10 * 60_000;
const LEGACY_CHARGE_MARGIN_MS = 1_000;

function shifted(iso: string, ms: number): string {
  return new Date(Date.parse(iso) + ms).toISOString();
}

/** A key to look up, with when it was claimed (what names the charge for objects made before blocks). */
export interface SandboxLookup {
  key: string;
  claimedAt: string;
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
    const earlier = new Map<string, string>();
    const keys = new Set(entries.map((e) => e.idempotencyKey));
    legacyChargedBetween(sql, keys, shifted(claimedFrom, -LEGACY_CHARGE_MARGIN_MS), now, earlier);
    return Object.fromEntries(recordCharges(sql, now, entries, earlier));
  }

  /** The answers for these keys (absent: never charged); counts one lookup on each key found. One call for any number of keys. */
  async lookup(items: readonly SandboxLookup[], now: string): Promise<Record<string, string>> {
    const sql = this.ctx.storage.sql;
    const found = hasChargeTable(sql) ? findCharges(sql, items.map((item) => item.key)) : new Map<string, string>();
    if (hasLegacyCalls(sql)) {
      for (const item of items) {
        if (found.has(item.key)) continue;
        legacyChargedBetween(sql, new Set([item.key]), shifted(item.claimedAt, -LEGACY_BEFORE_CLAIM_MS), shifted(item.claimedAt, LEGACY_AFTER_CLAIM_MS), found);
      }
    }
    if (found.size > 0) {
      // An object made before blocks gets the table for its lookups (its alarm is set already).
      if (!hasChargeTable(sql)) createChargeTable(sql);
      recordLookups(sql, now, [...found.keys()]);
    }
    return Object.fromEntries(found);
  }

  /** Every key charged, with its first answer and call counts (tests and operators: the whole day). */
  async list(): Promise<SandboxLedgerRow[]> {
    return listCharges(this.ctx.storage.sql);
  }

  async #ensure(day: string): Promise<void> {
    if (hasChargeTable(this.ctx.storage.sql)) return;
    createChargeTable(this.ctx.storage.sql);
    // An object made before blocks has its alarm already.
    if (!hasLegacyCalls(this.ctx.storage.sql)) await this.ctx.storage.setAlarm(forgetAt(day));
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
