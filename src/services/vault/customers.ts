/**
 * The customer vault's commands and views: customers of a merchant and their stored cards and bank
 * accounts. Numbers are sealed before they are stored; CVCs are never kept; the API shows masked
 * numbers only. A customer's first payment method becomes its default.
 */
import type { Env } from '../../env';
import { open, seal } from '../../lib/card-crypto';
import { randomId } from '../../lib/crypto';
import { checkExpiration, formatExpiry } from '../../lib/expiry';
import { maskAccountNumber, maskCardNumber } from '../../lib/mask';
import { isoTimestamp, type Clock } from '../../lib/time';
import { detectBrand } from '../../lib/card-brand';
import { sha256Hex } from '../../lib/crypto';
import type { AchInput, CardInput, CardUpdateInput, CustomerCreateInput, CustomerPatchInput, CustomerSearchInput, PaymentMethodInput, VaultAddressInput } from '../../schemas/vault';
import type { CustomerView, PaymentMethodView } from '../../schemas/vault-response';
import {
  ADDRESS_FIELDS,
  deleteAddress as deleteAddressRow,
  deletePaymentMethod as deletePaymentMethodRow,
  findProfile,
  insertAddressStatement,
  listAddresses,
  replaceAddress,
  searchCustomers as searchCustomerRows,
  upsertProfileStatement,
  type AddressRecord,
  type CustomerCondition,
  type ProfileChanges,
  type ProfileRecord,
} from '../../storage/vault-addresses';
import {
  deleteCustomer as deleteCustomerRows,
  findCustomer,
  findPaymentMethod,
  insertCustomerStatement,
  insertPaymentMethodStatement,
  listPaymentMethods,
  replacePaymentMethodStatements,
  setDefaultIfNoneStatement,
  updateCustomer as updateCustomerRow,
  type CustomerRecord,
  type PaymentMethodRecord,
} from '../../storage/vault';
import { readTempToken } from '../tokens';

// ---- What the API shows: masked only --------------------------------------------------------

export type { CustomerView, PaymentMethodView };

function methodView(record: PaymentMethodRecord, defaultId: string | null): PaymentMethodView {
  const isDefault = record.id === defaultId;
  if (record.type === 'card') {
    return {
      id: record.id,
      type: 'card',
      masked_number: record.masked,
      expiration: record.expiration ?? '',
      is_default: isDefault,
      created_at: record.created_at,
    };
  }
  return {
    id: record.id,
    type: 'ach',
    masked_account_number: record.masked,
    routing_number: record.routing_number ?? '',
    account_type: record.account_type ?? '',
    sec_code: record.sec_code ?? '',
    is_default: isDefault,
    created_at: record.created_at,
  };
}

/** Everything the vault holds on one customer: what its view is made of. */
interface CustomerState {
  record: CustomerRecord;
  methods: PaymentMethodRecord[];
  addresses: AddressRecord[];
  profile: ProfileRecord | null;
}

function addressView(address: AddressRecord) {
  return {
    id: address.id,
    hash: address.hash,
    ...(Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, address[field]])) as Record<(typeof ADDRESS_FIELDS)[number], string | null>),
  };
}

/**
 * The customer as every vault answer gives it: binbatch's flat fields, and the same customer nested
 * under `data.customer` as FluidPay's clients read it (docs/vault.md, "FluidPay's shape").
 */
function customerView({ record, methods, addresses, profile }: CustomerState, extra: { created_payment_method_id?: string; created_address_id?: string } = {}): CustomerView {
  const flags: 'surcharge_exempt'[] = record.surcharge_exempt ? ['surcharge_exempt'] : [];
  const defaultMethod = methods.find((m) => m.id === record.default_payment_method_id) ?? null;
  return {
    id: record.id,
    owner_id: record.merchant_id,
    description: record.description,
    notes: profile?.notes ?? null,
    email: record.email,
    flags,
    default_payment_method_id: record.default_payment_method_id,
    payment_methods: methods.map((method) => methodView(method, record.default_payment_method_id)),
    addresses: addresses.map(addressView),
    default_billing_address_id: profile?.default_billing_address_id ?? null,
    default_shipping_address_id: profile?.default_shipping_address_id ?? null,
    data: {
      customer: {
        description: record.description ?? '',
        notes: profile?.notes ?? '',
        flags,
        defaults: {
          payment_method_id: defaultMethod?.id ?? '',
          payment_method_type: defaultMethod?.type ?? '',
          billing_address_id: profile?.default_billing_address_id ?? '',
          shipping_address_id: profile?.default_shipping_address_id ?? '',
        },
        addresses: addresses.map(addressView),
        payments: {
          cards: methods
            .filter((m) => m.type === 'card')
            .map((m) => ({ id: m.id, card_type: detectBrand(m.masked.slice(0, 6)) ?? '', masked_number: m.masked, expiration_date: m.expiration ?? '', flags: [], processor_id: '' })),
          ach: methods
            .filter((m) => m.type === 'ach')
            .map((m) => ({
              id: m.id,
              account_type: m.account_type ?? '',
              sec_code: (m.sec_code ?? '').toLowerCase(),
              masked_account_number: m.masked,
              routing_number: m.routing_number ?? '',
              flags: [],
              processor_id: '',
            })),
        },
      },
    },
    ...extra,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

async function loadCustomer(env: Env, merchantId: string, id: string): Promise<CustomerState | null> {
  const [record, methods, addresses, profile] = await Promise.all([
    findCustomer(env.DB, merchantId, id),
    listPaymentMethods(env.DB, merchantId, id),
    listAddresses(env.DB, merchantId, id),
    findProfile(env.DB, merchantId, id),
  ]);
  return record ? { record, methods, addresses, profile } : null;
}

// ---- Commands ---------------------------------------------------------------------------------

/** Failures a client can fix, each with a msg naming the field. */
export type VaultFailure =
  | { ok: false; reason: 'invalid'; msg: string }
  | { ok: false; reason: 'not_found'; msg: string }
  | { ok: false; reason: 'conflict'; msg: string }
  /** `?validate=true`: the card's verification was not approved; nothing was stored. */
  | { ok: false; reason: 'declined'; msg: string };

/** A card's zero-amount verification (the `validate` query of FluidPay's vault calls). */
export type VerifyCard = (card: { number: string; expiration: string }) => Promise<{ approved: true } | { approved: false; msg: string }>;

/** What a vault call may be asked beyond its body: FluidPay's `?validate=true`. */
export interface VaultOptions {
  verify?: VerifyCard | undefined;
}

type Built = { ok: true; record: PaymentMethodRecord; card: { number: string; expiration: string } | null } | VaultFailure;

/** At most this many addresses a customer: the vault's rows stay a few per customer (docs/capacity.md). */
export const MAX_ADDRESSES_PER_CUSTOMER = 20;

async function buildCard(
  env: Env,
  merchantId: string,
  customerId: string,
  card: CardInput,
  now: Date,
  field: string,
): Promise<Built> {
  let number = card.number;
  let expiration = card.expiration;
  if (card.temp_token !== undefined) {
    const token = await readTempToken(env, merchantId, card.temp_token, now);
    if (!token.ok) return { ok: false, reason: 'invalid', msg: `${field}.temp_token: unknown or expired token` };
    number = token.card.number;
    expiration ??= token.card.expiration; // the token's CVC is deliberately left behind
  }
  const checked = expiration === undefined ? null : checkExpiration(expiration, now);
  if (number === undefined || checked === null || (!checked.ok && checked.problem === 'malformed')) {
    return { ok: false, reason: 'invalid', msg: `${field}.expiration: is required` };
  }
  if (!checked.ok) return { ok: false, reason: 'invalid', msg: `${field}.expiration: card has expired` };
  const record = await sealedMethod(env, merchantId, customerId, card.id, number, now, {
    type: 'card',
    masked: maskCardNumber(number),
    expiration: formatExpiry(checked.expiry),
    routing_number: null,
    account_type: null,
    sec_code: null,
  });
  return { ok: true, record, card: { number, expiration: formatExpiry(checked.expiry) } };
}

async function buildAch(env: Env, merchantId: string, customerId: string, ach: AchInput, now: Date): Promise<Built> {
  const record = await sealedMethod(env, merchantId, customerId, ach.id, ach.account_number, now, {
    type: 'ach',
    masked: maskAccountNumber(ach.account_number),
    expiration: null,
    routing_number: ach.routing_number,
    account_type: ach.account_type,
    sec_code: ach.sec_code,
  });
  return { ok: true, record, card: null };
}

/** A new payment method row: the number sealed under the merchant, only its masked form in clear. */
async function sealedMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  id: string | undefined,
  number: string,
  now: Date,
  fields: Pick<PaymentMethodRecord, 'type' | 'masked' | 'expiration' | 'routing_number' | 'account_type' | 'sec_code'>,
): Promise<PaymentMethodRecord> {
  return {
    merchant_id: merchantId,
    id: id ?? randomId(20),
    customer_id: customerId,
    sealed_number: await seal(env.CARD_DATA_KEY, number, merchantId),
    created_at: isoTimestamp(now),
    ...fields,
  };
}

async function buildPaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  input: PaymentMethodInput | { card: CardInput } | { ach: AchInput },
  now: Date,
  field: string,
  options: VaultOptions,
): Promise<Built> {
  const built = 'card' in input ? await buildCard(env, merchantId, customerId, input.card, now, `${field}card`) : await buildAch(env, merchantId, customerId, input.ach, now);
  // FluidPay's ?validate=true: a zero-amount verification before the card is kept (cards only).
  if (built.ok && built.card && options.verify) {
    const verified = await options.verify(built.card);
    if (!verified.approved) return { ok: false, reason: 'declined', msg: `validate: the card's verification was declined (${verified.msg}); nothing was stored` };
  }
  return built;
}

/** An address row; its hash is over its fields, so an identical address is found by it. */
async function addressRecord(merchantId: string, customerId: string, id: string, input: VaultAddressInput, now: Date): Promise<AddressRecord> {
  const fields = Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, input[field] === undefined || input[field] === '' ? null : input[field]])) as Record<(typeof ADDRESS_FIELDS)[number], string | null>;
  const hash = await sha256Hex(JSON.stringify(ADDRESS_FIELDS.map((field) => fields[field])));
  return { merchant_id: merchantId, id, customer_id: customerId, hash, created_at: isoTimestamp(now), ...fields };
}

const isUniqueViolation = (err: unknown) => err instanceof Error && /UNIQUE constraint failed/.test(err.message);

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

/**
 * Adds a card or bank account; it becomes the default when the customer had none. Answers the
 * whole customer and the new method's id (`created_payment_method_id`), as FluidPay's vault does.
 */
export async function addPaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  input: { card: CardInput } | { ach: AchInput },
  clock: Clock,
  options: VaultOptions = {},
): Promise<{ ok: true; customer: CustomerView; method: PaymentMethodView } | VaultFailure> {
  const now = clock();
  if (!(await findCustomer(env.DB, merchantId, customerId))) {
    return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  }
  const built = await buildPaymentMethod(env, merchantId, customerId, input, now, '', options);
  if (!built.ok) return built;
  try {
    await env.DB.batch([
      insertPaymentMethodStatement(env.DB, built.record),
      setDefaultIfNoneStatement(env.DB, merchantId, customerId, built.record.id, isoTimestamp(now)),
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) return { ok: false, reason: 'conflict', msg: `id: payment method ${built.record.id} already exists` };
    throw err;
  }
  const state = await loadCustomer(env, merchantId, customerId);
  if (!state) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  return {
    ok: true,
    customer: customerView(state, { created_payment_method_id: built.record.id }),
    method: methodView(built.record, state.record.default_payment_method_id),
  };
}

/**
 * FluidPay's UpdateCard, UpdateToken and UpdateACH: the stored method keeps its id (and its place
 * as the default) and takes the new content; a card's number or expiration left out stays as
 * stored. `?validate=true` verifies the card as it will be stored before anything is written.
 */
export async function replacePaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  methodId: string,
  input: { card: CardUpdateInput } | { ach: AchInput },
  clock: Clock,
  options: VaultOptions = {},
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const now = clock();
  const kind = 'card' in input ? 'card' : 'ach';
  const stored = await findPaymentMethod(env.DB, merchantId, customerId, methodId);
  // A bank account's id on the card path (or the reverse) is not a card of this customer: 404.
  if (!stored || stored.type !== kind) return { ok: false, reason: 'not_found', msg: `${kind === 'card' ? 'card' : 'bank account'} ${methodId} of customer ${customerId} not found` };
  const givenId = 'card' in input ? input.card.id : input.ach.id;
  if (givenId !== undefined && givenId !== methodId) return { ok: false, reason: 'invalid', msg: `id: is the method's own (${methodId}) and cannot change` };
  let built: Built;
  if ('ach' in input) {
    built = await buildAch(env, merchantId, customerId, input.ach, now);
  } else if (input.card.number !== undefined || input.card.temp_token !== undefined) {
    const expiration = input.card.expiration ?? (input.card.temp_token === undefined ? (stored.expiration ?? undefined) : undefined);
    built = await buildCard(env, merchantId, customerId, { ...input.card, expiration }, now, 'card');
  } else {
    // Only the expiration: the stored number stays sealed as it is (opened only to verify it).
    const checked = checkExpiration(input.card.expiration ?? '', now);
    if (!checked.ok) return { ok: false, reason: 'invalid', msg: `expiration: ${checked.problem === 'malformed' ? 'is required' : 'card has expired'}` };
    const expiration = formatExpiry(checked.expiry);
    const number = options.verify ? await open(env.CARD_DATA_KEY, stored.sealed_number, merchantId) : null;
    if (options.verify && number === null) throw new Error(`the stored number of payment method ${methodId} cannot be opened`);
    built = { ok: true, record: { ...stored, expiration }, card: number === null ? null : { number, expiration } };
  }
  if (!built.ok) return built;
  if (built.card && options.verify) {
    const verified = await options.verify(built.card);
    if (!verified.approved) return { ok: false, reason: 'declined', msg: `validate: the card's verification was declined (${verified.msg}); nothing was changed` };
  }
  await env.DB.batch(replacePaymentMethodStatements(env.DB, { ...built.record, id: methodId, created_at: stored.created_at }, isoTimestamp(now)));
  const state = await loadCustomer(env, merchantId, customerId);
  if (!state) return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  return { ok: true, customer: customerView(state) };
}

/** Removes one card or bank account; a default it was is cleared. */
export async function deletePaymentMethod(env: Env, merchantId: string, customerId: string, methodId: string, clock: Clock): Promise<boolean> {
  return deletePaymentMethodRow(env.DB, merchantId, customerId, methodId, isoTimestamp(clock()));
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

// ---- Addresses (FluidPay's vault) ---------------------------------------------------------------

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
      env.DB.prepare('UPDATE vault_customers SET updated_at = ?3 WHERE merchant_id = ?1 AND id = ?2').bind(merchantId, customerId, isoTimestamp(now)),
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
