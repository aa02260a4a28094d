import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm } from 'cloudflare:test';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { runDailyCron } from '../helpers/cron';
import { createEndpoint, receiver } from '../helpers/webhooks';
import type { TransactionEventMessage } from '../../src/schemas/webhooks';
import { transactionExport } from '../../src/services/search/exports';
import { merchantsWithDue } from '../../src/storage/recurring-subscriptions';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { created, customerWithCard, okData, recurring, type Adjustment, type Plan, type Subscription } from '../helpers/recurring';
import { billDue, LEASE_MS, recurringBillingName } from '../../src/services/recurring/billing';
import { addDays } from '../../src/services/recurring/calendar';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';
import type { BillResult } from '../../src/schemas/recurring';

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Billing Shop' });
});

const today = () => utcDay(new Date());

async function bill(date?: string, merchant = shop): Promise<BillResult> {
  const response = await admin('POST', `/admin/merchants/${merchant.id}/bill`, date === undefined ? undefined : { date });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return (JSON.parse(text) as Envelope<BillResult>).data;
}

async function subscribe(body: Record<string, unknown>, card = '4111111111111111'): Promise<Subscription> {
  const customer = await customerWithCard(shop, card);
  return created<Subscription>(recurring(shop, 'POST', '/subscription', { customer: { id: customer.id }, ...body }));
}

const getSubscription = (id: string) => okData<Subscription>(recurring(shop, 'GET', `/subscription/${id}`));

interface Found {
  id: string;
  amount: number;
  subscription_id: string | null;
  response: string;
  status: string;
}
async function chargesOf(subscriptionId: string): Promise<Found[]> {
  const response = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { subscription_id: { operator: '=', value: subscriptionId }, limit: 100 } });
  expect(response.status).toBe(200);
  return (await response.json<{ data: Found[] }>()).data;
}

/** How often the sandbox processor was asked to charge under the subscription's keys today. */
async function processorCalls(subscriptionId: string): Promise<number> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(shop.id), today()));
  return (await acquirer.list()).filter((row) => row.idempotencyKey.includes(subscriptionId)).reduce((sum, row) => sum + row.chargeCalls, 0);
}

describe('billing on the day', () => {
  it('charges a subscription due today once through the engine, however often billing runs; the charge carries subscription_id', async () => {
    const plan = await created<Plan>(recurring(shop, 'POST', '/plan', { name: 'Monthly', amount: 2500, billing_frequency: 'monthly', billing_days: '1' }));
    const subscription = await subscribe({ plan_id: plan.id, charge_on_day: true });
    expect(subscription.next_bill_date).toBe(today());

    const first = await bill();
    expect(first).toMatchObject({ date: today(), finished: true });
    expect(first.charged).toBeGreaterThanOrEqual(1);
    const second = await bill();
    expect(second.charged).toBe(0);

    const charges = await chargesOf(subscription.id);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ amount: 2500, subscription_id: subscription.id, response: 'approved', status: 'pending_settlement' });
    expect(await processorCalls(subscription.id)).toBe(1);

    const after = await getSubscription(subscription.id);
    expect(after).toMatchObject({ status: 'active', billings: 1, retries: 0, last_transaction_id: charges[0]?.id, last_decline: null });
    // charge_on_day: the day of the month of creation, next month (or the month's last day).
    expect(after.next_bill_date > today()).toBe(true);
    const record = await okData<{ subscription_id: string }>(call('GET', `/api/transaction/${charges[0]?.id}`, { key: shop.secretKey }));
    expect(record.subscription_id).toBe(subscription.id);
  });

  it('two billing runs at once charge a cycle once', async () => {
    const subscription = await subscribe({ amount: 1234, charge_on_day: true });
    const runs = await Promise.all([billDue(env, shop.id, today(), () => new Date()), billDue(env, shop.id, today(), () => new Date())]);
    expect(runs.every((run) => run?.finished)).toBe(true);
    expect(await chargesOf(subscription.id)).toHaveLength(1);
    expect(await processorCalls(subscription.id)).toBe(1);
    expect((await getSubscription(subscription.id)).billings).toBe(1);
  });

  it('a run that crashed after charging, before recording it, is not charged again when billing restarts', async () => {
    const subscription = await subscribe({ amount: 4321, charge_on_day: true });
    let failed = false;
    // D1's write of the outcome fails once: the charge is made, the subscription still says due.
    const crashing = {
      ...env,
      DB: new Proxy(env.DB, {
        get(target, property) {
          if (property === 'batch' && !failed) {
            return () => {
              failed = true;
              throw new Error('the run stopped here');
            };
          }
          const value = Reflect.get(target, property) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      }),
    };
    await expect(billDue(crashing, shop.id, today(), () => new Date())).rejects.toThrow('the run stopped here');
    expect(await processorCalls(subscription.id)).toBe(1);
    expect((await getSubscription(subscription.id)).billings).toBe(0);
    // While the crashed run's lease holds, another run leaves it alone.
    expect((await billDue(env, shop.id, today(), () => new Date()))?.charged).toBe(0);
    // After the lease, the restarted run is answered the recorded charge and records it.
    const later = () => new Date(Date.now() + LEASE_MS + 1000);
    const restarted = await billDue(env, shop.id, today(), later);
    expect(restarted?.charged).toBeGreaterThanOrEqual(1);
    expect(await processorCalls(subscription.id)).toBe(1);
    expect(await chargesOf(subscription.id)).toHaveLength(1);
    expect((await getSubscription(subscription.id)).billings).toBe(1);
  });

  it('applies add-ons and discounts for their durations, and a duration of billings ends it completed', async () => {
    const addOn = await created<Adjustment>(recurring(shop, 'POST', '/addon', { name: 'Setup fee', amount: 1000, duration: 1 }));
    const discount = await created<Adjustment>(recurring(shop, 'POST', '/discount', { name: 'Two months 10% off', percentage: 10_000, duration: 2 }));
    const start = addDays(today(), 1);
    const subscription = await subscribe({
      amount: 5000,
      billing_frequency: 'daily',
      billing_cycle_interval: 1,
      duration: 3,
      next_bill_date: start,
      add_ons: [{ id: addOn.id }],
      discounts: [{ id: discount.id }],
    });
    expect(subscription).toMatchObject({ total_adds: 1000, total_discounts: 500 });
    expect((await bill()).charged).toBe(0);
    for (const day of [start, addDays(start, 1), addDays(start, 2), addDays(start, 3)]) await bill(day);
    const amounts = (await chargesOf(subscription.id)).map((charge) => charge.amount).sort((a, b) => b - a);
    // 5000 + 1000 - 500; 5000 - 500; 5000; and no fourth billing.
    expect(amounts).toEqual([5500, 4500, 5000].sort((a, b) => b - a));
    const after = await getSubscription(subscription.id);
    expect(after).toMatchObject({ status: 'completed', billings: 3, next_bill_date: '' });
  });

  it('bills a date, not a day twice: a billing run on a later date bills a missed cycle once and goes on from the schedule', async () => {
    const start = addDays(today(), 1);
    const subscription = await subscribe({ amount: 700, billing_frequency: 'daily', next_bill_date: start });
    const result = await bill(addDays(start, 5));
    expect(result.charged).toBeGreaterThanOrEqual(1);
    expect(await chargesOf(subscription.id)).toHaveLength(1);
    expect((await getSubscription(subscription.id)).next_bill_date).toBe(addDays(start, 6));
  });
});

describe('declines', () => {
  it('a declined cycle makes the subscription failing, is retried 2, 4, 6 and 8 days after its date, then failed', async () => {
    const start = addDays(today(), 1);
    const subscription = await subscribe({ amount: 800, billing_frequency: 'monthly', billing_days: '1', next_bill_date: start }, '4000000000009995');
    const seen: { day: string; declined: number; status: string; next: string; retries: number }[] = [];
    for (let offset = 0; offset <= 12; offset++) {
      const day = addDays(start, offset);
      const result = await bill(day);
      const after = await getSubscription(subscription.id);
      if (result.declined > 0) seen.push({ day, declined: result.declined, status: after.status, next: after.next_bill_date, retries: after.retries });
    }
    expect(seen).toEqual([
      { day: start, declined: 1, status: 'failing', next: addDays(start, 2), retries: 1 },
      { day: addDays(start, 2), declined: 1, status: 'failing', next: addDays(start, 4), retries: 2 },
      { day: addDays(start, 4), declined: 1, status: 'failing', next: addDays(start, 6), retries: 3 },
      { day: addDays(start, 6), declined: 1, status: 'failing', next: addDays(start, 8), retries: 4 },
      { day: addDays(start, 8), declined: 1, status: 'failed', next: '', retries: 5 },
    ]);
    const after = await getSubscription(subscription.id);
    expect(after.last_decline).toMatchObject({ processor_response_code: '51', never_retry: false });
    expect(await chargesOf(subscription.id)).toHaveLength(5);
  });

  for (const [card, code] of [
    ['4000000000009045', '04'],
    ['4000000000009987', '41'],
    ['4000000000009979', '43'],
    ['4000000000009052', '46'],
    ['5105100000009903', '05'],
  ] as const) {
    it(`never retries a decline the networks forbid retrying (${code} on ${card.slice(-4)}): failed at once`, async () => {
      const start = addDays(today(), 1);
      const subscription = await subscribe({ amount: 900, billing_frequency: 'daily', next_bill_date: start }, card);
      for (let offset = 0; offset <= 10; offset++) await bill(addDays(start, offset));
      const after = await getSubscription(subscription.id);
      expect(after).toMatchObject({ status: 'failed', retries: 1 });
      expect(after.last_decline).toMatchObject({ processor_response_code: code, never_retry: true });
      expect(await chargesOf(subscription.id)).toHaveLength(1);
    });
  }

  it('failing subscriptions are found by status, with their last decline', async () => {
    const start = addDays(today(), 1);
    const subscription = await subscribe({ amount: 600, next_bill_date: start }, '4000000000000002');
    await bill(start);
    const response = await recurring(shop, 'POST', '/subscription/search', { status: { operator: '=', value: 'failing' } });
    const found = (await response.json<{ data: Subscription[] }>()).data.find((s) => s.id === subscription.id);
    expect(found?.last_decline).toMatchObject({ processor_response_code: '05', never_retry: false });
  });
});

describe('POST /admin/merchants/{id}/bill', () => {
  it('answers 404 for an unknown merchant and 400 for a date that is not one', async () => {
    expect((await admin('POST', '/admin/merchants/nosuchmerchant000000/bill')).status).toBe(404);
    const response = await admin('POST', `/admin/merchants/${shop.id}/bill`, { date: '2026-02-30' });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).errors?.[0]?.field).toBe('date');
  });
});

describe('billing in bounded steps', () => {
  it('a step stops at its budget; the hourly run starts the merchant’s billing object, whose alarm ticks bill the rest once', async () => {
    const merchant = await createMerchant({ name: 'Stepped Shop' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const customer = await customerWithCard(merchant);
      ids.push((await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100 + i, charge_on_day: true }))).id);
    }
    const step = await billDue(env, merchant.id, today(), () => new Date(), 1);
    expect(step).toMatchObject({ charged: 1, finished: false });

    await runDailyCron(new Date());
    const stub = env.RECURRING_BILLING.getByName(recurringBillingName(merchant.id));
    for (let tick = 0; tick < 10 && (await runDurableObjectAlarm(stub)); tick++);
    await vi.waitFor(async () => {
      const billed = await Promise.all(ids.map((id) => okData<Subscription>(recurring(merchant, 'GET', `/subscription/${id}`))));
      expect(billed.map((s) => s.billings)).toEqual([1, 1, 1]);
    });
    for (const id of ids) {
      const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body: { subscription_id: { operator: '=', value: id } } });
      expect((await response.json<{ data: unknown[] }>()).data).toHaveLength(1);
    }
  });
});

describe('the console', () => {
  it('lists the subscriptions needing attention with their last decline, only the merchant’s own, with a session', async () => {
    const merchant = await createMerchant({ name: 'Console Attention Shop' });
    const customer = await customerWithCard(merchant, '4000000000009995');
    const failing = await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100, charge_on_day: true }));
    const fine = await customerWithCard(merchant);
    await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: fine.id }, amount: 100, charge_on_day: true }));
    expect((await bill(undefined, merchant)).declined).toBe(1);

    const session = await call('POST', '/console/session', { body: { api_key: merchant.secretKey }, headers: { Origin: 'http://binbatch.test' } });
    const cookie = (session.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
    const response = await call('GET', '/console/subscriptions/attention', { headers: { Cookie: cookie } });
    expect(response.status).toBe(200);
    const list = (await response.json<{ data: Subscription[] }>()).data;
    expect(list.map((s) => [s.id, s.status])).toEqual([[failing.id, 'failing']]);
    expect(list[0]?.last_decline).toMatchObject({ processor_response_code: '51', never_retry: false });
    expect((await call('GET', '/console/subscriptions/attention')).status).toBe(401);
  });
});

describe('webhooks', () => {
  it('each billing sends one transaction_create event carrying subscription_id; a second run sends none', async () => {
    const merchant = await createMerchant({ name: 'Webhook Billing Shop' });
    const endpoint = await createEndpoint(merchant.secretKey, { url: receiver().url, events: ['transaction_create'] });
    const captured: TransactionEventMessage[] = [];
    vi.spyOn(env.TRANSACTION_EVENT_QUEUE, 'sendBatch').mockImplementation(async (messages) => {
      for (const message of messages) captured.push(message.body as TransactionEventMessage);
      return undefined as never;
    });
    try {
      const customer = await customerWithCard(merchant);
      const subscription = await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: customer.id }, amount: 777, charge_on_day: true }));
      expect((await bill(undefined, merchant)).charged).toBe(1);
      expect((await bill(undefined, merchant)).charged).toBe(0);
      expect(captured).toHaveLength(1);
      expect(captured[0]).toMatchObject({ endpointId: endpoint.id, event: { type: 'transaction_create', data: { subscription_id: subscription.id, amount: 777 } } });
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe('exports', () => {
  it('an export filtered by subscription_id holds its billings, the subscription_id column filled (the result columns’)', async () => {
    const merchant = await createMerchant({ name: 'Export Billing Shop' });
    const customer = await customerWithCard(merchant);
    const subscription = await created<Subscription>(recurring(merchant, 'POST', '/subscription', { customer: { id: customer.id }, amount: 4242, charge_on_day: true }));
    expect((await bill(undefined, merchant)).charged).toBe(1);
    // A sale of the same customer outside the subscription is not in it.
    expect((await call('POST', '/api/transaction', { key: merchant.secretKey, body: { transaction_type: 'sale', amount: 100, customer_id: customer.id } })).status).toBe(201);
    const started = await call('POST', '/api/transaction/export', { key: merchant.secretKey, body: { subscription_id: { operator: '=', value: subscription.id } } });
    expect(started.status).toBe(202);
    const id = (await started.json<Envelope<{ id: string }>>()).data.id;
    for (let steps = 0; steps < 50; steps++) {
      const { export: row } = await transactionExport(env, id).run(new Date().toISOString());
      if (row?.status !== 'running') break;
    }
    const text = await (await call('GET', `/api/transaction/export/${id}/download`, { key: merchant.secretKey })).text();
    const [header, ...rows] = text.trim().split('\n');
    const column = header?.split(',').indexOf('"subscription_id"') ?? -1;
    expect(column).toBeGreaterThan(0);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.split(',')[column]).toBe(`"${subscription.id}"`);
    expect(rows[0]).toContain('4242');
  });
});

describe('the hourly run’s list of merchants', () => {
  it('names each merchant with something due once, and none with nothing due', async () => {
    const due = await createMerchant({ name: 'Due Shop' });
    const later = await createMerchant({ name: 'Later Shop' });
    for (let i = 0; i < 3; i++) {
      const customer = await customerWithCard(due);
      await created<Subscription>(recurring(due, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100, charge_on_day: true }));
    }
    const customer = await customerWithCard(later);
    await created<Subscription>(recurring(later, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100, next_bill_date: addDays(today(), 3) }));
    const listed = await merchantsWithDue(env.DB, today(), 1000);
    expect(listed.filter((id) => id === due.id)).toHaveLength(1);
    expect(listed).not.toContain(later.id);
    expect(await merchantsWithDue(env.DB, addDays(today(), 3), 1000)).toContain(later.id);
  });
});
