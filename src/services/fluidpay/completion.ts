/**
 * The two parts of FluidPay's transaction body that need a lookup before the engine can take it:
 * `payment_method.token` (the temp token's card) and a vault customer's addresses
 * (`billing_address_id` / `shipping_address_id`, else the customer's default addresses). The
 * result is the batch CSV's columns, as for any request (request.ts).
 */
import type { Env } from '../../env';
import type { FieldError } from '../../lib/field-errors';
import type { InputColumn, TransactionInput } from '../../schemas/transaction-columns';
import type { AddressRecord } from '../../storage/vault-addresses';
import { readTempToken } from '../tokens';
import { findCustomerAddresses } from '../vault/addresses';
import type { TransactionRequestBody } from './request';

const VAULT_TO_COLUMN = {
  first_name: 'first_name',
  last_name: 'last_name',
  company: 'company',
  line_1: 'address_line_1',
  line_2: 'address_line_2',
  city: 'city',
  state: 'state',
  postal_code: 'postal_code',
  country: 'country',
  email: 'email',
  phone: 'phone',
  fax: 'fax',
} as const;

export async function completeFluidPayInput(
  env: Env,
  merchantId: string,
  request: TransactionRequestBody,
  now: Date,
): Promise<{ ok: true; input: TransactionInput } | { ok: false; errors: FieldError[] }> {
  const input: TransactionInput = { ...request.input };
  if (request.token !== null) {
    const token = await readTempToken(env, merchantId, request.token, now);
    if (!token.ok) return { ok: false, errors: [{ field: 'payment_method.token', msg: 'unknown or expired token (a temp token lives 15 minutes)' }] };
    input.cc_number = token.card.number;
    input.cc_expiration = token.card.expiration;
    if (token.card.cvc !== undefined) input.cc_cvc = token.card.cvc;
  }
  const vault = request.vaultAddresses;
  if (vault !== null) {
    const hasBilling = Object.keys(input).some((key) => key.startsWith('billing_'));
    const hasShipping = Object.keys(input).some((key) => key.startsWith('shipping_') && key !== 'shipping_amount');
    const wantsBilling = !hasBilling || vault.billingAddressId !== null;
    const wantsShipping = !hasShipping || vault.shippingAddressId !== null;
    if (wantsBilling || wantsShipping) {
      const { addresses, profile } = await findCustomerAddresses(env, merchantId, vault.customerId);
      const pick = (field: string, id: string | null, fallback: string | null): { address: AddressRecord | null } | { error: FieldError } => {
        if (id === null) return { address: addresses.find((a) => a.id === fallback) ?? null };
        const address = addresses.find((a) => a.id === id);
        return address ? { address } : { error: { field, msg: `customer ${vault.customerId} has no address ${id}` } };
      };
      const errors: FieldError[] = [];
      for (const [prefix, wanted, id, fallback] of [
        ['billing', wantsBilling, vault.billingAddressId, profile?.default_billing_address_id ?? null],
        ['shipping', wantsShipping, vault.shippingAddressId, profile?.default_shipping_address_id ?? null],
      ] as const) {
        if (!wanted) continue;
        const found = pick(`payment_method.customer.${prefix}_address_id`, id, fallback);
        if ('error' in found) {
          errors.push(found.error);
          continue;
        }
        if (found.address === null) continue;
        // An address id and an address object for the same role: the id is the explicit choice.
        for (const key of Object.keys(input)) if (key.startsWith(`${prefix}_`) && key !== 'shipping_amount') delete input[key as InputColumn];
        for (const [vaultField, column] of Object.entries(VAULT_TO_COLUMN)) {
          const value = found.address[vaultField as keyof typeof VAULT_TO_COLUMN];
          if (value !== null) input[`${prefix}_${column}` as InputColumn] = value;
        }
      }
      if (errors.length > 0) return { ok: false, errors };
    }
  }
  return { ok: true, input };
}
