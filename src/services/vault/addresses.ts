/**
 * A customer's addresses (FluidPay's vault): stored, replaced and removed. An address's hash is over
 * its fields, so a duplicate is refused; the billing and shipping defaults are in the profile.
 */
import type { Env } from '../../env';
import { randomId, sha256Hex } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { VaultAddressInput } from '../../schemas/vault';
import {
  ADDRESS_FIELDS,
  deleteAddress as deleteAddressRow,
  findProfile,
  insertAddressStatement,
  listAddresses,
  replaceAddress,
  type AddressRecord,
  type ProfileRecord,
} from '../../storage/vault-addresses';
import { touchCustomerStatement } from '../../storage/vault';
import { customerView, loadCustomer, type CustomerView } from './customer-view';
import { isUniqueViolation, type VaultFailure } from './failures';

/** At most this many addresses a customer: the vault's rows stay a few per customer (docs/capacity.md). */
export const MAX_ADDRESSES_PER_CUSTOMER = 20;

/** An address row; its hash is over its fields, so an identical address is found by it. */
export async function addressRecord(merchantId: string, customerId: string, id: string, input: VaultAddressInput, now: Date): Promise<AddressRecord> {
  const fields = Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, input[field] === undefined || input[field] === '' ? null : input[field]])) as Record<(typeof ADDRESS_FIELDS)[number], string | null>;
  const hash = await sha256Hex(JSON.stringify(ADDRESS_FIELDS.map((field) => fields[field])));
  return { merchant_id: merchantId, id, customer_id: customerId, hash, created_at: isoTimestamp(now), ...fields };
}

/** Stores an address on a customer; an identical one already stored is a 409 (reuse its id). */
export async function addAddress(
  env: Env,
  merchantId: string,
  customerId: string,
  input: VaultAddressInput,
  clock: Clock,
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const now = clock();
  const state = await loadCustomer(env, merchantId, customerId);
  if (!state) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  if (state.addresses.length >= MAX_ADDRESSES_PER_CUSTOMER) {
    return { ok: false, reason: 'invalid', msg: `(body): customer ${customerId} has ${MAX_ADDRESSES_PER_CUSTOMER} addresses, the most it may hold` };
  }
  const address = await addressRecord(merchantId, customerId, randomId(20), input, now);
  const duplicate = state.addresses.find((a) => a.hash === address.hash);
  if (duplicate) return { ok: false, reason: 'conflict', msg: `(body): would create a duplicate address (${duplicate.id} holds the same)` };
  try {
    await env.DB.batch([
      insertAddressStatement(env.DB, address),
      touchCustomerStatement(env.DB, merchantId, customerId, isoTimestamp(now)),
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) return { ok: false, reason: 'conflict', msg: '(body): would create a duplicate address' };
    throw err;
  }
  const after = await loadCustomer(env, merchantId, customerId);
  if (!after) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  return { ok: true, customer: customerView(after, { created_address_id: address.id }) };
}

export async function updateAddress(
  env: Env,
  merchantId: string,
  customerId: string,
  addressId: string,
  input: VaultAddressInput,
  clock: Clock,
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const address = await addressRecord(merchantId, customerId, addressId, input, clock());
  try {
    if (!(await replaceAddress(env.DB, address))) return { ok: false, reason: 'not_found', msg: `address ${addressId} of customer ${customerId} not found` };
  } catch (err) {
    if (isUniqueViolation(err)) return { ok: false, reason: 'conflict', msg: '(body): would duplicate another address of this customer' };
    throw err;
  }
  const after = await loadCustomer(env, merchantId, customerId);
  if (!after) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  return { ok: true, customer: customerView(after) };
}

export async function deleteAddress(env: Env, merchantId: string, customerId: string, addressId: string, clock: Clock): Promise<boolean> {
  return deleteAddressRow(env.DB, merchantId, customerId, addressId, isoTimestamp(clock()));
}

/** An address of the customer (for a transaction's billing or shipping), or null. */
export async function findCustomerAddresses(env: Env, merchantId: string, customerId: string): Promise<{ addresses: AddressRecord[]; profile: ProfileRecord | null }> {
  const [addresses, profile] = await Promise.all([listAddresses(env.DB, merchantId, customerId), findProfile(env.DB, merchantId, customerId)]);
  return { addresses, profile };
}
