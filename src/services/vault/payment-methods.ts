/**
 * A customer's stored cards and bank accounts: added, replaced (FluidPay's UpdateCard, UpdateToken
 * and UpdateACH) and removed. Numbers are sealed before they are stored; CVCs are never kept; the
 * API shows masked numbers only. A customer's first payment method becomes its default.
 */
import type { Env } from '../../env';
import { open, seal } from '../../lib/card-crypto';
import { randomId } from '../../lib/crypto';
import { checkExpiration, formatExpiry } from '../../lib/expiry';
import { maskAccountNumber, maskCardNumber } from '../../lib/mask';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { AchInput, CardInput, CardUpdateInput, PaymentMethodInput } from '../../schemas/vault';
import { deletePaymentMethod as deletePaymentMethodRow } from '../../storage/vault-addresses';
import {
  findCustomer,
  findPaymentMethod,
  insertPaymentMethodStatement,
  replacePaymentMethodStatements,
  setDefaultIfNoneStatement,
  type PaymentMethodRecord,
} from '../../storage/vault';
import { readTempToken } from '../tokens';
import { customerView, loadCustomer, methodView, type CustomerView, type PaymentMethodView } from './customer-view';
import { isUniqueViolation, type VaultFailure } from './failures';

/** A card's zero-amount verification (the `validate` query of FluidPay's vault calls). */
export type VerifyCard = (card: { number: string; expiration: string }) => Promise<{ approved: true } | { approved: false; msg: string }>;

/** What a vault call may be asked beyond its body: FluidPay's `?validate=true`. */
export interface VaultOptions {
  verify?: VerifyCard | undefined;
}

type Built = { ok: true; record: PaymentMethodRecord; card: { number: string; expiration: string } | null } | VaultFailure;

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

export async function buildPaymentMethod(
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
