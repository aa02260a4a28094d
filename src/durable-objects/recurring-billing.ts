/**
 * A merchant's billing run (docs/recurring.md, "At a merchant's scale"): one object per merchant
 * (`recurringBillingName`), holding only the day being billed. `start(day)` arms an alarm; each
 * alarm tick bills one bounded step (services/recurring/billing.ts, billDue: at most
 * BILL_STEP_CHARGES charges in pages of BILL_PAGE, under half the subrequests an invocation may
 * make) and re-arms while more is due, so a million subscriptions due on the 1st are billed in a
 * few thousand short ticks rather than one long invocation. The next tick waits as long as the
 * merchant's billing pace asks (billingPacePerSecond): billing never takes more than half of what
 * the merchant's rate tier lets its API send. The subscriptions themselves live in D1; this object
 * never grows with them (one stored value).
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';
import { systemClock } from '../lib/time';
import { billDue, nextStepAt } from '../services/recurring/billing';
import { readRateTier } from '../storage/rate-tiers';

/** A tick that failed (D1 unavailable): tried again after this long, the run's state unchanged. */
const RETRY_MS = 60_000;

export class RecurringBilling extends DurableObject<Env> {
  /** Bills what is due on or before `day`, from the next alarm on; a later day replaces an earlier one. */
  async start(merchantId: string, day: string): Promise<void> {
    const current = await this.ctx.storage.get<{ merchantId: string; day: string }>('run');
    if (!current || current.day < day) await this.ctx.storage.put('run', { merchantId, day });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const run = await this.ctx.storage.get<{ merchantId: string; day: string }>('run');
    if (!run) return;
    try {
      const startedAt = Date.now();
      const result = await billDue(this.env, run.merchantId, run.day, systemClock);
      console.log(JSON.stringify({ level: 'info', event: 'recurring_billing_step', merchant_id: run.merchantId, ...result }));
      if (result && !result.finished) {
        const tier = await readRateTier(this.env.DB, run.merchantId);
        await this.ctx.storage.setAlarm(nextStepAt(startedAt, Date.now(), result, tier));
        return;
      }
      // Done, unless a later day was asked for meanwhile (start() replaced the run).
      const now = await this.ctx.storage.get<{ merchantId: string; day: string }>('run');
      if (now && now.day === run.day) await this.ctx.storage.delete('run');
      else await this.ctx.storage.setAlarm(Date.now());
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', event: 'recurring_billing_step_failed', merchant_id: run.merchantId, message: err instanceof Error ? err.message.slice(0, 200) : 'unknown' }));
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
  }
}
