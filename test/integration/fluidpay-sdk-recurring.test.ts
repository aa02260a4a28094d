/**
 * FluidPay's Go SDK's recurring calls (recurring.go: add-ons, discounts, plans, subscriptions and
 * their status calls) against the Worker, each sent in the SDK's exact shape (its request structs'
 * JSON tags, omitempty included) and decoded into its Go types as the SDK does
 * (test/helpers/fluidpay-sdk.ts), as test/integration/fluidpay-sdk.test.ts does for the other areas.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createMerchant, type TestMerchant } from '../helpers/api';
import { bool, Day, Equal, goDecode, int, many, one, ptr, sdkCall, slice, str, struct, time, type SdkError } from '../helpers/fluidpay-sdk';
import { customerWithCard } from '../helpers/recurring';

const Adjustment = struct({ id: str, name: str, description: str, amount: int, percentage: int, duration: int, created_at: time, updated_at: time });
const Plan = struct({
  id: str,
  name: str,
  description: str,
  amount: int,
  billing_cycle_interval: int,
  billing_frequency: str,
  billing_days: str,
  charge_on_day: bool,
  total_add_ons: int,
  total_discounts: int,
  duration: int,
  add_ons: slice(ptr(Adjustment)),
  discounts: slice(ptr(Adjustment)),
  created_at: time,
  updated_at: time,
});
const Subscription = struct({
  id: str,
  plan_id: str,
  status: str,
  description: str,
  customer: struct({ id: str, payment_method_type: str, payment_method_id: str, billing_address_id: str, shipping_address_id: str }),
  amount: int,
  total_adds: int,
  total_discounts: int,
  billing_cycle_interval: int,
  billing_frequency: str,
  billing_days: str,
  charge_on_day: bool,
  duration: int,
  next_bill_date: str,
  add_ons: slice(ptr(Adjustment)),
  discounts: slice(ptr(Adjustment)),
  created_at: time,
  updated_at: time,
});
type AdjustmentT = { id: string; name: string; amount: number; percentage: number; duration: number; created_at: Date };
type PlanT = { id: string; amount: number; billing_days: string; total_add_ons: number; total_discounts: number; add_ons: AdjustmentT[]; discounts: AdjustmentT[]; created_at: Date };
type SubscriptionT = { id: string; plan_id: string; status: string; amount: number; next_bill_date: string; customer: { id: string; payment_method_id: string }; total_adds: number };
type PlanUpdated = PlanT & { billing_cycle_interval: number };

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'FluidPay Recurring Shop' });
});

async function doOne<T>(type: typeof Plan, method: string, path: string, options: { body?: unknown; query?: Record<string, string> } = {}): Promise<T> {
  return goDecode(type, one((await sdkCall(shop.secretKey, method, path, options)).data)) as T;
}
async function doList<T>(type: typeof Plan, method: string, path: string, body?: unknown): Promise<{ data: T[]; totalCount: number }> {
  const answer = await sdkCall(shop.secretKey, method, path, body === undefined ? {} : { body });
  return { data: many(type, answer.data) as T[], totalCount: answer.totalCount };
}

describe("FluidPay's SDK: AddOns and Discounts", () => {
  it('Create, Get, List, Update and Delete work untouched', async () => {
    for (const kind of ['addon', 'discount'] as const) {
      // AdjustmentRequest: amount and percentage omitempty, duration always sent.
      const made = await doOne<AdjustmentT>(Adjustment, 'POST', `recurring/${kind}`, { body: { name: 'Ten off', amount: 1000, duration: 0 } });
      expect(made).toMatchObject({ name: 'Ten off', amount: 1000, percentage: 0, duration: 0 });
      expect(made.created_at.getTime()).toBeGreaterThan(0);
      expect((await doOne<AdjustmentT>(Adjustment, 'GET', `recurring/${kind}/${made.id}`)).id).toBe(made.id);
      const list = await doList<AdjustmentT>(Adjustment, 'GET', `recurring/${kind}s`);
      expect(list.data.map((a) => a.id)).toContain(made.id);
      expect(list.totalCount).toBe(list.data.length);
      const updated = await doOne<AdjustmentT>(Adjustment, 'POST', `recurring/${kind}/${made.id}`, { body: { name: 'Percent', percentage: 43440, duration: 2 } });
      expect(updated).toMatchObject({ percentage: 43440, amount: 0, duration: 2 });
      await sdkCall(shop.secretKey, 'DELETE', `recurring/${kind}/${made.id}`);
      const gone = await sdkCall(shop.secretKey, 'GET', `recurring/${kind}/${made.id}`).catch((e: unknown) => e);
      expect((gone as SdkError).isNotFound()).toBe(true);
    }
  });
});

describe("FluidPay's SDK: Plans and Subscriptions", () => {
  it('Plans.Create/Get/List/Update/Delete, Subscriptions.Create/Get/Search/Update, the status calls and Delete work untouched', async () => {
    const addOn = await doOne<AdjustmentT>(Adjustment, 'POST', 'recurring/addon', { body: { name: 'Setup', amount: 500, duration: 1 } });
    const discount = await doOne<AdjustmentT>(Adjustment, 'POST', 'recurring/discount', { body: { name: 'Loyal', percentage: 10000, duration: 0 } });
    // PlanRequest: charge_on_day omitempty (false is not sent); PlanAdjustment: only id.
    const plan = await doOne<PlanT>(Plan, 'POST', 'recurring/plan', {
      body: { name: 'Gold', description: 'monthly gold', amount: 2000, billing_cycle_interval: 1, billing_frequency: 'monthly', billing_days: '1', duration: 0, add_ons: [{ id: addOn.id }], discounts: [{ id: discount.id }] },
    });
    expect(plan).toMatchObject({ amount: 2000, billing_days: '1', total_add_ons: 500, total_discounts: 200 });
    expect(plan.add_ons[0]).toMatchObject({ id: addOn.id, amount: 500, duration: 1 });
    expect((await doOne<PlanT>(Plan, 'GET', `recurring/plan/${plan.id}`)).id).toBe(plan.id);
    expect((await doList<PlanT>(Plan, 'GET', 'recurring/plans')).data.map((p) => p.id)).toContain(plan.id);
    const updatedPlan = await doOne<PlanUpdated>(Plan, 'POST', `recurring/plan/${plan.id}`, {
      // billing_cycle_interval is not omitempty: 0 when the caller left it unset, taken as 1.
      body: { name: 'Gold', amount: 2500, billing_cycle_interval: 0, billing_frequency: 'twice_monthly', billing_days: '1,15', duration: 12 },
    });
    expect(updatedPlan).toMatchObject({ amount: 2500, billing_cycle_interval: 1, billing_days: '1,15', add_ons: [], discounts: [] });

    const customer = await customerWithCard(shop);
    // SubscriptionRequest: the customer nested, next_bill_date "YYYY-MM-DD".
    const next = new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10);
    const subscription = await doOne<SubscriptionT>(Subscription, 'POST', 'recurring/subscription', {
      body: { plan_id: plan.id, description: 'gold for fred', customer: { id: customer.id, payment_method_type: 'card', payment_method_id: customer.methodId }, next_bill_date: next, add_ons: [{ id: addOn.id }] },
    });
    expect(subscription).toMatchObject({ plan_id: plan.id, status: 'active', amount: 2500, next_bill_date: next, customer: { id: customer.id, payment_method_id: customer.methodId }, total_adds: 500 });
    expect((await doOne<SubscriptionT>(Subscription, 'GET', `recurring/subscription/${subscription.id}`)).id).toBe(subscription.id);

    // SubscriptionSearchRequest: {operator, value} filters, the customer nested, a day range.
    const found = await doList<SubscriptionT>(Subscription, 'POST', 'recurring/subscription/search', {
      plan_id: Equal(plan.id),
      customer: { id: Equal(customer.id) },
      status: Equal('active'),
      next_bill_date: Day(new Date(`${next}T12:00:00Z`)),
    });
    expect(found.data.map((s) => s.id)).toEqual([subscription.id]);
    expect(found.totalCount).toBe(1);

    // Update sends SubscriptionRequest whole: `customer` is not omitempty, so its id is "" when unset.
    const updated = await doOne<SubscriptionT>(Subscription, 'POST', `recurring/subscription/${subscription.id}`, { body: { customer: { id: '' }, amount: 3000 } });
    expect(updated).toMatchObject({ amount: 3000, customer: { id: customer.id, payment_method_id: customer.methodId } });

    const status = (name: string, query?: Record<string, string>) => doOne<SubscriptionT>(Subscription, 'GET', `recurring/subscription/${subscription.id}/status/${name}`, query ? { query } : {});
    expect((await status('paused')).status).toBe('paused');
    expect((await status('past_due')).status).toBe('past_due');
    const later = new Date(Date.now() + 40 * 86_400_000).toISOString().slice(0, 10);
    expect(await status('active', { next_bill_date: later })).toMatchObject({ status: 'active', next_bill_date: later });
    expect((await status('completed')).status).toBe('completed');
    const other = await doOne<SubscriptionT>(Subscription, 'POST', 'recurring/subscription', { body: { plan_id: plan.id, customer: { id: customer.id } } });
    expect((await doOne<SubscriptionT>(Subscription, 'GET', `recurring/subscription/${other.id}/status/cancelled`)).status).toBe('cancelled');

    await sdkCall(shop.secretKey, 'DELETE', `recurring/subscription/${subscription.id}`);
    await sdkCall(shop.secretKey, 'DELETE', `recurring/plan/${plan.id}`);
    const gone = await sdkCall(shop.secretKey, 'GET', `recurring/plan/${plan.id}`).catch((e: unknown) => e);
    expect((gone as SdkError).isNotFound()).toBe(true);
  });
});
