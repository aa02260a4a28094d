/**
 * Billing in bounded steps (docs/recurring.md, "At a merchant's scale"): a step bills at most its
 * budget, a page at a time, and the rest is the next step's; a step that stops mid-run (a crash
 * after a page was charged and before it was recorded) leaves only that page leased, and the
 * restarted run charges no cycle twice.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { created, customerWithCard, okData, recurring, type Subscription } from '../helpers/recurring';
import { BILL_STEP_CHARGES, billDue, continueBilling, LEASE_MS, recurringBillingName } from '../../src/services/recurring/billing';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

const today = () => utcDay(new Date());

let shop: TestMerchant;
const ids: string[] = [];
beforeAll(async () => {
  shop = await createMerchant({ name: 'Stepped Billing Shop' });
  for (let i = 0; i < 9; i++) {
    const customer = await customerWithCard(shop);
    ids.push((await created<Subscription>(recurring(shop, 'POST', '/subscription', { customer: { id: customer.id }, amount: 500 + i, charge_on_day: true }))).id);
  }
}, 120_000);

const billings = async () => (await Promise.all(ids.map((id) => okData<Subscription>(recurring(shop, 'GET', `/subscription/${id}`))))).map((s) => s.billings);

async function chargesOf(subscriptionId: string): Promise<number> {
  const response = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { subscription_id: { operator: '=', value: subscriptionId }, limit: 100 } });
  expect(response.status).toBe(200);
  return (await response.json<{ data: unknown[] }>()).data.length;
}

async function processorCalls(subscriptionId: string): Promise<number> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(shop.id), today()));
  return (await acquirer.list()).filter((row) => row.idempotencyKey.includes(subscriptionId)).reduce((sum, row) => sum + row.chargeCalls, 0);
}

/** env with D1's batch (the write of a page's outcomes) failing on its `failOn`-th call. */
function crashingOn(failOn: number) {
  let calls = 0;
  return {
    ...env,
    DB: new Proxy(env.DB, {
      get(target, property) {
        if (property === 'batch') {
          return (statements: D1PreparedStatement[]) => {
            calls += 1;
            if (calls === failOn) throw new Error('the run stopped here');
            return target.batch(statements);
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }),
  };
}

describe('billing in bounded steps', () => {
  it('a step bills at most its budget, the rest in the next steps; a crash mid-step leaves one page leased and no cycle is charged twice', async () => {
    // Step 1: a budget of 4 in pages of 2 bills exactly 4 of the 9 and says it is not finished.
    const first = await billDue(env, shop.id, today(), () => new Date(), 4, 2);
    expect(first).toMatchObject({ charged: 4, finished: false });
    expect((await billings()).filter((n) => n === 1)).toHaveLength(4);

    // Step 2 stops after its first page was recorded and its second page charged, not recorded.
    await expect(billDue(crashingOn(2), shop.id, today(), () => new Date(), 4, 2)).rejects.toThrow('the run stopped here');
    expect((await billings()).filter((n) => n === 1)).toHaveLength(6);

    // Only the crashed page is held: a run now bills everything else, and finishes.
    const now = await billDue(env, shop.id, today(), () => new Date(), 100, 2);
    expect(now).toMatchObject({ charged: 1, finished: true });
    expect((await billings()).filter((n) => n === 1)).toHaveLength(7);

    // After the lease, the restarted run is answered the crashed page's recorded charges.
    const later = () => new Date(Date.now() + LEASE_MS + 1000);
    const restarted = await billDue(env, shop.id, today(), later, 100, 2);
    expect(restarted).toMatchObject({ charged: 2, finished: true });
    expect(await billings()).toEqual(ids.map(() => 1));
    for (const id of ids) {
      expect(await chargesOf(id)).toBe(1);
      expect(await processorCalls(id)).toBe(1);
    }
    // And nothing is left for another run.
    expect(await billDue(env, shop.id, today(), later, 100, 2)).toMatchObject({ charged: 0, finished: true });
  }, 120_000);
});

describe('the billing object', () => {
  it('bills one step per alarm, puts the next off to the merchant’s pace (half its tier), and finishes in the next tick', async () => {
    const merchant = await createMerchant({ name: 'Paced Billing Shop' });
    const customer = await customerWithCard(merchant);
    const template = await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: customer.id }, amount: 1000, charge_on_day: true }));
    // One more than a step's budget, copied from the template in one statement.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
       INSERT INTO recurring_subscriptions (merchant_id, id, plan_id, description, customer_id, payment_method_id, payment_method_type, billing_address_id, shipping_address_id,
         amount, billing_cycle_interval, billing_frequency, billing_days, charge_on_day, duration, add_ons, discounts, po_number, tax_amount, tax_exempt, status, cycle_date,
         next_bill_date, billings, retries, last_transaction_id, last_decline, lease_until, created_at, updated_at)
       SELECT merchant_id, id || 'c' || n.i, plan_id, description, customer_id, payment_method_id, payment_method_type, billing_address_id, shipping_address_id,
         amount + n.i, billing_cycle_interval, billing_frequency, billing_days, charge_on_day, duration, add_ons, discounts, po_number, tax_amount, tax_exempt, status, cycle_date,
         next_bill_date, billings, retries, last_transaction_id, last_decline, lease_until, created_at, updated_at
       FROM n, recurring_subscriptions WHERE merchant_id = ?2 AND id = ?3`,
    )
      .bind(BILL_STEP_CHARGES, merchant.id, template.id)
      .run();
    const billed = async () =>
      (await env.DB.prepare('SELECT COUNT(*) AS n FROM recurring_subscriptions WHERE merchant_id = ? AND billings = 1').bind(merchant.id).first<{ n: number }>())?.n;

    const stub = env.RECURRING_BILLING.getByName(recurringBillingName(merchant.id));
    // The run as start() leaves it, its alarm an hour ahead so that only this test runs it (an alarm
    // due now may be run by the runtime on its own before the test does).
    const armAhead = () => runInDurableObject(stub, async (_, state) => state.storage.setAlarm(Date.now() + 3_600_000));
    // Armed ahead before the run is started, so start() finds an alarm and sets none for now.
    await armAhead();
    await continueBilling(env, merchant.id, today());
    const before = Date.now();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const stepEnded = Date.now();
    const next = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    if (stepEnded - before < 12_000) {
      expect(await billed()).toBe(BILL_STEP_CHARGES);
      // A standard merchant's pace is 25 a second: 300 charges put the next tick 12 s after the step began.
      expect(next).not.toBeNull();
      expect(next as number).toBeGreaterThanOrEqual(before + 12_000);
      expect(next as number).toBeLessThan(before + 3_600_000);
      await armAhead();
      expect(await runDurableObjectAlarm(stub)).toBe(true);
    } else if (next !== null) {
      // The step itself took longer than its pace allows (a loaded machine): the next tick is due at
      // once, and the runtime may run it on its own; here it has not yet.
      expect(next).toBeLessThanOrEqual(stepEnded);
      await armAhead();
      expect(await runDurableObjectAlarm(stub)).toBe(true);
    }
    // (Otherwise the runtime ran that due tick itself, and it billed the last one.)
    expect(await billed()).toBe(BILL_STEP_CHARGES + 1);
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBeNull();
  }, 300_000);
});
