/**
 * Recurring billing at FluidPay's paths (secret key): add-ons, discounts, plans and subscriptions,
 * with the subscription search and status calls its SDK makes (docs/recurring.md).
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { describeFieldErrors } from '../lib/field-errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import type { FieldError } from '../schemas/envelope';
import {
  adjustmentBodySchema,
  planBodySchema,
  recurringParamSchema,
  statusParamSchema,
  statusQuerySchema,
  subscriptionCreateSchema,
  subscriptionSearchSchema,
  subscriptionUpdateSchema,
} from '../schemas/recurring';
import { createAdjustment, getPlan, listPlans, replaceAdjustment, savePlan } from '../services/recurring/catalog';
import { createSubscription, getSubscription, searchSubscriptions, setStatus, updateSubscription } from '../services/recurring/subscriptions';
import { deleteAdjustment, deletePlan, findAdjustments, listAdjustments, type AdjustmentKind } from '../storage/recurring-catalog';
import { deleteSubscription } from '../storage/recurring-subscriptions';

function invalid(errors: FieldError[]): never {
  throw new AppError('bad_request', describeFieldErrors(errors), errors);
}

const NAMES: Record<AdjustmentKind, string> = { addon: 'add-on', discount: 'discount' };

function list<T>(c: Context<AppEnv>, items: T[], total: number) {
  return c.json({ status: 'success' as const, msg: 'success' as const, data: items, total_count: total });
}

function adjustments(kind: AdjustmentKind) {
  const name = NAMES[kind];
  return new Hono<AppEnv>()
    .post(`/${kind}`, validate('json', adjustmentBodySchema), async (c) =>
      c.json(success(await createAdjustment(c.env.DB, c.get('caller').merchantId, kind, c.req.valid('json'), systemClock)), 201),
    )
    .get(`/${kind}s`, async (c) => {
      const { items, total } = await listAdjustments(c.env.DB, c.get('caller').merchantId, kind);
      return list(c, items, total);
    })
    .get(`/${kind}/:id`, validate('param', recurringParamSchema), async (c) => {
      const { id } = c.req.valid('param');
      const found = (await findAdjustments(c.env.DB, c.get('caller').merchantId, kind, [id])).get(id);
      if (!found) throw new AppError('not_found', `${name} ${id} not found`);
      return c.json(success(found));
    })
    .post(`/${kind}/:id`, validate('param', recurringParamSchema), validate('json', adjustmentBodySchema), async (c) => {
      const { id } = c.req.valid('param');
      const view = await replaceAdjustment(c.env.DB, c.get('caller').merchantId, kind, id, c.req.valid('json'), systemClock);
      if (!view) throw new AppError('not_found', `${name} ${id} not found`);
      return c.json(success(view));
    })
    .delete(`/${kind}/:id`, validate('param', recurringParamSchema), async (c) => {
      const { id } = c.req.valid('param');
      if (!(await deleteAdjustment(c.env.DB, c.get('caller').merchantId, kind, id))) throw new AppError('not_found', `${name} ${id} not found`);
      return c.json(success({ id, deleted: true as const }));
    });
}

const plans = new Hono<AppEnv>()
  .post('/plan', validate('json', planBodySchema), async (c) => {
    const result = await savePlan(c.env.DB, c.get('caller').merchantId, null, c.req.valid('json'), systemClock);
    if (!result.ok) return result.reason === 'invalid' ? invalid(result.errors) : invalid([]);
    return c.json(success(result.value), 201);
  })
  .get('/plans', async (c) => {
    const { items, total } = await listPlans(c.env.DB, c.get('caller').merchantId);
    return list(c, items, total);
  })
  .get('/plan/:id', validate('param', recurringParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    const plan = await getPlan(c.env.DB, c.get('caller').merchantId, id);
    if (!plan) throw new AppError('not_found', `plan ${id} not found`);
    return c.json(success(plan));
  })
  .post('/plan/:id', validate('param', recurringParamSchema), validate('json', planBodySchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await savePlan(c.env.DB, c.get('caller').merchantId, id, c.req.valid('json'), systemClock);
    if (!result.ok) {
      if (result.reason === 'invalid') invalid(result.errors);
      throw new AppError('not_found', `plan ${id} not found`);
    }
    return c.json(success(result.value));
  })
  .delete('/plan/:id', validate('param', recurringParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    if (!(await deletePlan(c.env.DB, c.get('caller').merchantId, id))) throw new AppError('not_found', `plan ${id} not found`);
    return c.json(success({ id, deleted: true as const }));
  });

const subscriptions = new Hono<AppEnv>()
  .post('/subscription', validate('json', subscriptionCreateSchema), async (c) => {
    const result = await createSubscription(c.env.DB, c.get('caller').merchantId, c.req.valid('json'), systemClock);
    if (!result.ok) return result.reason === 'invalid' ? invalid(result.errors) : invalid([]);
    return c.json(success(result.value), 201);
  })
  // Before /subscription/:id: "search" is FluidPay's path, not an id.
  .post('/subscription/search', validate('json', subscriptionSearchSchema), async (c) => {
    const { items, total } = await searchSubscriptions(c.env.DB, c.get('caller').merchantId, c.req.valid('json'));
    return list(c, items, total);
  })
  .get('/subscription/:id', validate('param', recurringParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    const found = await getSubscription(c.env.DB, c.get('caller').merchantId, id);
    if (!found) throw new AppError('not_found', `subscription ${id} not found`);
    return c.json(success(found));
  })
  .post('/subscription/:id', validate('param', recurringParamSchema), validate('json', subscriptionUpdateSchema), async (c) => {
    const { id } = c.req.valid('param');
    const result = await updateSubscription(c.env.DB, c.get('caller').merchantId, id, c.req.valid('json'), systemClock);
    if (!result.ok) {
      if (result.reason === 'invalid') invalid(result.errors);
      if (result.reason === 'conflict') throw new AppError('conflict', `subscription ${id} changed meanwhile (a billing run or another update); ask again`);
      throw new AppError('not_found', `subscription ${id} not found`);
    }
    return c.json(success(result.value));
  })
  .delete('/subscription/:id', validate('param', recurringParamSchema), async (c) => {
    const { id } = c.req.valid('param');
    if (!(await deleteSubscription(c.env.DB, c.get('caller').merchantId, id))) throw new AppError('not_found', `subscription ${id} not found`);
    return c.json(success({ id, deleted: true as const }));
  })
  .get('/subscription/:id/status/:status', validate('param', statusParamSchema), validate('query', statusQuerySchema), async (c) => {
    const { id, status } = c.req.valid('param');
    const result = await setStatus(c.env.DB, c.get('caller').merchantId, id, status, c.req.valid('query').next_bill_date, systemClock);
    if (!result.ok) {
      if (result.reason === 'invalid') invalid(result.errors);
      if (result.reason === 'conflict') throw new AppError('conflict', result.msg);
      throw new AppError('not_found', `subscription ${id} not found`);
    }
    return c.json(success(result.value));
  });

export const recurring = new Hono<AppEnv>()
  .use('*', requireSecretKey)
  .route('/', adjustments('addon'))
  .route('/', adjustments('discount'))
  .route('/', plans)
  .route('/', subscriptions);
