/**
 * The customer vault: customers of a merchant and their stored cards and bank accounts.
 * Card and account numbers are sealed (card-crypto, associated data = merchant id); CVCs are never
 * kept. A customer's first payment method becomes its default.
 */
import type { Env } from '../env';
import { open, seal } from '../lib/card-crypto';
import { randomId } from '../lib/crypto';
import { formatExpiry, isExpired, parseExpiry } from '../lib/expiry';
import { containsCardNumber } from '../lib/card-number';
import { maskAccountNumber, maskCardNumber } from '../lib/mask';
import { isoTimestamp, type Clock } from '../lib/time';
import type { AchInput, CardInput, CustomerCreateInput, CustomerPatchInput, PaymentMethodInput } from '../schemas/vault';
import {
  deleteCustomer as deleteCustomerRows,
  findCustomer,
  findCustomersWithMethods,
  findPaymentMethod,
  insertCustomerStatement,
  insertPaymentMethodStatement,
  listPaymentMethods,
  setDefaultIfNoneStatement,
  updateCustomer as updateCustomerRow,
  type CustomerRecord,
  type PaymentMethodRecord,
  type ResolvedRow,
} from '../storage/vault';
import { readTempToken } from './tokens';

// ---- Resolution, for BIN lookup and the transaction engine ------------------------------------

export type VaultPaymentMethod =
  | { id: string; type: 'card'; number: string; expiration: string; masked: string }
  | {
      id: string;
      type: 'ach';
      account_number: string;
      routing_number: string;
      account_type: 'checking' | 'savings';
      sec_code: 'WEB' | 'CCD' | 'PPD';
      masked: string;
    };

export interface VaultCustomer {
  id: string;
  surchargeExempt: boolean;
  email: string | null;
  description: string | null;
}

export type ResolveFailure =
  | 'customer_not_found'
  | 'payment_method_not_found'
  | 'no_default_payment_method'
  | 'payment_method_type_mismatch';

export interface VaultReference {
  customerId: string;
  paymentMethodId?: string;
  paymentMethodType?: 'card' | 'ach';
}

export type VaultResolution =
  | { ok: true; customer: VaultCustomer; method: VaultPaymentMethod }
  | { ok: false; reason: ResolveFailure; msg: string };

/**
 * The payment method a charge or lookup for `customerId` uses: `paymentMethodId` when given,
 * else the customer's default. `paymentMethodType`, when given, must match the method found.
 * One indexed D1 query and one decrypt.
 */
export async function resolveVaultPaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  options: { paymentMethodId?: string; paymentMethodType?: 'card' | 'ach' },
): Promise<VaultResolution> {
  const [answer] = await resolveVaultPaymentMethods(env, merchantId, [{ customerId, ...options }]);
  if (!answer) throw new Error('vault resolution answered nothing');
  return answer;
}

/** `resolveVaultPaymentMethod` for many references (a batch chunk's rows) in one D1 query. */
export async function resolveVaultPaymentMethods(
  env: Env,
  merchantId: string,
  references: readonly VaultReference[],
): Promise<VaultResolution[]> {
  const rows = await findCustomersWithMethods(
    env.DB,
    merchantId,
    references.map((reference) => ({ customerId: reference.customerId, paymentMethodId: reference.paymentMethodId ?? null })),
  );
  return Promise.all(references.map((reference, i) => resolveFromRow(env, merchantId, reference, rows[i] ?? null)));
}

async function resolveFromRow(
  env: Env,
  merchantId: string,
  reference: VaultReference,
  row: ResolvedRow | null,
): Promise<VaultResolution> {
  // Callers pass ids straight from requests and CSV rows; one holding a card number is not echoed.
  const shownCustomer = quotableId(reference.customerId);
  if (!row) return { ok: false, reason: 'customer_not_found', msg: `customer_id: no vault customer ${shownCustomer}` };
  if (!row.method) {
    return reference.paymentMethodId !== undefined
      ? {
          ok: false,
          reason: 'payment_method_not_found',
          msg: `payment_method_id: customer ${shownCustomer} has no payment method ${quotableId(reference.paymentMethodId)}`,
        }
      : {
          ok: false,
          reason: 'no_default_payment_method',
          msg: `customer_id: customer ${shownCustomer} has no default payment method`,
        };
  }
  if (reference.paymentMethodType !== undefined && reference.paymentMethodType !== row.method.type) {
    return {
      ok: false,
      reason: 'payment_method_type_mismatch',
      msg: `payment_method_type: payment method ${row.method.id} is ${row.method.type}, not ${reference.paymentMethodType}`,
    };
  }
  const method = await unsealMethod(env, merchantId, row.method);
  return { ok: true, customer: toVaultCustomer(row.customer), method };
}

function quotableId(id: string): string {
  return containsCardNumber(id) ? '(a card number)' : id;
}

async function unsealMethod(env: Env, merchantId: string, record: PaymentMethodRecord): Promise<VaultPaymentMethod> {
  const number = await open(env.CARD_DATA_KEY, record.sealed_number, merchantId);
  // A row that does not open is corrupted or was written under another key: a server fault, not user input.
  if (number === null) throw new Error(`vault payment method ${record.id} could not be unsealed`);
  if (record.type === 'card') {
    return { id: record.id, type: 'card', number, expiration: record.expiration ?? '', masked: record.masked };
  }
  return {
    id: record.id,
    type: 'ach',
    account_number: number,
    routing_number: record.routing_number ?? '',
    account_type: record.account_type ?? 'checking',
    sec_code: record.sec_code ?? 'WEB',
    masked: record.masked,
  };
}

function toVaultCustomer(record: CustomerRecord): VaultCustomer {
  return {
    id: record.id,
    surchargeExempt: record.surcharge_exempt,
    email: record.email,
    description: record.description,
  };
}

// ---- What the API shows: masked only --------------------------------------------------------

export type PaymentMethodView =
  | { id: string; type: 'card'; masked_number: string; expiration: string; is_default: boolean; created_at: string }
  | {
      id: string;
      type: 'ach';
      masked_account_number: string;
      routing_number: string;
      account_type: string;
      sec_code: string;
      is_default: boolean;
      created_at: string;
    };

export interface CustomerView {
  id: string;
  description: string | null;
  email: string | null;
  flags: 'surcharge_exempt'[];
  default_payment_method_id: string | null;
  payment_methods: PaymentMethodView[];
  created_at: string;
  updated_at: string;
}

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

function customerView(record: CustomerRecord, methods: PaymentMethodRecord[]): CustomerView {
  return {
    id: record.id,
    description: record.description,
    email: record.email,
    flags: record.surcharge_exempt ? ['surcharge_exempt'] : [],
    default_payment_method_id: record.default_payment_method_id,
    payment_methods: methods.map((method) => methodView(method, record.default_payment_method_id)),
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

// ---- Commands ---------------------------------------------------------------------------------

/** Failures a client can fix, each with a msg naming the field. */
export type VaultFailure =
  | { ok: false; reason: 'invalid'; msg: string }
  | { ok: false; reason: 'not_found'; msg: string }
  | { ok: false; reason: 'conflict'; msg: string };

type Built = { ok: true; record: PaymentMethodRecord } | VaultFailure;

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
  const expiry = expiration === undefined ? null : parseExpiry(expiration);
  if (number === undefined || expiry === null) {
    return { ok: false, reason: 'invalid', msg: `${field}.expiration: is required` };
  }
  if (isExpired(expiry, now)) return { ok: false, reason: 'invalid', msg: `${field}.expiration: card has expired` };
  return {
    ok: true,
    record: {
      merchant_id: merchantId,
      id: randomId(20),
      customer_id: customerId,
      type: 'card',
      sealed_number: await seal(env.CARD_DATA_KEY, number, merchantId),
      masked: maskCardNumber(number),
      expiration: formatExpiry(expiry),
      routing_number: null,
      account_type: null,
      sec_code: null,
      created_at: isoTimestamp(now),
    },
  };
}

async function buildAch(env: Env, merchantId: string, customerId: string, ach: AchInput, now: Date): Promise<Built> {
  return {
    ok: true,
    record: {
      merchant_id: merchantId,
      id: randomId(20),
      customer_id: customerId,
      type: 'ach',
      sealed_number: await seal(env.CARD_DATA_KEY, ach.account_number, merchantId),
      masked: maskAccountNumber(ach.account_number),
      expiration: null,
      routing_number: ach.routing_number,
      account_type: ach.account_type,
      sec_code: ach.sec_code,
      created_at: isoTimestamp(now),
    },
  };
}

function buildPaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  input: PaymentMethodInput,
  now: Date,
): Promise<Built> {
  return 'card' in input
    ? buildCard(env, merchantId, customerId, input.card, now, 'payment_method.card')
    : buildAch(env, merchantId, customerId, input.ach, now);
}

export async function createCustomer(
  env: Env,
  merchantId: string,
  input: CustomerCreateInput,
  clock: Clock,
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  const now = clock();
  const id = input.id ?? randomId(20);
  let method: PaymentMethodRecord | null = null;
  if (input.payment_method) {
    const built = await buildPaymentMethod(env, merchantId, id, input.payment_method, now);
    if (!built.ok) return built;
    method = built.record;
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
  try {
    await env.DB.batch([
      insertCustomerStatement(env.DB, customer),
      ...(method ? [insertPaymentMethodStatement(env.DB, method)] : []),
    ]);
  } catch (err) {
    // Two creates racing for the same id: the primary key decides, the loser hears 409.
    if (err instanceof Error && /UNIQUE constraint failed/.test(err.message)) {
      return { ok: false, reason: 'conflict', msg: `id: customer ${id} already exists` };
    }
    throw err;
  }
  return { ok: true, customer: customerView(customer, method ? [method] : []) };
}

export async function getCustomer(env: Env, merchantId: string, id: string): Promise<CustomerView | null> {
  const [customer, methods] = await Promise.all([
    findCustomer(env.DB, merchantId, id),
    listPaymentMethods(env.DB, merchantId, id),
  ]);
  return customer ? customerView(customer, methods) : null;
}

/** Adds a card or bank account; it becomes the default when the customer had none. */
export async function addPaymentMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  input: { card: CardInput } | { ach: AchInput },
  clock: Clock,
): Promise<{ ok: true; method: PaymentMethodView } | VaultFailure> {
  const now = clock();
  if (!(await findCustomer(env.DB, merchantId, customerId))) {
    return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  }
  const built =
    'card' in input
      ? await buildCard(env, merchantId, customerId, input.card, now, 'card')
      : await buildAch(env, merchantId, customerId, input.ach, now);
  if (!built.ok) return built;
  await env.DB.batch([
    insertPaymentMethodStatement(env.DB, built.record),
    setDefaultIfNoneStatement(env.DB, merchantId, customerId, built.record.id, isoTimestamp(now)),
  ]);
  const customer = await findCustomer(env.DB, merchantId, customerId);
  return { ok: true, method: methodView(built.record, customer?.default_payment_method_id ?? null) };
}

export async function updateCustomer(
  env: Env,
  merchantId: string,
  customerId: string,
  patch: CustomerPatchInput,
  clock: Clock,
): Promise<{ ok: true; customer: CustomerView } | VaultFailure> {
  if (!(await findCustomer(env.DB, merchantId, customerId))) {
    return { ok: false, reason: 'not_found', msg: `customer ${customerId} not found` };
  }
  const newDefault = patch.default_payment_method_id;
  if (newDefault !== undefined && !(await findPaymentMethod(env.DB, merchantId, customerId, newDefault))) {
    return {
      ok: false,
      reason: 'invalid',
      msg: `default_payment_method_id: customer ${customerId} has no payment method ${newDefault}`,
    };
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
  return { ok: true, customer: customerView(updated, await listPaymentMethods(env.DB, merchantId, customerId)) };
}

/** Deletes the customer and all its payment methods; false when it did not exist for this merchant. */
export function deleteCustomer(env: Env, merchantId: string, customerId: string): Promise<boolean> {
  return deleteCustomerRows(env.DB, merchantId, customerId);
}
