import { beforeAll, describe, expect, it } from 'vitest';
import { createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { created, customerWithCard, okData, recurring, type Adjustment, type Plan, type Subscription } from '../helpers/recurring';

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Recurring Shop' });
  other = await createMerchant({ name: 'Other Shop' });
});

const today = () => new Date().toISOString().slice(0, 10);

describe('add-ons and discounts', () => {
  it('are created, read, replaced, listed and deleted at FluidPay paths, per merchant', async () => {
    const addOn = await created<Adjustment>(recurring(shop, 'POST', '/addon', { name: 'Support', amount: 500, duration: 3 }));
    expect(addOn).toMatchObject({ name: 'Support', amount: 500, percentage: 0, duration: 3 });
    expect(await okData<Adjustment>(recurring(shop, 'GET', `/addon/${addOn.id}`))).toMatchObject({ id: addOn.id, amount: 500 });
    const replaced = await okData<Adjustment>(recurring(shop, 'POST', `/addon/${addOn.id}`, { name: 'Support+', percentage: 12_500, duration: 0 }));
    expect(replaced).toMatchObject({ name: 'Support+', amount: 0, percentage: 12_500, duration: 0 });
    expect((await recurring(other, 'GET', `/addon/${addOn.id}`)).status).toBe(404);
    const discount = await created<Adjustment>(recurring(shop, 'POST', '/discount', { name: 'Intro', percentage: 50_000, duration: 1 }));
    // An add-on is not a discount: each has its own ids.
    expect((await recurring(shop, 'GET', `/discount/${addOn.id}`)).status).toBe(404);
    const list = await (await recurring(shop, 'GET', '/addons')).json<Envelope<Adjustment[]> & { total_count: number }>();
    expect(list.data.map((a) => a.id)).toContain(addOn.id);
    expect(list.total_count).toBe(list.data.length);
    expect((await okData<{ deleted: boolean }>(recurring(shop, 'DELETE', `/discount/${discount.id}`))).deleted).toBe(true);
    expect((await recurring(shop, 'GET', `/discount/${discount.id}`)).status).toBe(404);
  });

  it('refuse an amount and a percentage together, or neither, naming the field', async () => {
    const both = await recurring(shop, 'POST', '/addon', { name: 'x', amount: 5, percentage: 5, duration: 0 });
    expect(both.status).toBe(400);
    expect((await both.json<Envelope>()).errors).toEqual([{ field: 'percentage', msg: 'give amount or percentage, never both' }]);
    const neither = await recurring(shop, 'POST', '/discount', { name: 'x', duration: 0 });
    expect(neither.status).toBe(400);
    expect((await neither.json<Envelope>()).errors?.[0]?.field).toBe('amount');
  });
});

describe('plans', () => {
  it('carry their add-ons and discounts resolved with overrides, and their totals', async () => {
    const addOn = await created<Adjustment>(recurring(shop, 'POST', '/addon', { name: 'Setup', amount: 1000, duration: 1 }));
    const discount = await created<Adjustment>(recurring(shop, 'POST', '/discount', { name: 'Loyal', percentage: 10_000, duration: 0 }));
    const plan = await created<Plan>(
      recurring(shop, 'POST', '/plan', {
        name: 'Gold',
        amount: 3000,
        billing_cycle_interval: 1,
        billing_frequency: 'twice_monthly',
        billing_days: '15,1',
        duration: 12,
        add_ons: [{ id: addOn.id, amount: 700 }],
        discounts: [{ id: discount.id }],
      }),
    );
    expect(plan).toMatchObject({ amount: 3000, billing_days: '1,15', total_add_ons: 700, total_discounts: 300 });
    expect(plan.add_ons).toEqual([{ id: addOn.id, name: 'Setup', description: '', amount: 700, percentage: 0, duration: 1 }]);
    expect((await okData<Plan>(recurring(shop, 'GET', `/plan/${plan.id}`))).total_add_ons).toBe(700);
    const plans = await (await recurring(shop, 'GET', '/plans')).json<{ data: Plan[]; total_count: number }>();
    expect(plans.data.map((p) => p.id)).toContain(plan.id);
    expect((await recurring(other, 'GET', `/plan/${plan.id}`)).status).toBe(404);
  });

  it('refuse billing days that do not fit the frequency and unknown add-ons, naming each field', async () => {
    const response = await recurring(shop, 'POST', '/plan', {
      name: 'Bad',
      amount: 100,
      billing_frequency: 'monthly',
      billing_days: '1,15',
      add_ons: [{ id: 'nosuchaddon' }],
    });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).errors?.map((e) => e.field)).toEqual(['billing_days', 'add_ons.0.id']);
  });
});

describe('subscriptions', () => {
  it('bill a vault customer’s default card on the plan’s fields, its own overriding them', async () => {
    const plan = await created<Plan>(recurring(shop, 'POST', '/plan', { name: 'Basic', amount: 1500, billing_frequency: 'monthly', billing_days: '0', duration: 0 }));
    const customer = await customerWithCard(shop);
    const subscription = await created<Subscription>(recurring(shop, 'POST', '/subscription', { plan_id: plan.id, customer: { id: customer.id }, amount: 1200 }));
    expect(subscription).toMatchObject({
      plan_id: plan.id,
      status: 'active',
      amount: 1200,
      billing_frequency: 'monthly',
      billing_days: '0',
      customer: { id: customer.id, payment_method_id: customer.methodId, payment_method_type: 'card' },
      billings: 0,
    });
    // The last day of this month, a UTC day, is the first bill date.
    const now = new Date();
    const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).toISOString().slice(0, 10);
    expect(subscription.next_bill_date).toBe(last);
    expect((await recurring(other, 'GET', `/subscription/${subscription.id}`)).status).toBe(404);
  });

  it('charge_on_day bills today and then on today’s day of the month', async () => {
    const customer = await customerWithCard(shop);
    const subscription = await created<Subscription>(
      recurring(shop, 'POST', '/subscription', { customer: { id: customer.id }, amount: 900, billing_frequency: 'monthly', charge_on_day: true }),
    );
    expect(subscription.next_bill_date).toBe(today());
    expect(subscription.billing_days).toBe(String(Number(today().slice(8))));
  });

  it('refuse an unknown customer, a method the customer lacks, no amount without a plan and a past date', async () => {
    const customer = await customerWithCard(shop);
    const cases: [unknown, string][] = [
      [{ customer: { id: 'nobody' }, amount: 100 }, 'customer.id'],
      [{ customer: { id: customer.id, payment_method_id: 'nomethod' }, amount: 100 }, 'customer.payment_method_id'],
      [{ customer: { id: customer.id } }, 'amount'],
      [{ customer: { id: customer.id }, amount: 100, next_bill_date: '2020-01-01' }, 'next_bill_date'],
      [{ customer: { id: customer.id }, amount: 100, plan_id: 'noplan' }, 'plan_id'],
    ];
    for (const [body, field] of cases) {
      const response = await recurring(shop, 'POST', '/subscription', body);
      expect(response.status, field).toBe(400);
      expect((await response.json<Envelope>()).errors?.map((e) => e.field), field).toContain(field);
    }
    // Another merchant's customer is nobody here.
    const response = await recurring(other, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100 });
    expect(response.status).toBe(400);
  });

  it('are updated, searched with FluidPay filters, paused, resumed, cancelled and deleted', async () => {
    const plan = await created<Plan>(recurring(shop, 'POST', '/plan', { name: 'Search', amount: 100, billing_frequency: 'daily', billing_days: '0' }));
    const customer = await customerWithCard(shop);
    const a = await created<Subscription>(recurring(shop, 'POST', '/subscription', { plan_id: plan.id, customer: { id: customer.id } }));
    const b = await created<Subscription>(recurring(shop, 'POST', '/subscription', { plan_id: plan.id, customer: { id: customer.id }, next_bill_date: '2099-01-01' }));
    const updated = await okData<Subscription>(recurring(shop, 'POST', `/subscription/${a.id}`, { amount: 250, description: 'more' }));
    expect(updated).toMatchObject({ amount: 250, plan_id: plan.id, customer: { id: customer.id } });

    const search = async (body: unknown) => {
      const response = await recurring(shop, 'POST', '/subscription/search', body);
      expect(response.status).toBe(200);
      const answer = await response.json<{ data: Subscription[]; total_count: number }>();
      return { ids: answer.data.map((s) => s.id).sort(), total: answer.total_count };
    };
    expect(await search({ plan_id: { operator: '=', value: plan.id } })).toEqual({ ids: [a.id, b.id].sort(), total: 2 });
    expect(await search({ customer: { id: { operator: '=', value: customer.id } }, next_bill_date: { start_date: '2098-12-31T00:00:00Z' } })).toEqual({ ids: [b.id], total: 1 });
    expect((await search({ plan_id: { operator: '=', value: plan.id }, limit: 1 })).total).toBe(2);

    const paused = await okData<Subscription>(recurring(shop, 'GET', `/subscription/${a.id}/status/paused`));
    expect(paused.status).toBe('paused');
    expect(await search({ plan_id: { operator: '=', value: plan.id }, status: { operator: '=', value: 'paused' } })).toEqual({ ids: [a.id], total: 1 });
    const resumed = await okData<Subscription>(recurring(shop, 'GET', `/subscription/${a.id}/status/active?next_bill_date=2099-02-03`));
    expect(resumed).toMatchObject({ status: 'active', next_bill_date: '2099-02-03' });
    const cancelled = await okData<Subscription>(recurring(shop, 'GET', `/subscription/${a.id}/status/cancelled`));
    expect(cancelled).toMatchObject({ status: 'cancelled', next_bill_date: '' });
    // Cancelled is final.
    expect((await recurring(shop, 'GET', `/subscription/${a.id}/status/active`)).status).toBe(409);
    expect((await recurring(shop, 'GET', `/subscription/${a.id}/status/stopped`)).status).toBe(400);

    expect((await okData<{ deleted: boolean }>(recurring(shop, 'DELETE', `/subscription/${b.id}`))).deleted).toBe(true);
    expect((await recurring(shop, 'GET', `/subscription/${b.id}`)).status).toBe(404);
  });
});
