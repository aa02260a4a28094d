/**
 * Vault resolution, for the BIN lookup and the transaction engine: which stored card or bank
 * account a reference (customer, optional payment method id and type) means, unsealed for use.
 * Card and account numbers are sealed (card-crypto, associated data = merchant id).
 */
import type { Env } from '../../env';
import { open } from '../../lib/card-crypto';
import { describeVaultFailure, type ResolveFailure, type VaultCustomer, type VaultPaymentMethod, type VaultReference, type VaultResolution } from '../../schemas/vault-resolution';
import { findCustomersWithMethods, type CustomerRecord, type PaymentMethodRecord, type ResolvedRow } from '../../storage/vault';

export type { ResolveFailure, VaultCustomer, VaultPaymentMethod, VaultReference, VaultResolution } from '../../schemas/vault-resolution';

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
  if (!row) return failure('customer_not_found', reference);
  if (!row.method) return failure(reference.paymentMethodId !== undefined ? 'payment_method_not_found' : 'no_default_payment_method', reference);
  if (reference.paymentMethodType !== undefined && reference.paymentMethodType !== row.method.type) {
    return failure('payment_method_type_mismatch', reference, row.method);
  }
  const method = await unsealMethod(env, merchantId, row.method);
  return { ok: true, customer: toVaultCustomer(row.customer), method };
}

function failure(reason: ResolveFailure, reference: VaultReference, method?: PaymentMethodRecord): VaultResolution {
  const { field, text } = describeVaultFailure(reason, reference, method);
  return { ok: false, reason, msg: `${field}: ${text}` };
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

