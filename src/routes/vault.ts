/**
 * The customer vault: secret key only; a merchant sees only its own customers. binbatch's paths
 * (GET / PATCH / DELETE /api/vault/customer/{id}) and FluidPay's (GET / DELETE /api/vault/{id},
 * POST /api/vault/customer/{id} to update, POST /api/vault/customer/search, addresses) answer the
 * same customer: binbatch's fields and FluidPay's nested `data.customer` (docs/vault.md).
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import {
  achSchema,
  addressParamSchema,
  cardSchema,
  cardUpdateSchema,
  customerCreateSchema,
  customerParamSchema,
  customerPatchSchema,
  customerSearchSchema,
  paymentMethodParamSchema,
  tokenMethodSchema,
  vaultAddressSchema,
  verificationQuerySchema,
} from '../schemas/vault';
import { addAddress, deleteAddress, updateAddress } from '../services/vault/addresses';
import { createCustomer, deleteCustomer, getCustomer, searchCustomers, updateCustomer } from '../services/vault/customers';
import type { VaultFailure } from '../services/vault/failures';
import { addPaymentMethod, deletePaymentMethod, replacePaymentMethod, type VaultOptions } from '../services/vault/payment-methods';
import { cardVerifier } from '../services/recorded';

function raise(failure: VaultFailure): never {
  switch (failure.reason) {
    case 'invalid':
      throw new AppError('bad_request', failure.msg);
    case 'not_found':
      throw new AppError('not_found', failure.msg);
    case 'conflict':
      throw new AppError('conflict', failure.msg);
    case 'declined':
      throw new AppError('payment_declined', failure.msg);
  }
}

/** FluidPay's `?validate=true`: a zero-amount verification of the card before it is stored. */
function options(c: Context<AppEnv>, query: { validate?: boolean | undefined }): VaultOptions {
  return { verify: query.validate ? cardVerifier(c.env, c.get('caller'), systemClock) : undefined };
}

async function answerCustomer(c: Context<AppEnv>, id: string) {
  const customer = await getCustomer(c.env, c.get('caller').merchantId, id);
  if (!customer) throw new AppError('not_found', `customer ${id} not found`);
  return c.json(success(customer));
}

async function removeCustomer(c: Context<AppEnv>, id: string) {
  if (!(await deleteCustomer(c.env, c.get('caller').merchantId, id))) throw new AppError('not_found', `customer ${id} not found`);
  return c.json(success({ id, deleted: true }));
}

export const vault = new Hono<AppEnv>()
  .use('*', requireSecretKey)
  .post('/customer', validate('query', verificationQuerySchema), validate('json', customerCreateSchema), async (c) => {
    const result = await createCustomer(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock, options(c, c.req.valid('query')));
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  // Before /customer/:id: "search" is FluidPay's path, not a customer id.
  .post('/customer/search', validate('json', customerSearchSchema), async (c) => {
    const found = await searchCustomers(c.env, c.get('caller').merchantId, c.req.valid('json'));
    return c.json({ status: 'success' as const, msg: 'success' as const, data: found.customers, total_count: found.total });
  })
  .get('/customer/:id', validate('param', customerParamSchema), (c) => answerCustomer(c, c.req.valid('param').id))
  .post('/customer/:id/card', validate('param', customerParamSchema), validate('query', verificationQuerySchema), validate('json', cardSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await addPaymentMethod(c.env, c.get('caller').merchantId, id, { card: c.req.valid('json') }, systemClock, options(c, c.req.valid('query')));
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  .post('/customer/:id/token', validate('param', customerParamSchema), validate('query', verificationQuerySchema), validate('json', tokenMethodSchema), async (c) => {
    const { id } = c.req.valid('param');
    const card = { temp_token: c.req.valid('json').token, expiration: undefined };
    const result = await addPaymentMethod(c.env, c.get('caller').merchantId, id, { card }, systemClock, options(c, c.req.valid('query')));
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  .post('/customer/:id/ach', validate('param', customerParamSchema), validate('query', verificationQuerySchema), validate('json', achSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await addPaymentMethod(c.env, c.get('caller').merchantId, id, { ach: c.req.valid('json') }, systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  // FluidPay's UpdateCard, UpdateToken and UpdateACH: the stored method keeps its id, takes the new content.
  .post('/customer/:id/card/:method_id', validate('param', paymentMethodParamSchema), validate('query', verificationQuerySchema), validate('json', cardUpdateSchema), async (c) => {
    const { id, method_id: methodId } = c.req.valid('param');
    const result = await replacePaymentMethod(c.env, c.get('caller').merchantId, id, methodId, { card: c.req.valid('json') }, systemClock, options(c, c.req.valid('query')));
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .post('/customer/:id/token/:method_id', validate('param', paymentMethodParamSchema), validate('query', verificationQuerySchema), validate('json', tokenMethodSchema), async (c) => {
    const { id, method_id: methodId } = c.req.valid('param');
    const card = { temp_token: c.req.valid('json').token, number: undefined, expiration: undefined };
    const result = await replacePaymentMethod(c.env, c.get('caller').merchantId, id, methodId, { card }, systemClock, options(c, c.req.valid('query')));
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .post('/customer/:id/ach/:method_id', validate('param', paymentMethodParamSchema), validate('json', achSchema), async (c) => {
    const { id, method_id: methodId } = c.req.valid('param');
    const result = await replacePaymentMethod(c.env, c.get('caller').merchantId, id, methodId, { ach: c.req.valid('json') }, systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .delete('/customer/:id/card/:method_id', validate('param', paymentMethodParamSchema), async (c) => {
    const { id, method_id: methodId } = c.req.valid('param');
    if (!(await deletePaymentMethod(c.env, c.get('caller').merchantId, id, methodId, systemClock))) throw new AppError('not_found', `payment method ${methodId} of customer ${id} not found`);
    return c.json(success({ id: methodId, deleted: true }));
  })
  .delete('/customer/:id/ach/:method_id', validate('param', paymentMethodParamSchema), async (c) => {
    const { id, method_id: methodId } = c.req.valid('param');
    if (!(await deletePaymentMethod(c.env, c.get('caller').merchantId, id, methodId, systemClock))) throw new AppError('not_found', `payment method ${methodId} of customer ${id} not found`);
    return c.json(success({ id: methodId, deleted: true }));
  })
  .post('/customer/:id/address', validate('param', customerParamSchema), validate('json', vaultAddressSchema), async (c) => {
    const result = await addAddress(c.env, c.get('caller').merchantId, c.req.valid('param').id, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  .post('/customer/:id/address/:address_id', validate('param', addressParamSchema), validate('json', vaultAddressSchema), async (c) => {
    const { id, address_id: addressId } = c.req.valid('param');
    const result = await updateAddress(c.env, c.get('caller').merchantId, id, addressId, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .delete('/customer/:id/address/:address_id', validate('param', addressParamSchema), async (c) => {
    const { id, address_id: addressId } = c.req.valid('param');
    if (!(await deleteAddress(c.env, c.get('caller').merchantId, id, addressId, systemClock))) throw new AppError('not_found', `address ${addressId} of customer ${id} not found`);
    return c.json(success({ id: addressId, deleted: true }));
  })
  .patch('/customer/:id', validate('param', customerParamSchema), validate('json', customerPatchSchema), async (c) => {
    const result = await updateCustomer(c.env, c.get('caller').merchantId, c.req.valid('param').id, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  // FluidPay updates with POST.
  .post('/customer/:id', validate('param', customerParamSchema), validate('json', customerPatchSchema), async (c) => {
    const result = await updateCustomer(c.env, c.get('caller').merchantId, c.req.valid('param').id, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .delete('/customer/:id', validate('param', customerParamSchema), (c) => removeCustomer(c, c.req.valid('param').id))
  // FluidPay's paths for one customer.
  .get('/:id', validate('param', customerParamSchema), (c) => answerCustomer(c, c.req.valid('param').id))
  .delete('/:id', validate('param', customerParamSchema), (c) => removeCustomer(c, c.req.valid('param').id));
