/** The customer vault: secret key only; a merchant sees only its own customers. */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { achSchema, cardSchema, customerCreateSchema, customerParamSchema, customerPatchSchema } from '../schemas/vault';
import {
  addPaymentMethod,
  createCustomer,
  deleteCustomer,
  getCustomer,
  updateCustomer,
  type VaultFailure,
} from '../services/vault/customers';

function raise(failure: VaultFailure): never {
  switch (failure.reason) {
    case 'invalid':
      throw new AppError('bad_request', failure.msg);
    case 'not_found':
      throw new AppError('not_found', failure.msg);
    case 'conflict':
      throw new AppError('conflict', failure.msg);
  }
}

export const vault = new Hono<AppEnv>()
  .use('*', requireSecretKey)
  .post('/customer', validate('json', customerCreateSchema), async (c) => {
    const result = await createCustomer(c.env, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer), 201);
  })
  .get('/customer/:id', validate('param', customerParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    const customer = await getCustomer(c.env, c.get('caller').merchantId, id);
    if (!customer) throw new AppError('not_found', `customer ${id} not found`);
    return c.json(success(customer));
  })
  .post('/customer/:id/card', validate('param', customerParamSchema), validate('json', cardSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await addPaymentMethod(c.env, c.get('caller').merchantId, id, { card: c.req.valid('json') }, systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.method), 201);
  })
  .post('/customer/:id/ach', validate('param', customerParamSchema), validate('json', achSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await addPaymentMethod(c.env, c.get('caller').merchantId, id, { ach: c.req.valid('json') }, systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.method), 201);
  })
  .patch('/customer/:id', validate('param', customerParamSchema), validate('json', customerPatchSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await updateCustomer(c.env, c.get('caller').merchantId, id, c.req.valid('json'), systemClock);
    if (!result.ok) raise(result);
    return c.json(success(result.customer));
  })
  .delete('/customer/:id', validate('param', customerParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    if (!(await deleteCustomer(c.env, c.get('caller').merchantId, id))) {
      throw new AppError('not_found', `customer ${id} not found`);
    }
    return c.json(success({ id, deleted: true }));
  });
