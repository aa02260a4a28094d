/**
 * D1 access for the customer vault: `vault_customers` and `vault_payment_methods`.
 * Every query is scoped by merchant id, so one merchant's ids never reach another's rows.
 */

export interface CustomerRecord {
  merchant_id: string;
  id: string;
  description: string | null;
  email: string | null;
  surcharge_exempt: boolean;
  default_payment_method_id: string | null;
  created_at: string;
  updated_at: string;
}

interface CustomerRow extends Omit<CustomerRecord, 'surcharge_exempt'> {
  surcharge_exempt: number;
}

function toCustomer(row: CustomerRow): CustomerRecord {
  return { ...row, surcharge_exempt: row.surcharge_exempt === 1 };
}

/** A stored payment method; `sealed_number` is ciphertext, everything else is displayable. */
export interface PaymentMethodRecord {
  merchant_id: string;
  id: string;
  customer_id: string;
  type: 'card' | 'ach';
  sealed_number: string;
  masked: string;
  expiration: string | null;
  routing_number: string | null;
  account_type: 'checking' | 'savings' | null;
  sec_code: 'WEB' | 'CCD' | 'PPD' | null;
  created_at: string;
}

type PaymentMethodRow = PaymentMethodRecord;

function toPaymentMethod(row: PaymentMethodRow): PaymentMethodRecord {
  return {
    merchant_id: row.merchant_id,
    id: row.id,
    customer_id: row.customer_id,
    type: row.type,
    sealed_number: row.sealed_number,
    masked: row.masked,
    expiration: row.expiration,
    routing_number: row.routing_number,
    account_type: row.account_type,
    sec_code: row.sec_code,
    created_at: row.created_at,
  };
}

export function insertCustomerStatement(db: D1Database, customer: CustomerRecord): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO vault_customers
         (merchant_id, id, description, email, surcharge_exempt, default_payment_method_id, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
    .bind(
      customer.merchant_id,
      customer.id,
      customer.description,
      customer.email,
      customer.surcharge_exempt ? 1 : 0,
      customer.default_payment_method_id,
      customer.created_at,
      customer.updated_at,
    );
}

export function insertPaymentMethodStatement(db: D1Database, method: PaymentMethodRecord): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO vault_payment_methods
         (merchant_id, id, customer_id, type, sealed_number, masked, expiration, routing_number, account_type, sec_code, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
    )
    .bind(
      method.merchant_id,
      method.id,
      method.customer_id,
      method.type,
      method.sealed_number,
      method.masked,
      method.expiration,
      method.routing_number,
      method.account_type,
      method.sec_code,
      method.created_at,
    );
}

/**
 * Replaces a stored method's content (FluidPay's UpdateCard / UpdateACH / UpdateToken): its id,
 * type, creation time and place as a default stay; the customer's updated_at moves.
 */
export function replacePaymentMethodStatements(db: D1Database, method: PaymentMethodRecord, updatedAt: string): D1PreparedStatement[] {
  return [
    db
      .prepare(
        `UPDATE vault_payment_methods SET sealed_number = ?5, masked = ?6, expiration = ?7, routing_number = ?8, account_type = ?9, sec_code = ?10
         WHERE merchant_id = ?1 AND customer_id = ?2 AND id = ?3 AND type = ?4`,
      )
      .bind(method.merchant_id, method.customer_id, method.id, method.type, method.sealed_number, method.masked, method.expiration, method.routing_number, method.account_type, method.sec_code),
    touchCustomerStatement(db, method.merchant_id, method.customer_id, updatedAt),
  ];
}

/** Moves the customer's updated_at: a change to what it holds (a method, an address) is a change to it. */
export function touchCustomerStatement(db: D1Database, merchantId: string, customerId: string, updatedAt: string): D1PreparedStatement {
  return db.prepare('UPDATE vault_customers SET updated_at = ?3 WHERE merchant_id = ?1 AND id = ?2').bind(merchantId, customerId, updatedAt);
}

/** Makes `paymentMethodId` the default only when the customer has none yet (its first method). */
export function setDefaultIfNoneStatement(
  db: D1Database,
  merchantId: string,
  customerId: string,
  paymentMethodId: string,
  updatedAt: string,
): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE vault_customers SET default_payment_method_id = ?3, updated_at = ?4
       WHERE merchant_id = ?1 AND id = ?2 AND default_payment_method_id IS NULL`,
    )
    .bind(merchantId, customerId, paymentMethodId, updatedAt);
}

export async function findCustomer(db: D1Database, merchantId: string, id: string): Promise<CustomerRecord | null> {
  const row = await db
    .prepare('SELECT * FROM vault_customers WHERE merchant_id = ?1 AND id = ?2')
    .bind(merchantId, id)
    .first<CustomerRow>();
  return row ? toCustomer(row) : null;
}

export async function listPaymentMethods(db: D1Database, merchantId: string, customerId: string): Promise<PaymentMethodRecord[]> {
  const { results } = await db
    .prepare('SELECT * FROM vault_payment_methods WHERE merchant_id = ?1 AND customer_id = ?2 ORDER BY created_at, id')
    .bind(merchantId, customerId)
    .all<PaymentMethodRow>();
  return results.map(toPaymentMethod);
}

export async function findPaymentMethod(
  db: D1Database,
  merchantId: string,
  customerId: string,
  id: string,
): Promise<PaymentMethodRecord | null> {
  const row = await db
    .prepare('SELECT * FROM vault_payment_methods WHERE merchant_id = ?1 AND customer_id = ?2 AND id = ?3')
    .bind(merchantId, customerId, id)
    .first<PaymentMethodRow>();
  return row ? toPaymentMethod(row) : null;
}

export interface CustomerChanges {
  description?: string | null | undefined;
  email?: string | null | undefined;
  surcharge_exempt?: boolean | undefined;
  default_payment_method_id?: string | undefined;
}

/**
 * Applies the changes present in `changes` (undefined = keep; null = clear for description/email).
 * Returns the updated customer, or null when it does not exist for this merchant.
 */
export async function updateCustomer(
  db: D1Database,
  merchantId: string,
  id: string,
  changes: CustomerChanges,
  updatedAt: string,
): Promise<CustomerRecord | null> {
  const row = await db
    .prepare(
      `UPDATE vault_customers SET
         description = CASE WHEN ?3 THEN ?4 ELSE description END,
         email = CASE WHEN ?5 THEN ?6 ELSE email END,
         surcharge_exempt = COALESCE(?7, surcharge_exempt),
         default_payment_method_id = COALESCE(?8, default_payment_method_id),
         updated_at = ?9
       WHERE merchant_id = ?1 AND id = ?2 RETURNING *`,
    )
    .bind(
      merchantId,
      id,
      changes.description !== undefined ? 1 : 0,
      changes.description ?? null,
      changes.email !== undefined ? 1 : 0,
      changes.email ?? null,
      changes.surcharge_exempt === undefined ? null : changes.surcharge_exempt ? 1 : 0,
      changes.default_payment_method_id ?? null,
      updatedAt,
    )
    .first<CustomerRow>();
  return row ? toCustomer(row) : null;
}

/** Deletes a customer and every payment method (their sealed numbers with them) and address it holds. */
export async function deleteCustomer(db: D1Database, merchantId: string, id: string): Promise<boolean> {
  const [, , , customers] = await db.batch([
    db.prepare('DELETE FROM vault_payment_methods WHERE merchant_id = ?1 AND customer_id = ?2').bind(merchantId, id),
    db.prepare('DELETE FROM vault_addresses WHERE merchant_id = ?1 AND customer_id = ?2').bind(merchantId, id),
    db.prepare('DELETE FROM vault_customer_profiles WHERE merchant_id = ?1 AND customer_id = ?2').bind(merchantId, id),
    db.prepare('DELETE FROM vault_customers WHERE merchant_id = ?1 AND id = ?2').bind(merchantId, id),
  ]);
  return (customers?.meta.changes ?? 0) > 0;
}

/** The customer and the one payment method a charge or lookup would use, in one indexed query. */
export interface ResolvedRow {
  customer: CustomerRecord;
  method: PaymentMethodRecord | null;
}

const RESOLVED_COLUMNS = `c.merchant_id, c.id, c.description, c.email, c.surcharge_exempt, c.default_payment_method_id,
       c.created_at, c.updated_at,
       pm.id AS pm_id, pm.type AS pm_type, pm.sealed_number AS pm_sealed_number, pm.masked AS pm_masked,
       pm.expiration AS pm_expiration, pm.routing_number AS pm_routing_number,
       pm.account_type AS pm_account_type, pm.sec_code AS pm_sec_code, pm.created_at AS pm_created_at`;

export interface MethodReference {
  customerId: string;
  paymentMethodId: string | null;
}

/**
 * Each customer joined with the payment method `paymentMethodId`, or with its default when that
 * is null, for many references in one query (a batch chunk's vault rows): the references travel
 * as one JSON parameter. Answers in the order asked, null where the customer does not exist for
 * this merchant.
 */
export async function findCustomersWithMethods(
  db: D1Database,
  merchantId: string,
  references: readonly MethodReference[],
): Promise<(ResolvedRow | null)[]> {
  if (references.length === 0) return [];
  const { results } = await db
    .prepare(
      `WITH wanted AS (
         SELECT key AS position, json_extract(value, '$[0]') AS customer_id, json_extract(value, '$[1]') AS pm_id
         FROM json_each(?2)
       )
       SELECT w.position, ${RESOLVED_COLUMNS}
       FROM wanted w
       JOIN vault_customers c ON c.merchant_id = ?1 AND c.id = w.customer_id
       LEFT JOIN vault_payment_methods pm
         ON pm.merchant_id = c.merchant_id AND pm.customer_id = c.id
        AND pm.id = COALESCE(w.pm_id, c.default_payment_method_id)`,
    )
    .bind(merchantId, JSON.stringify(references.map((r) => [r.customerId, r.paymentMethodId])))
    .all<CustomerRow & PrefixedMethodRow & { position: number }>();
  const answers = new Array<ResolvedRow | null>(references.length).fill(null);
  for (const row of results) answers[row.position] = toResolvedRow(row);
  return answers;
}

function toResolvedRow(row: CustomerRow & PrefixedMethodRow): ResolvedRow {
  const customer = toCustomer({
    merchant_id: row.merchant_id,
    id: row.id,
    description: row.description,
    email: row.email,
    surcharge_exempt: row.surcharge_exempt,
    default_payment_method_id: row.default_payment_method_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  });
  if (row.pm_id === null || row.pm_type === null || row.pm_sealed_number === null || row.pm_masked === null) {
    return { customer, method: null };
  }
  return {
    customer,
    method: toPaymentMethod({
      merchant_id: row.merchant_id,
      id: row.pm_id,
      customer_id: row.id,
      type: row.pm_type,
      sealed_number: row.pm_sealed_number,
      masked: row.pm_masked,
      expiration: row.pm_expiration,
      routing_number: row.pm_routing_number,
      account_type: row.pm_account_type,
      sec_code: row.pm_sec_code,
      created_at: row.pm_created_at ?? row.created_at,
    }),
  };
}

interface PrefixedMethodRow {
  pm_id: string | null;
  pm_type: 'card' | 'ach' | null;
  pm_sealed_number: string | null;
  pm_masked: string | null;
  pm_expiration: string | null;
  pm_routing_number: string | null;
  pm_account_type: 'checking' | 'savings' | null;
  pm_sec_code: 'WEB' | 'CCD' | 'PPD' | null;
  pm_created_at: string | null;
}
