/**
 * The customer vault's commands and views: customers of a merchant and their stored cards and bank
 * accounts. Numbers are sealed before they are stored; CVCs are never kept; the API shows masked
 * numbers only. A customer's first payment method becomes its default.
 */
import type { Env } from '../../env';
import { seal } from '../../lib/card-crypto';
import { randomId } from '../../lib/crypto';
import { checkExpiration, formatExpiry } from '../../lib/expiry';
import { maskAccountNumber, maskCardNumber } from '../../lib/mask';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { AchInput, CardInput, CustomerCreateInput, CustomerPatchInput, PaymentMethodInput } from '../../schemas/vault';
import type { CustomerView, PaymentMethodView } from '../../schemas/vault-response';
import {
  deleteCustomer as deleteCustomerRows,
  findCustomer,
  findPaymentMethod,
  insertCustomerStatement,
  insertPaymentMethodStatement,
  listPaymentMethods,
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
  const checked = expiration === undefined ? null : checkExpiration(expiration, now);
  if (number === undefined || checked === null || (!checked.ok && checked.problem === 'malformed')) {
    return { ok: false, reason: 'invalid', msg: `${field}.expiration: is required` };
  }
  if (!checked.ok) return { ok: false, reason: 'invalid', msg: `${field}.expiration: card has expired` };
  const record = await sealedMethod(env, merchantId, customerId, number, now, {
    type: 'card',
    masked: maskCardNumber(number),
    expiration: formatExpiry(checked.expiry),
    routing_number: null,
    account_type: null,
    sec_code: null,
  });
  return { ok: true, record };
}

async function buildAch(env: Env, merchantId: string, customerId: string, ach: AchInput, now: Date): Promise<Built> {
  const record = await sealedMethod(env, merchantId, customerId, ach.account_number, now, {
    type: 'ach',
    masked: maskAccountNumber(ach.account_number),
    expiration: null,
    routing_number: ach.routing_number,
    account_type: ach.account_type,
    sec_code: ach.sec_code,
  });
  return { ok: true, record };
}

/** A new payment method row: the number sealed under the merchant, only its masked form in clear. */
async function sealedMethod(
  env: Env,
  merchantId: string,
  customerId: string,
  number: string,
  now: Date,
  fields: Pick<PaymentMethodRecord, 'type' | 'masked' | 'expiration' | 'routing_number' | 'account_type' | 'sec_code'>,
): Promise<PaymentMethodRecord> {
  return {
    merchant_id: merchantId,
    id: randomId(20),
    customer_id: customerId,
    sealed_number: await seal(env.CARD_DATA_KEY, number, merchantId),
    created_at: isoTimestamp(now),
    ...fields,
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
