/**
 * D1 access for what FluidPay's vault keeps on a customer beside binbatch's own columns:
 * `vault_addresses` (its addresses) and `vault_customer_profiles` (notes, default addresses), and
 * the customer search. Every query is scoped by merchant id.
 */

export const ADDRESS_FIELDS = ['first_name', 'last_name', 'company', 'line_1', 'line_2', 'city', 'state', 'postal_code', 'country', 'email', 'phone', 'fax'] as const;
export type AddressField = (typeof ADDRESS_FIELDS)[number];

export type AddressRecord = {
  merchant_id: string;
  id: string;
  customer_id: string;
  hash: string;
  created_at: string;
} & Record<AddressField, string | null>;

export interface ProfileRecord {
  notes: string | null;
  default_billing_address_id: string | null;
  default_shipping_address_id: string | null;
}

export function insertAddressStatement(db: D1Database, address: AddressRecord): D1PreparedStatement {
  const columns = ['merchant_id', 'id', 'customer_id', ...ADDRESS_FIELDS, 'hash', 'created_at'] as const;
  return db
    .prepare(`INSERT INTO vault_addresses (${columns.join(', ')}) VALUES (${columns.map((_, i) => `?${i + 1}`).join(', ')})`)
    .bind(...columns.map((column) => address[column]));
}

/** Replaces an address's fields; false when it is not this customer's. */
export async function replaceAddress(db: D1Database, address: AddressRecord): Promise<boolean> {
  const sets = [...ADDRESS_FIELDS, 'hash'].map((column, i) => `${column} = ?${i + 4}`).join(', ');
  const result = await db
    .prepare(`UPDATE vault_addresses SET ${sets} WHERE merchant_id = ?1 AND customer_id = ?2 AND id = ?3`)
    .bind(address.merchant_id, address.customer_id, address.id, ...ADDRESS_FIELDS.map((f) => address[f]), address.hash)
    .run();
  return result.meta.changes > 0;
}

export async function deleteAddress(db: D1Database, merchantId: string, customerId: string, id: string, updatedAt: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.prepare('DELETE FROM vault_addresses WHERE merchant_id = ?1 AND customer_id = ?2 AND id = ?3').bind(merchantId, customerId, id),
    // A default that named it names nothing now.
    db
      .prepare(
        `UPDATE vault_customer_profiles SET
           default_billing_address_id = CASE WHEN default_billing_address_id = ?3 THEN NULL ELSE default_billing_address_id END,
           default_shipping_address_id = CASE WHEN default_shipping_address_id = ?3 THEN NULL ELSE default_shipping_address_id END
         WHERE merchant_id = ?1 AND customer_id = ?2`,
      )
      .bind(merchantId, customerId, id),
    db.prepare('UPDATE vault_customers SET updated_at = ?3 WHERE merchant_id = ?1 AND id = ?2').bind(merchantId, customerId, updatedAt),
  ]);
  return (deleted?.meta.changes ?? 0) > 0;
}

export async function listAddresses(db: D1Database, merchantId: string, customerId: string): Promise<AddressRecord[]> {
  const { results } = await db
    .prepare('SELECT * FROM vault_addresses WHERE merchant_id = ?1 AND customer_id = ?2 ORDER BY created_at, id')
    .bind(merchantId, customerId)
    .all<AddressRecord>();
  return results;
}

export async function findProfile(db: D1Database, merchantId: string, customerId: string): Promise<ProfileRecord | null> {
  return db
    .prepare('SELECT notes, default_billing_address_id, default_shipping_address_id FROM vault_customer_profiles WHERE merchant_id = ?1 AND customer_id = ?2')
    .bind(merchantId, customerId)
    .first<ProfileRecord>();
}

/** The changes present (undefined = keep; null = clear), written as one upsert. */
export interface ProfileChanges {
  notes?: string | null | undefined;
  default_billing_address_id?: string | null | undefined;
  default_shipping_address_id?: string | null | undefined;
}

export function upsertProfileStatement(db: D1Database, merchantId: string, customerId: string, changes: ProfileChanges): D1PreparedStatement {
  const given = (value: unknown) => (value !== undefined ? 1 : 0);
  return db
    .prepare(
      `INSERT INTO vault_customer_profiles (merchant_id, customer_id, notes, default_billing_address_id, default_shipping_address_id)
       VALUES (?1, ?2, ?4, ?6, ?8)
       ON CONFLICT (merchant_id, customer_id) DO UPDATE SET
         notes = CASE WHEN ?3 THEN ?4 ELSE notes END,
         default_billing_address_id = CASE WHEN ?5 THEN ?6 ELSE default_billing_address_id END,
         default_shipping_address_id = CASE WHEN ?7 THEN ?8 ELSE default_shipping_address_id END`,
    )
    .bind(
      merchantId,
      customerId,
      given(changes.notes),
      changes.notes ?? null,
      given(changes.default_billing_address_id),
      changes.default_billing_address_id ?? null,
      given(changes.default_shipping_address_id),
      changes.default_shipping_address_id ?? null,
    );
}

/** One condition of a customer search: a field, = or !=, a value. */
export interface CustomerCondition {
  field: 'id' | 'email' | 'payment_method_type' | 'address_id' | 'billing_address_id' | 'shipping_address_id' | AddressField;
  operator: '=' | '!=';
  value: string;
}

export interface CustomerSearch {
  conditions: CustomerCondition[];
  createdAt: { from: string | null; to: string | null };
  updatedAt: { from: string | null; to: string | null };
  limit: number;
  offset: number;
}

/**
 * The merchant's customers matching every condition, oldest first, and how many match. An address
 * field matches when any of the customer's addresses has it; payment_method_type when any of its
 * methods is of that type. Bound parameters only: fields come from a closed list.
 */
export async function searchCustomers(db: D1Database, merchantId: string, search: CustomerSearch): Promise<{ ids: string[]; total: number }> {
  const where: string[] = ['c.merchant_id = ?1'];
  const args: (string | number)[] = [merchantId];
  const param = (value: string | number) => {
    args.push(value);
    return `?${args.length}`;
  };
  for (const { field, operator, value } of search.conditions) {
    const p = param(value);
    let match: string;
    if (field === 'id') match = `c.id = ${p}`;
    else if (field === 'email') match = `c.email = ${p}`;
    else if (field === 'payment_method_type') {
      match = `EXISTS (SELECT 1 FROM vault_payment_methods m WHERE m.merchant_id = c.merchant_id AND m.customer_id = c.id AND m.type = ${p})`;
    } else if (field === 'billing_address_id' || field === 'shipping_address_id') {
      match = `EXISTS (SELECT 1 FROM vault_customer_profiles f WHERE f.merchant_id = c.merchant_id AND f.customer_id = c.id AND f.default_${field} = ${p})`;
    } else {
      const column = field === 'address_id' ? 'id' : field;
      match = `EXISTS (SELECT 1 FROM vault_addresses a WHERE a.merchant_id = c.merchant_id AND a.customer_id = c.id AND a.${column} = ${p})`;
    }
    where.push(operator === '=' ? match : `NOT (${match})`);
  }
  for (const [column, range] of [['created_at', search.createdAt], ['updated_at', search.updatedAt]] as const) {
    if (range.from !== null) where.push(`c.${column} >= ${param(range.from)}`);
    if (range.to !== null) where.push(`c.${column} <= ${param(range.to)}`);
  }
  const clause = where.join(' AND ');
  const [page, count] = await db.batch([
    db.prepare(`SELECT c.id FROM vault_customers c WHERE ${clause} ORDER BY c.created_at, c.id LIMIT ${param(search.limit)} OFFSET ${param(search.offset)}`).bind(...args),
    db.prepare(`SELECT COUNT(*) AS n FROM vault_customers c WHERE ${clause}`).bind(...args.slice(0, args.length - 2)),
  ]);
  return {
    ids: ((page?.results ?? []) as { id: string }[]).map((row) => row.id),
    total: ((count?.results ?? [])[0] as { n: number } | undefined)?.n ?? 0,
  };
}

/** Deletes one payment method; a default that named it names nothing now. */
export async function deletePaymentMethod(db: D1Database, merchantId: string, customerId: string, id: string, updatedAt: string): Promise<boolean> {
  const [deleted] = await db.batch([
    db.prepare('DELETE FROM vault_payment_methods WHERE merchant_id = ?1 AND customer_id = ?2 AND id = ?3').bind(merchantId, customerId, id),
    db
      .prepare(
        `UPDATE vault_customers SET updated_at = ?4,
           default_payment_method_id = CASE WHEN default_payment_method_id = ?3 THEN NULL ELSE default_payment_method_id END
         WHERE merchant_id = ?1 AND id = ?2`,
      )
      .bind(merchantId, customerId, id, updatedAt),
  ]);
  return (deleted?.meta.changes ?? 0) > 0;
}
