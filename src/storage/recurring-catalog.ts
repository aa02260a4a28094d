/**
 * D1 access for recurring billing's catalog: add-ons and discounts (`recurring_adjustments`) and
 * plans (`recurring_plans`). Every query is scoped by merchant id. Lists are answered a page at a
 * time (at most LIST_PAGE rows), never a whole table.
 */
import type { AdjustmentView, AppliedAdjustment } from '../schemas/recurring';

export type AdjustmentKind = 'addon' | 'discount';

/** The most rows one list answers (D1 answers stay small: platform-limits.ts, D1's 2 MB row/answer bounds are far off). */
export const LIST_PAGE = 100;

export async function insertAdjustment(db: D1Database, merchantId: string, kind: AdjustmentKind, view: AdjustmentView): Promise<void> {
  await db
    .prepare(
      `INSERT INTO recurring_adjustments (merchant_id, kind, id, name, description, amount, percentage, duration, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(merchantId, kind, view.id, view.name, view.description, view.amount, view.percentage, view.duration, view.created_at, view.updated_at)
    .run();
}

export async function updateAdjustment(db: D1Database, merchantId: string, kind: AdjustmentKind, view: AdjustmentView): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE recurring_adjustments SET name = ?, description = ?, amount = ?, percentage = ?, duration = ?, updated_at = ?
       WHERE merchant_id = ? AND kind = ? AND id = ?`,
    )
    .bind(view.name, view.description, view.amount, view.percentage, view.duration, view.updated_at, merchantId, kind, view.id)
    .run();
  return result.meta.changes > 0;
}

export async function findAdjustments(db: D1Database, merchantId: string, kind: AdjustmentKind, ids: string[]): Promise<Map<string, AdjustmentView>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .prepare(
      `SELECT id, name, description, amount, percentage, duration, created_at, updated_at FROM recurring_adjustments
       WHERE merchant_id = ? AND kind = ? AND id IN (SELECT value FROM json_each(?))`,
    )
    .bind(merchantId, kind, JSON.stringify(ids))
    .all<AdjustmentView>();
  return new Map(rows.results.map((row) => [row.id, row]));
}

export async function listAdjustments(db: D1Database, merchantId: string, kind: AdjustmentKind): Promise<{ items: AdjustmentView[]; total: number }> {
  const [rows, count] = await db.batch([
    db
      .prepare(
        `SELECT id, name, description, amount, percentage, duration, created_at, updated_at FROM recurring_adjustments
         WHERE merchant_id = ? AND kind = ? ORDER BY created_at, id LIMIT ?`,
      )
      .bind(merchantId, kind, LIST_PAGE),
    db.prepare('SELECT COUNT(*) AS total FROM recurring_adjustments WHERE merchant_id = ? AND kind = ?').bind(merchantId, kind),
  ]);
  return { items: (rows?.results ?? []) as AdjustmentView[], total: Number((count?.results[0] as { total: number } | undefined)?.total ?? 0) };
}

export async function deleteAdjustment(db: D1Database, merchantId: string, kind: AdjustmentKind, id: string): Promise<boolean> {
  const result = await db.prepare('DELETE FROM recurring_adjustments WHERE merchant_id = ? AND kind = ? AND id = ?').bind(merchantId, kind, id).run();
  return result.meta.changes > 0;
}

export interface PlanRecord {
  id: string;
  name: string;
  description: string;
  amount: number;
  billing_cycle_interval: number;
  billing_frequency: 'monthly' | 'twice_monthly' | 'daily';
  billing_days: string;
  charge_on_day: boolean;
  duration: number;
  add_ons: AppliedAdjustment[];
  discounts: AppliedAdjustment[];
  created_at: string;
  updated_at: string;
}

interface PlanRow extends Omit<PlanRecord, 'charge_on_day' | 'add_ons' | 'discounts'> {
  charge_on_day: number;
  add_ons: string;
  discounts: string;
}

function toPlan(row: PlanRow): PlanRecord {
  return { ...row, charge_on_day: row.charge_on_day === 1, add_ons: JSON.parse(row.add_ons) as AppliedAdjustment[], discounts: JSON.parse(row.discounts) as AppliedAdjustment[] };
}

const PLAN_COLUMNS =
  'id, name, description, amount, billing_cycle_interval, billing_frequency, billing_days, charge_on_day, duration, add_ons, discounts, created_at, updated_at';

export async function upsertPlan(db: D1Database, merchantId: string, plan: PlanRecord, mode: 'insert' | 'update'): Promise<boolean> {
  const values = [
    plan.name,
    plan.description,
    plan.amount,
    plan.billing_cycle_interval,
    plan.billing_frequency,
    plan.billing_days,
    plan.charge_on_day ? 1 : 0,
    plan.duration,
    JSON.stringify(plan.add_ons),
    JSON.stringify(plan.discounts),
  ];
  if (mode === 'insert') {
    await db
      .prepare(`INSERT INTO recurring_plans (merchant_id, ${PLAN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .bind(merchantId, plan.id, ...values, plan.created_at, plan.updated_at)
      .run();
    return true;
  }
  const result = await db
    .prepare(
      `UPDATE recurring_plans SET name = ?, description = ?, amount = ?, billing_cycle_interval = ?, billing_frequency = ?, billing_days = ?,
       charge_on_day = ?, duration = ?, add_ons = ?, discounts = ?, updated_at = ? WHERE merchant_id = ? AND id = ?`,
    )
    .bind(...values, plan.updated_at, merchantId, plan.id)
    .run();
  return result.meta.changes > 0;
}

export async function findPlan(db: D1Database, merchantId: string, id: string): Promise<PlanRecord | null> {
  const row = await db.prepare(`SELECT ${PLAN_COLUMNS} FROM recurring_plans WHERE merchant_id = ? AND id = ?`).bind(merchantId, id).first<PlanRow>();
  return row ? toPlan(row) : null;
}

export async function listPlans(db: D1Database, merchantId: string): Promise<{ items: PlanRecord[]; total: number }> {
  const [rows, count] = await db.batch([
    db.prepare(`SELECT ${PLAN_COLUMNS} FROM recurring_plans WHERE merchant_id = ? ORDER BY created_at, id LIMIT ?`).bind(merchantId, LIST_PAGE),
    db.prepare('SELECT COUNT(*) AS total FROM recurring_plans WHERE merchant_id = ?').bind(merchantId),
  ]);
  return { items: ((rows?.results ?? []) as PlanRow[]).map(toPlan), total: Number((count?.results[0] as { total: number } | undefined)?.total ?? 0) };
}

export async function deletePlan(db: D1Database, merchantId: string, id: string): Promise<boolean> {
  const result = await db.prepare('DELETE FROM recurring_plans WHERE merchant_id = ? AND id = ?').bind(merchantId, id).run();
  return result.meta.changes > 0;
}
