/**
 * Operators' API for a merchant's processors. Every merchant has the built-in sandbox processor
 * (created on first use); more can be added, and one of them is the default.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { systemClock } from '../lib/time';
import { validate } from '../middleware/validate';
import { idParamSchema, processorCreateSchema } from '../schemas/admin';
import { addProcessor, merchantProcessors } from '../services/transactions/processors/registry';
import { findMerchant } from '../storage/merchants';

export const adminProcessors = new Hono<AppEnv>();

adminProcessors.get('/merchants/:id/processors', validate('param', idParamSchema), async (c) => {
  const merchantId = c.req.valid('param').id;
  if (!(await findMerchant(c.env.DB, merchantId))) throw new AppError('not_found', 'merchant not found');
  return c.json(success(await merchantProcessors(c.env.DB, merchantId, systemClock)));
});

adminProcessors.post(
  '/merchants/:id/processors',
  validate('param', idParamSchema),
  validate('json', processorCreateSchema),
  async (c) => {
    const merchantId = c.req.valid('param').id;
    if (!(await findMerchant(c.env.DB, merchantId))) throw new AppError('not_found', 'merchant not found');
    const processor = await addProcessor(c.env.DB, merchantId, c.req.valid('json'), systemClock);
    return c.json(success(processor), 201);
  },
);
