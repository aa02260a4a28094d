/**
 * A merchant's receipt budget for one UTC day (`{merchant id}/{YYYY-MM-DD}`; docs/receipts.md,
 * "Budgets"): the receipts it may send that day, in a minute, and to one recipient. Every ledger
 * shard of the merchant asks it once per run, with the recipients of the receipts the run would send
 * (their hashes, never an address), and sends only those it admits. Its storage is fixed by the
 * day's budget (storage/receipt-budget.ts), and it empties itself once its day is over.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { admitReceipts, budgetUsage, RECEIPT_BUDGET_SCHEMA, recipientCount, releaseReceipts, type BudgetLimits, type BudgetVerdict, type RecipientHash } from '../storage/receipt-budget';

/** Kept this long after its day ends (a run that began before midnight may still give back), then emptied. */
const KEEP_AFTER_DAY_MS = 3_600_000;

export class ReceiptBudget extends DurableObject<Env> {
  /** The tables, made on each call (cheap: IF NOT EXISTS), since the alarm's deleteAll drops them. */
  #sql(): SqlStorage {
    this.ctx.storage.sql.exec(RECEIPT_BUDGET_SCHEMA);
    return this.ctx.storage.sql;
  }

  /** The verdict for each receipt, in order; those admitted are counted. */
  async admit(now: string, limits: BudgetLimits, recipients: readonly RecipientHash[]): Promise<BudgetVerdict[]> {
    const verdicts = this.ctx.storage.transactionSync(() => admitReceipts(this.#sql(), now, limits, recipients));
    if ((await this.ctx.storage.getAlarm()) === null) {
      const dayEnd = Date.parse(`${now.slice(0, 10)}T00:00:00.000Z`) + 86_400_000;
      await this.ctx.storage.setAlarm(dayEnd + KEEP_AFTER_DAY_MS);
    }
    return verdicts;
  }

  /** Gives back receipts admitted and not sent (the Email Service put them off for its own limits). */
  async release(now: string, recipients: readonly RecipientHash[]): Promise<void> {
    this.ctx.storage.transactionSync(() => releaseReceipts(this.#sql(), now, recipients));
  }

  /** The receipts counted for one recipient today (a resend asks before it is queued). */
  async recipient(hash: RecipientHash): Promise<number> {
    return recipientCount(this.#sql(), hash);
  }

  /** The receipts counted for the day so far. */
  async usage(): Promise<{ day: string | null; sent: number }> {
    return budgetUsage(this.#sql());
  }

  override async alarm(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
}
