/**
 * Add-ons, discounts and plans: created, replaced (FluidPay's POST on the id sends the whole
 * record), read, listed and deleted. A plan's add-on and discount entries name existing ones by id
 * and may override their fields; they are stored resolved (docs/recurring.md, "Plans").
 */
import { randomId } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { FieldError } from '../../schemas/envelope';
import type { AdjustmentBody, AdjustmentRef, AdjustmentView, AppliedAdjustment, PlanBody, PlanView } from '../../schemas/recurring';
import * as store from '../../storage/recurring-catalog';
import type { AdjustmentKind, PlanRecord } from '../../storage/recurring-catalog';
import { billingAmount } from './amounts';
import { parseBillingDays } from './calendar';

export type CatalogResult<T> = { ok: true; value: T } | { ok: false; reason: 'invalid'; errors: FieldError[] } | { ok: false; reason: 'not_found' };

export async function createAdjustment(db: D1Database, merchantId: string, kind: AdjustmentKind, body: AdjustmentBody, clock: Clock): Promise<AdjustmentView> {
  const now = isoTimestamp(clock());
  const view = adjustmentView(randomId(20), body, now, now);
  await store.insertAdjustment(db, merchantId, kind, view);
  return view;
}

export async function replaceAdjustment(db: D1Database, merchantId: string, kind: AdjustmentKind, id: string, body: AdjustmentBody, clock: Clock): Promise<AdjustmentView | null> {
  const existing = (await store.findAdjustments(db, merchantId, kind, [id])).get(id);
  if (!existing) return null;
  const view = adjustmentView(id, body, existing.created_at, isoTimestamp(clock()));
  return (await store.updateAdjustment(db, merchantId, kind, view)) ? view : null;
}

function adjustmentView(id: string, body: AdjustmentBody, createdAt: string, updatedAt: string): AdjustmentView {
  return {
    id,
    name: body.name,
    description: body.description ?? '',
    amount: body.amount ?? 0,
    percentage: body.percentage ?? 0,
    duration: body.duration,
    created_at: createdAt,
    updated_at: updatedAt,
  };
}

/** Entries naming existing add-ons (or discounts) resolved with their overrides; an unknown id is a field error. */
export async function resolveEntries(
  db: D1Database,
  merchantId: string,
  kind: AdjustmentKind,
  refs: AdjustmentRef[] | undefined,
  field: string,
): Promise<{ ok: true; entries: AppliedAdjustment[] } | { ok: false; errors: FieldError[] }> {
  if (!refs || refs.length === 0) return { ok: true, entries: [] };
  const found = await store.findAdjustments(db, merchantId, kind, refs.map((ref) => ref.id));
  const errors: FieldError[] = [];
  const entries: AppliedAdjustment[] = [];
  refs.forEach((ref, index) => {
    const base = found.get(ref.id);
    if (!base) {
      errors.push({ field: `${field}.${index}.id`, msg: `no ${kind === 'addon' ? 'add-on' : 'discount'} ${ref.id}` });
      return;
    }
    // An override of the amount replaces a percentage and the other way round: never both.
    const amount = ref.amount ?? (ref.percentage !== undefined && ref.percentage > 0 ? 0 : base.amount);
    const percentage = ref.percentage ?? (ref.amount !== undefined && ref.amount > 0 ? 0 : base.percentage);
    entries.push({ id: base.id, name: ref.name ?? base.name, description: ref.description ?? base.description, amount, percentage, duration: ref.duration ?? base.duration });
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, entries };
}

export async function savePlan(db: D1Database, merchantId: string, id: string | null, body: PlanBody, clock: Clock): Promise<CatalogResult<PlanView>> {
  const days = parseBillingDays(body.billing_frequency, body.billing_days);
  const errors: FieldError[] = days.ok ? [] : [{ field: 'billing_days', msg: days.msg }];
  const addOns = await resolveEntries(db, merchantId, 'addon', body.add_ons, 'add_ons');
  const discounts = await resolveEntries(db, merchantId, 'discount', body.discounts, 'discounts');
  if (!addOns.ok) errors.push(...addOns.errors);
  if (!discounts.ok) errors.push(...discounts.errors);
  if (errors.length > 0 || !addOns.ok || !discounts.ok) return { ok: false, reason: 'invalid', errors };
  const now = isoTimestamp(clock());
  const existing = id === null ? null : await store.findPlan(db, merchantId, id);
  if (id !== null && !existing) return { ok: false, reason: 'not_found' };
  const plan: PlanRecord = {
    id: id ?? randomId(20),
    name: body.name,
    description: body.description ?? '',
    amount: body.amount,
    billing_cycle_interval: Math.max(1, body.billing_cycle_interval),
    billing_frequency: body.billing_frequency,
    billing_days: body.billing_frequency === 'daily' ? body.billing_days : (days.ok ? days.days : []).join(','),
    charge_on_day: body.charge_on_day ?? false,
    duration: body.duration,
    add_ons: addOns.entries,
    discounts: discounts.entries,
    created_at: existing?.created_at ?? now,
    updated_at: now,
  };
  if (!(await store.upsertPlan(db, merchantId, plan, existing ? 'update' : 'insert'))) return { ok: false, reason: 'not_found' };
  return { ok: true, value: planView(plan) };
}

export function planView(plan: PlanRecord): PlanView {
  const amounts = billingAmount(plan.amount, plan.add_ons, plan.discounts, 0);
  return { ...plan, total_add_ons: amounts.adds, total_discounts: amounts.discounts };
}

export async function getPlan(db: D1Database, merchantId: string, id: string): Promise<PlanView | null> {
  const plan = await store.findPlan(db, merchantId, id);
  return plan ? planView(plan) : null;
}

export async function listPlans(db: D1Database, merchantId: string): Promise<{ items: PlanView[]; total: number }> {
  const { items, total } = await store.listPlans(db, merchantId);
  return { items: items.map(planView), total };
}
