/**
 * D1 access for subscriptions (`recurring_subscriptions`). Every query is scoped by merchant id.
 * The billing run reads the due ones a page at a time through `claimDue`: one UPDATE … RETURNING
 * that leases at most `limit` subscriptions due on or before a day, in (next_bill_date, id) order,
 * so two runs at once never take the same subscription while its lease holds.
 */
import type { AppliedAdjustment, LastDecline, SubscriptionStatus } from '../schemas/recurring';

export interface SubscriptionRecord {
  id: string;
  plan_id: string;
  description: string;
  customer_id: string;
  payment_method_id: string;
  payment_method_type: 'card' | 'ach';
  billing_address_id: string;
  shipping_address_id: string;
  amount: number;
  billing_cycle_interval: number;
  billing_frequency: 'monthly' | 'twice_monthly' | 'daily';
  billing_days: string;
  charge_on_day: boolean;
  duration: number;
  add_ons: AppliedAdjustment[];
  discounts: AppliedAdjustment[];
  po_number: string;
  tax_amount: number;
  tax_exempt: boolean;
  status: SubscriptionStatus;
  cycle_date: string;
  next_bill_date: string;
  billings: number;
  retries: number;
  last_transaction_id: string | null;
  last_decline: LastDecline | null;
  created_at: string;
  updated_at: string;
}

type Row = Omit<SubscriptionRecord, 'charge_on_day' | 'tax_exempt' | 'add_ons' | 'discounts' | 'last_decline'> & {
  charge_on_day: number;
  tax_exempt: number;
  add_ons: string;
  discounts: string;
  last_decline: string | null;
};

const COLUMNS = [
  'id',
  'plan_id',
  'description',
  'customer_id',
  'payment_method_id',
  'payment_method_type',
  'billing_address_id',
  'shipping_address_id',
  'amount',
  'billing_cycle_interval',
  'billing_frequency',
  'billing_days',
  'charge_on_day',
  'duration',
  'add_ons',
  'discounts',
  'po_number',
  'tax_amount',
  'tax_exempt',
  'status',
  'cycle_date',
  'next_bill_date',
  'billings',
  'retries',
  'last_transaction_id',
  'last_decline',
  'created_at',
  'updated_at',
] as const;
const SELECT = COLUMNS.join(', ');

function toRecord(row: Row): SubscriptionRecord {
  return {
    ...row,
    charge_on_day: row.charge_on_day === 1,
    tax_exempt: row.tax_exempt === 1,
    add_ons: JSON.parse(row.add_ons) as AppliedAdjustment[],
    discounts: JSON.parse(row.discounts) as AppliedAdjustment[],
    last_decline: row.last_decline === null ? null : (JSON.parse(row.last_decline) as LastDecline),
  };
}

function values(record: SubscriptionRecord): (string | number | null)[] {
  return COLUMNS.map((column) => {
    const value = record[column];
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (column === 'add_ons' || column === 'discounts' || column === 'last_decline') return value === null ? null : JSON.stringify(value);
    return value as string | number | null;
  });
}

export async function insertSubscription(db: D1Database, merchantId: string, record: SubscriptionRecord): Promise<void> {
  await db
    .prepare(`INSERT INTO recurring_subscriptions (merchant_id, ${SELECT}) VALUES (?${', ?'.repeat(COLUMNS.length)})`)
    .bind(merchantId, ...values(record))
    .run();
}

/**
 * Writes the record over the stored one, only while the stored one is still at `expected`'s
 * updated_at: an update that lost a race with another (a billing step, a status call) changes
 * nothing and says so.
 */
export async function replaceSubscription(db: D1Database, merchantId: string, record: SubscriptionRecord, expectedUpdatedAt: string): Promise<boolean> {
  const settable = COLUMNS.filter((column) => column !== 'id' && column !== 'created_at');
  const all = values(record);
  const byColumn = new Map(COLUMNS.map((column, index) => [column, all[index] ?? null]));
  const result = await db
    .prepare(`UPDATE recurring_subscriptions SET ${settable.map((column) => `${column} = ?`).join(', ')}, lease_until = '' WHERE merchant_id = ? AND id = ? AND updated_at = ?`)
    .bind(...settable.map((column) => byColumn.get(column) ?? null), merchantId, record.id, expectedUpdatedAt)
    .run();
  return result.meta.changes > 0;
}

export async function findSubscription(db: D1Database, merchantId: string, id: string): Promise<SubscriptionRecord | null> {
  const row = await db.prepare(`SELECT ${SELECT} FROM recurring_subscriptions WHERE merchant_id = ? AND id = ?`).bind(merchantId, id).first<Row>();
  return row ? toRecord(row) : null;
}

export async function deleteSubscription(db: D1Database, merchantId: string, id: string): Promise<boolean> {
  const result = await db.prepare('DELETE FROM recurring_subscriptions WHERE merchant_id = ? AND id = ?').bind(merchantId, id).run();
  return result.meta.changes > 0;
}

export interface SubscriptionFilter {
  column: 'plan_id' | 'customer_id' | 'status';
  operator: '=' | '!=';
  value: string;
}

/**
 * A page of the merchant's subscriptions matching every filter, oldest first, and how many match.
 * The page walks recurring_subscriptions_created (merchant_id, created_at, id) and stops at
 * offset + limit matches (offset at most 100,000: schemas/recurring.ts). The count reads every
 * matching index entry: a million for the largest merchant's unfiltered search, a few hundred
 * milliseconds of D1 time, well under its 30 s per query, billed as rows read.
 */
export async function searchSubscriptions(
  db: D1Database,
  merchantId: string,
  filters: SubscriptionFilter[],
  nextBill: { from?: string; to?: string },
  page: { limit: number; offset: number },
): Promise<{ items: SubscriptionRecord[]; total: number }> {
  const where = ['merchant_id = ?'];
  const binds: (string | number)[] = [merchantId];
  for (const filter of filters) {
    where.push(`${filter.column} ${filter.operator === '=' ? '=' : '!='} ?`);
    binds.push(filter.value);
  }
  if (nextBill.from !== undefined) {
    where.push("next_bill_date != '' AND next_bill_date >= ?");
    binds.push(nextBill.from);
  }
  if (nextBill.to !== undefined) {
    where.push("next_bill_date != '' AND next_bill_date <= ?");
    binds.push(nextBill.to);
  }
  const clause = where.join(' AND ');
  const [rows, count] = await db.batch([
    db.prepare(`SELECT ${SELECT} FROM recurring_subscriptions WHERE ${clause} ORDER BY created_at, id LIMIT ? OFFSET ?`).bind(...binds, page.limit, page.offset),
    db.prepare(`SELECT COUNT(*) AS total FROM recurring_subscriptions WHERE ${clause}`).bind(...binds),
  ]);
  return { items: ((rows?.results ?? []) as Row[]).map(toRecord), total: Number((count?.results[0] as { total: number } | undefined)?.total ?? 0) };
}

/**
 * Leases up to `limit` of the merchant's subscriptions due on or before `day` (active, or failing
 * with a retry due) whose lease has lapsed, until `leaseUntil`, and answers them. The partial
 * index recurring_subscriptions_due serves the inner SELECT in bill-date order.
 */
export async function claimDue(db: D1Database, merchantId: string, day: string, now: string, leaseUntil: string, limit: number): Promise<SubscriptionRecord[]> {
  const { results } = await db
    .prepare(
      `UPDATE recurring_subscriptions SET lease_until = ?1
       WHERE merchant_id = ?2 AND id IN (
         SELECT id FROM recurring_subscriptions
         WHERE merchant_id = ?2 AND status IN ('active', 'failing') AND next_bill_date != '' AND next_bill_date <= ?3 AND lease_until < ?4
         ORDER BY next_bill_date, id LIMIT ?5)
       RETURNING ${SELECT}`,
    )
    .bind(leaseUntil, merchantId, day, now, limit)
    .all<Row>();
  return results.map(toRecord);
}

/**
 * Merchants with a subscription due on or before `day`, at most `limit` (the hourly run's list of
 * work). A loose index scan over recurring_subscriptions_due: one seek per merchant to the next
 * merchant id and one to its earliest bill date, so the query reads about two index entries per
 * merchant, never the million subscriptions of a big one (a DISTINCT over the due rows would).
 */
export async function merchantsWithDue(db: D1Database, day: string, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `WITH RECURSIVE m(id) AS (
         SELECT MIN(merchant_id) FROM recurring_subscriptions WHERE status IN ('active', 'failing')
         UNION ALL
         SELECT (SELECT MIN(merchant_id) FROM recurring_subscriptions WHERE status IN ('active', 'failing') AND merchant_id > m.id) FROM m WHERE m.id IS NOT NULL
       )
       SELECT id AS merchant_id FROM m
       WHERE id IS NOT NULL AND EXISTS (
         SELECT 1 FROM recurring_subscriptions s
         WHERE s.merchant_id = m.id AND s.status IN ('active', 'failing') AND s.next_bill_date != '' AND s.next_bill_date <= ?1)
       LIMIT ?2`,
    )
    .bind(day, limit)
    .all<{ merchant_id: string }>();
  return results.map((row) => row.merchant_id);
}

/** The subscriptions needing attention (failing, failed, error), the latest changed first. */
export async function needingAttention(db: D1Database, merchantId: string, limit: number): Promise<SubscriptionRecord[]> {
  const { results } = await db
    .prepare(`SELECT ${SELECT} FROM recurring_subscriptions WHERE merchant_id = ? AND status IN ('failing', 'failed', 'error') ORDER BY updated_at DESC LIMIT ?`)
    .bind(merchantId, limit)
    .all<Row>();
  return results.map(toRecord);
}

/** What one billing attempt changes: the billing state only, never the fields an API update sets. */
export interface BillingChanges {
  status: SubscriptionStatus;
  cycle_date: string;
  next_bill_date: string;
  billings: number;
  retries: number;
  last_transaction_id: string | null;
  last_decline: LastDecline | null;
  updated_at: string;
}

/**
 * A billing attempt's outcome, written only while the subscription is still in the state the
 * attempt was made from (status, cycle, retries): a second run that billed the same cycle (its
 * charge a replay of this one's), or a status call meanwhile, is not overwritten.
 */
export function recordBillingStatement(
  db: D1Database,
  merchantId: string,
  id: string,
  from: Pick<SubscriptionRecord, 'status' | 'cycle_date' | 'retries'>,
  changes: BillingChanges,
): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE recurring_subscriptions SET status = ?, cycle_date = ?, next_bill_date = ?, billings = ?, retries = ?, last_transaction_id = ?,
       last_decline = ?, updated_at = ?, lease_until = ''
       WHERE merchant_id = ? AND id = ? AND status = ? AND cycle_date = ? AND retries = ?`,
    )
    .bind(
      changes.status,
      changes.cycle_date,
      changes.next_bill_date,
      changes.billings,
      changes.retries,
      changes.last_transaction_id,
      changes.last_decline === null ? null : JSON.stringify(changes.last_decline),
      changes.updated_at,
      merchantId,
      id,
      from.status,
      from.cycle_date,
      from.retries,
    );
}
