/**
 * The customer vault's commands on customers of a merchant: create (with a first payment method and
 * default addresses), read, update, delete, and FluidPay's search. Their payment methods are in
 * payment-methods.ts, their addresses in addresses.ts, what the API shows in customer-view.ts.
 */
import type { Env } from '../../env';
import { randomId } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import { detectBrand } from '../../lib/card-brand';
import type { CustomerCreateInput, CustomerPatchInput, CustomerSearchInput } from '../../schemas/vault';
import {
  insertAddressStatement,
  searchCustomers as searchCustomerRows,
  upsertProfileStatement,
  type AddressRecord,
  type CustomerCondition,
  type ProfileChanges,
} from '../../storage/vault-addresses';
import {
  deleteCustomer as deleteCustomerRows,
  findCustomer,
  insertCustomerStatement,
  insertPaymentMethodStatement,
  updateCustomer as updateCustomerRow,
  type CustomerRecord,
  type PaymentMethodRecord,
} from '../../storage/vault';
import { addressRecord } from './addresses';
import { customerView, loadCustomer, type CustomerView } from './customer-view';
import { isUniqueViolation, type VaultFailure } from './failures';
import { buildPaymentMethod, type VaultOptions } from './payment-methods';

/** An id of FluidPay's `id_format`: their 20-character id, a UUID, or the id with the method's brand and last four. */
function generatedId(format: CustomerCreateInput['id_format'], method: PaymentMethodRecord | null): string {
  if (format === 'uuid') return crypto.randomUUID();
  const xid = randomId(20);
  if (format !== 'xid_type_last4' || !method) return xid;
  const type = method.type === 'card' ? (detectBrand(method.masked.slice(0, 6)) ?? 'card') : 'ach';
  return `${xid}_${type}_${method.masked.slice(-4)}`;
}

export async function createCustomer(
  env: Env,
  merchantId: string,
  input: CustomerCreateInput,
  clock: Clock,
  options: VaultOptions = {},
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const now = clock();
  const paymentInput = input.payment_method ?? input.default_payment;
  const field = input.default_payment ? 'default_payment.' : 'payment_method.';
  // The method's row needs the customer id, and xid_type_last4 needs the method: a placeholder first.
  let id = input.id ?? randomId(20);
  let method: PaymentMethodRecord | null = null;
  if (paymentInput) {
    const built = await buildPaymentMethod(env, merchantId, id, paymentInput, now, field, options);
    if (!built.ok) return built;
    method = built.record;
  }
  if (input.id === undefined && input.id_format !== undefined) {
    id = generatedId(input.id_format, method);
    if (method) method = { ...method, customer_id: id };
  }
  const customer: CustomerRecord = {
    merchant_id: merchantId,
    id,
    description: input.description ?? null,
    email: input.email ?? null,
    surcharge_exempt: input.flags?.includes('surcharge_exempt') ?? false,
    default_payment_method_id: method?.id ?? null,
    created_at: isoTimestamp(now),
    updated_at: isoTimestamp(now),
  };
  if (await findCustomer(env.DB, merchantId, id)) {
    return { ok: false, reason: 'conflict', msg: `id: customer ${id} already exists` };
  }
  // The default addresses: one row when both are the same address.
  const addresses: AddressRecord[] = [];
  const profile: ProfileChanges = {};
  for (const [which, address] of [['billing', input.default_billing_address], ['shipping', input.default_shipping_address]] as const) {
    if (!address) continue;
    const row = await addressRecord(merchantId, id, randomId(20), address, now);
    const same = addresses.find((a) => a.hash === row.hash);
    if (!same) addresses.push(row);
    profile[`default_${which}_address_id`] = (same ?? row).id;
  }
  if (input.notes !== undefined) profile.notes = input.notes;
  try {
    await env.DB.batch([
      insertCustomerStatement(env.DB, customer),
      ...(method ? [insertPaymentMethodStatement(env.DB, method)] : []),
      ...addresses.map((address) => insertAddressStatement(env.DB, address)),
      ...(Object.keys(profile).length > 0 ? [upsertProfileStatement(env.DB, merchantId, id, profile)] : []),
    ]);
  } catch (err) {
    // Two creates racing for the same id (or a method id already taken): the primary key decides, the loser hears 409.
    if (isUniqueViolation(err)) return { ok: false, reason: 'conflict', msg: `id: customer ${id} (or payment method ${method?.id ?? ''}) already exists` };
    throw err;
  }
  const state = await loadCustomer(env, merchantId, id);
  if (!state) return { ok: false, reason: 'not_found', msg: `customer ${id} not found` };
  return { ok: true, customer: customerView(state, method ? { created_payment_method_id: method.id } : {}) };
}

export async function getCustomer(env: Env, merchantId: string, id: string): Promise<CustomerView | null> {
  const state = await loadCustomer(env, merchantId, id);
  return state ? customerView(state) : null;
}

export async function updateCustomer(
  env: Env,
  merchantId: string,
  customerId: string,
  patch: CustomerPatchInput,
  clock: Clock,
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const state = await loadCustomer(env, merchantId, customerId);
  if (!state) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  const field = patch.defaults?.payment_method_id !== undefined ? 'defaults.payment_method_id' : 'default_payment_method_id';
  const newDefault = patch.default_payment_method_id ?? patch.defaults?.payment_method_id;
  const method = newDefault === undefined ? undefined : state.methods.find((m) => m.id === newDefault);
  if (newDefault !== undefined && !method) {
    return { ok: false, reason: 'invalid', msg: `${field}: customer ${customerId} has no payment method ${newDefault}` };
  }
  if (method && patch.defaults?.payment_method_type !== undefined && patch.defaults.payment_method_type !== method.type) {
    return { ok: false, reason: 'invalid', msg: `defaults.payment_method_type: payment method ${method.id} is ${method.type}` };
  }
  for (const which of ['billing', 'shipping'] as const) {
    const addressId = patch.defaults?.[`${which}_address_id`];
    if (addressId !== undefined && !state.addresses.some((a) => a.id === addressId)) {
      return { ok: false, reason: 'invalid', msg: `defaults.${which}_address_id: customer ${customerId} has no address ${addressId}` };
    }
  }
  const profile: ProfileChanges = {
    notes: patch.notes,
    default_billing_address_id: patch.defaults?.billing_address_id,
    default_shipping_address_id: patch.defaults?.shipping_address_id,
  };
  if (Object.values(profile).some((value) => value !== undefined)) {
    await upsertProfileStatement(env.DB, merchantId, customerId, profile).run();
  }
  // flags is the whole set: sending [] clears surcharge_exempt.
  const updated = await updateCustomerRow(
    env.DB,
    merchantId,
    customerId,
    {
      description: patch.description,
      email: patch.email,
      surcharge_exempt: patch.flags === undefined ? undefined : patch.flags.includes('surcharge_exempt'),
      default_payment_method_id: newDefault,
    },
    isoTimestamp(clock()),
  );
  if (!updated) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  const after = await loadCustomer(env, merchantId, customerId);
  if (!after) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  return { ok: true, customer: customerView(after) };
}

/** Deletes the customer and all its payment methods and addresses; false when it did not exist for this merchant. */
export function deleteCustomer(env: Env, merchantId: string, customerId: string): Promise<boolean> {
  return deleteCustomerRows(env.DB, merchantId, customerId);
}

// ---- Search (FluidPay's POST /api/vault/customer/search) ---------------------------------------

const ADDRESS_QUERY_FIELDS: Record<string, CustomerCondition['field']> = {
  address_line_1: 'line_1',
  address_line_2: 'line_2',
};

export async function searchCustomers(env: Env, merchantId: string, search: CustomerSearchInput): Promise<{ customers: CustomerView[]; total: number }> {
  const conditions: CustomerCondition[] = [];
  for (const [key, value] of Object.entries(search)) {
    if (value === undefined || typeof value !== 'object' || !('operator' in value)) continue;
    conditions.push({ field: ADDRESS_QUERY_FIELDS[key] ?? (key as CustomerCondition['field']), operator: value.operator, value: value.value });
  }
  const range = (r: { start_date?: string | undefined; end_date?: string | undefined } | undefined) => ({
    from: r?.start_date ? isoTimestamp(new Date(r.start_date)) : null,
    to: r?.end_date ? isoTimestamp(new Date(r.end_date)) : null,
  });
  const found = await searchCustomerRows(env.DB, merchantId, {
    conditions,
    createdAt: range(search.created_at),
    updatedAt: range(search.updated_at),
    limit: search.limit,
    offset: search.offset,
  });
  // A page is at most 100 customers (the schema's limit): their views are read one customer at a time, in parallel.
  const states = await Promise.all(found.ids.map((id) => loadCustomer(env, merchantId, id)));
  return { customers: states.flatMap((state) => (state ? [customerView(state)] : [])), total: found.total };
}
