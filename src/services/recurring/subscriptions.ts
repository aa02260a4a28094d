/**
 * Subscriptions of a vault customer's payment method to a plan (or to billing fields of their
 * own): create, read, update, delete, search and FluidPay's status calls. A subscription copies its
 * plan's billing fields when it is created and its own fields override them; a later edit of the
 * plan leaves existing subscriptions as they are (docs/recurring.md, "Subscriptions").
 */
import { randomId } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { FieldError } from '../../schemas/envelope';
import type { SubscriptionCreate, SubscriptionSearch, SubscriptionUpdate, SubscriptionView } from '../../schemas/recurring';
import { findPlan } from '../../storage/recurring-catalog';
import * as store from '../../storage/recurring-subscriptions';
import type { SubscriptionFilter, SubscriptionRecord } from '../../storage/recurring-subscriptions';
import { findCustomer, findPaymentMethod } from '../../storage/vault';
import { billingAmount } from './amounts';
import { firstBillDate, nextBillDateAfter, parseBillingDays, parseDate, utcDay, type BillingSchedule } from './calendar';
import { resolveEntries, type CatalogResult } from './catalog';

export function scheduleOf(record: Pick<SubscriptionRecord, 'billing_frequency' | 'billing_cycle_interval' | 'billing_days'>): BillingSchedule {
  const days = parseBillingDays(record.billing_frequency, record.billing_days);
  return { frequency: record.billing_frequency, interval: record.billing_cycle_interval, days: days.ok ? days.days : [0] };
}

export function subscriptionView(record: SubscriptionRecord): SubscriptionView {
  const amounts = billingAmount(record.amount, record.add_ons, record.discounts, record.billings);
  const ended = record.status === 'completed' || record.status === 'cancelled' || record.status === 'failed';
  return {
    id: record.id,
    plan_id: record.plan_id,
    status: record.status,
    description: record.description,
    customer: {
      id: record.customer_id,
      payment_method_type: record.payment_method_type,
      payment_method_id: record.payment_method_id,
      billing_address_id: record.billing_address_id,
      shipping_address_id: record.shipping_address_id,
    },
    amount: record.amount,
    total_adds: amounts.adds,
    total_discounts: amounts.discounts,
    billing_cycle_interval: record.billing_cycle_interval,
    billing_frequency: record.billing_frequency,
    billing_days: record.billing_days,
    charge_on_day: record.charge_on_day,
    duration: record.duration,
    next_bill_date: ended ? '' : record.next_bill_date,
    add_ons: record.add_ons,
    discounts: record.discounts,
    po_number: record.po_number,
    tax_amount: record.tax_amount,
    tax_exempt: record.tax_exempt,
    billings: record.billings,
    retries: record.retries,
    last_transaction_id: record.last_transaction_id,
    last_decline: record.last_decline,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

type Body = SubscriptionCreate | SubscriptionUpdate;

/** The record a create or an update makes: `base` (the stored one, or the plan's fields) with the body over it. */
async function compose(db: D1Database, merchantId: string, sent: Body, base: SubscriptionRecord | null, now: Date): Promise<CatalogResult<SubscriptionRecord>> {
  const errors: FieldError[] = [];
  // An update's customer with an empty id (FluidPay's SDK sends one on every update) changes nothing.
  const body: Body = sent.customer?.id === '' ? { ...sent, customer: undefined } : sent;
  const planId = body.plan_id ?? base?.plan_id ?? '';
  const plan = body.plan_id !== undefined ? await findPlan(db, merchantId, body.plan_id) : null;
  if (body.plan_id !== undefined && !plan) errors.push({ field: 'plan_id', msg: `no plan ${body.plan_id}` });
  const from = plan ?? base;
  const amount = body.amount ?? from?.amount;
  if (amount === undefined) errors.push({ field: 'amount', msg: 'is required without plan_id' });
  const frequency = body.billing_frequency ?? from?.billing_frequency ?? 'monthly';
  const billingDaysText = body.billing_days ?? from?.billing_days ?? '1';
  const days = parseBillingDays(frequency, billingDaysText);
  if (!days.ok) errors.push({ field: 'billing_days', msg: days.msg });

  // The customer and the method charged: named, or the customer's default.
  const customerId = body.customer?.id ?? base?.customer_id ?? '';
  let method: { id: string; type: 'card' | 'ach' } | null = base && !body.customer ? { id: base.payment_method_id, type: base.payment_method_type } : null;
  if (body.customer) {
    const customer = await findCustomer(db, merchantId, customerId);
    const methodId = body.customer.payment_method_id ?? customer?.default_payment_method_id ?? null;
    const found = customer && methodId ? await findPaymentMethod(db, merchantId, customerId, methodId) : null;
    if (!customer) errors.push({ field: 'customer.id', msg: `no vault customer ${customerId}` });
    else if (!found) errors.push({ field: 'customer.payment_method_id', msg: methodId ? `customer ${customerId} has no payment method ${methodId}` : `customer ${customerId} has no default payment method` });
    else if (body.customer.payment_method_type !== undefined && body.customer.payment_method_type !== found.type) {
      errors.push({ field: 'customer.payment_method_type', msg: `payment method ${found.id} is ${found.type}` });
    } else method = { id: found.id, type: found.type };
  }
  const addOns = body.add_ons !== undefined ? await resolveEntries(db, merchantId, 'addon', body.add_ons, 'add_ons') : { ok: true as const, entries: from?.add_ons ?? [] };
  const discounts = body.discounts !== undefined ? await resolveEntries(db, merchantId, 'discount', body.discounts, 'discounts') : { ok: true as const, entries: from?.discounts ?? [] };
  if (!addOns.ok) errors.push(...addOns.errors);
  if (!discounts.ok) errors.push(...discounts.errors);

  const today = utcDay(now);
  if (body.next_bill_date !== undefined) {
    if (!parseDate(body.next_bill_date)) errors.push({ field: 'next_bill_date', msg: 'must be a calendar date, YYYY-MM-DD' });
    else if (body.next_bill_date < today) errors.push({ field: 'next_bill_date', msg: `must be today (${today}, UTC) or later` });
  }
  if (errors.length > 0 || amount === undefined || !days.ok || !method || !addOns.ok || !discounts.ok) return { ok: false, reason: 'invalid', errors };

  const chargeOnDay = body.charge_on_day ?? from?.charge_on_day ?? false;
  // Charged on the day of creation: a monthly subscription then bills on that day of the month.
  const billingDays = frequency === 'daily' ? billingDaysText : chargeOnDay && !base && frequency === 'monthly' ? String(Number(today.slice(8))) : days.days.join(',');
  const record: SubscriptionRecord = {
    id: base?.id ?? randomId(20),
    plan_id: planId,
    description: body.description ?? base?.description ?? '',
    customer_id: customerId,
    payment_method_id: method.id,
    payment_method_type: method.type,
    billing_address_id: body.customer?.billing_address_id ?? base?.billing_address_id ?? '',
    shipping_address_id: body.customer?.shipping_address_id ?? base?.shipping_address_id ?? '',
    amount,
    billing_cycle_interval: body.billing_cycle_interval || from?.billing_cycle_interval || 1,
    billing_frequency: frequency,
    billing_days: billingDays,
    charge_on_day: chargeOnDay,
    duration: body.duration ?? from?.duration ?? 0,
    add_ons: addOns.entries,
    discounts: discounts.entries,
    po_number: body.po_number ?? base?.po_number ?? '',
    tax_amount: body.tax_amount ?? base?.tax_amount ?? 0,
    tax_exempt: body.tax_exempt ?? base?.tax_exempt ?? false,
    status: base?.status ?? 'active',
    cycle_date: base?.cycle_date ?? '',
    next_bill_date: base?.next_bill_date ?? '',
    billings: base?.billings ?? 0,
    retries: base?.retries ?? 0,
    last_transaction_id: base?.last_transaction_id ?? null,
    last_decline: base?.last_decline ?? null,
    created_at: base?.created_at ?? isoTimestamp(now),
    updated_at: isoTimestamp(now),
  };
  if (body.next_bill_date !== undefined) {
    record.next_bill_date = body.next_bill_date;
    record.cycle_date = body.next_bill_date;
    record.retries = 0;
  } else if (!base) {
    record.next_bill_date = chargeOnDay ? today : firstBillDate(scheduleOf(record), today);
    record.cycle_date = record.next_bill_date;
  }
  return { ok: true, value: record };
}

export async function createSubscription(db: D1Database, merchantId: string, body: SubscriptionCreate, clock: Clock): Promise<CatalogResult<SubscriptionView>> {
  const composed = await compose(db, merchantId, body, null, clock());
  if (!composed.ok) return composed;
  await store.insertSubscription(db, merchantId, composed.value);
  return { ok: true, value: subscriptionView(composed.value) };
}

export async function updateSubscription(db: D1Database, merchantId: string, id: string, body: SubscriptionUpdate, clock: Clock): Promise<CatalogResult<SubscriptionView> | { ok: false; reason: 'conflict' }> {
  const stored = await store.findSubscription(db, merchantId, id);
  if (!stored) return { ok: false, reason: 'not_found' };
  const composed = await compose(db, merchantId, body, stored, clock());
  if (!composed.ok) return composed;
  if (!(await store.replaceSubscription(db, merchantId, composed.value, stored.updated_at))) return { ok: false, reason: 'conflict' };
  return { ok: true, value: subscriptionView(composed.value) };
}

export async function getSubscription(db: D1Database, merchantId: string, id: string): Promise<SubscriptionView | null> {
  const stored = await store.findSubscription(db, merchantId, id);
  return stored ? subscriptionView(stored) : null;
}

/**
 * FluidPay's status calls. `active` resumes billing on `next_bill_date` (given; otherwise the
 * schedule's next day from today on, a failing cycle's retries forgotten); the others stop billing
 * until a call makes it active again. A completed or cancelled subscription stays ended.
 */
export async function setStatus(
  db: D1Database,
  merchantId: string,
  id: string,
  status: 'active' | 'paused' | 'past_due' | 'cancelled' | 'completed',
  nextBillDate: string | undefined,
  clock: Clock,
): Promise<CatalogResult<SubscriptionView> | { ok: false; reason: 'conflict'; msg: string }> {
  const stored = await store.findSubscription(db, merchantId, id);
  if (!stored) return { ok: false, reason: 'not_found' };
  const now = clock();
  const today = utcDay(now);
  if ((stored.status === 'completed' || stored.status === 'cancelled') && status !== stored.status) {
    return { ok: false, reason: 'conflict', msg: `subscription ${id} is ${stored.status}: it cannot become ${status}` };
  }
  const record: SubscriptionRecord = { ...stored, status, updated_at: isoTimestamp(now) };
  if (status === 'active') {
    if (nextBillDate !== undefined && (!parseDate(nextBillDate) || nextBillDate < today)) {
      return { ok: false, reason: 'invalid', errors: [{ field: 'next_bill_date', msg: `must be a calendar date, today (${today}, UTC) or later` }] };
    }
    const next = nextBillDate ?? (stored.next_bill_date >= today ? stored.next_bill_date : nextBillDateAfter(scheduleOf(stored), stored.cycle_date || today, today));
    Object.assign(record, { next_bill_date: next, cycle_date: next, retries: 0 });
  }
  if (!(await store.replaceSubscription(db, merchantId, record, stored.updated_at))) return { ok: false, reason: 'conflict', msg: `subscription ${id} changed meanwhile; ask again` };
  return { ok: true, value: subscriptionView(record) };
}

export async function searchSubscriptions(db: D1Database, merchantId: string, search: SubscriptionSearch): Promise<{ items: SubscriptionView[]; total: number }> {
  const filters: SubscriptionFilter[] = [];
  if (search.plan_id) filters.push({ column: 'plan_id', ...search.plan_id });
  if (search.customer?.id) filters.push({ column: 'customer_id', ...search.customer.id });
  if (search.status) filters.push({ column: 'status', ...search.status });
  const range = { from: search.next_bill_date?.start_date?.slice(0, 10), to: search.next_bill_date?.end_date?.slice(0, 10) };
  // No subscription here has an expiration date: a range on it matches none.
  if (search.expiration_date && (search.expiration_date.start_date || search.expiration_date.end_date)) return { items: [], total: 0 };
  const { items, total } = await store.searchSubscriptions(db, merchantId, filters, range, { limit: search.limit, offset: search.offset });
  return { items: items.map(subscriptionView), total };
}
