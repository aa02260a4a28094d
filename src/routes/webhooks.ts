/** Webhook endpoints and their deliveries (docs/webhooks.md). Secret key only; a merchant sees only its own. */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { deliveriesQuerySchema, deliveryParamSchema, webhookCreateSchema, webhookIdParamSchema } from '../schemas/webhooks';
import { webhookDeps } from '../services/webhooks/deps';
import {
  createEndpoint,
  deleteEndpoint,
  listDeliveries,
  listEndpoints,
  redeliver,
  rotateSecret,
  type EndpointFailure,
} from '../services/webhooks/endpoints';

export const webhooks = new Hono<AppEnv>();

webhooks.use(requireSecretKey);

function raise(failure: EndpointFailure): never {
  switch (failure.reason) {
    case 'invalid_url':
      throw new AppError('bad_request', failure.msg, [{ field: 'url', msg: failure.msg.replace(/^url: /, '') }]);
    case 'limit':
    case 'pending':
      throw new AppError('conflict', failure.msg);
    case 'not_found':
      throw new AppError('not_found', failure.msg);
  }
}

webhooks.post('/', validate('json', webhookCreateSchema), async (c) => {
  const result = await createEndpoint(webhookDeps(c.env), c.get('caller').merchantId, c.req.valid('json'));
  if (!result.ok) raise(result);
  return c.json(success(result.endpoint), 201);
});

webhooks.get('/', async (c) => {
  return c.json(success(await listEndpoints(webhookDeps(c.env), c.get('caller').merchantId)));
});

webhooks.delete('/:id', validate('param', webhookIdParamSchema), async (c) => {
  const { id } = c.req.valid('param');
  const result = await deleteEndpoint(webhookDeps(c.env), c.get('caller').merchantId, id);
  if (!result.ok) raise(result);
  return c.json(success({ id, deleted: true as const }));
});

webhooks.post('/:id/rotate-secret', validate('param', webhookIdParamSchema), async (c) => {
  const result = await rotateSecret(webhookDeps(c.env), c.get('caller').merchantId, c.req.valid('param').id);
  if (!result.ok) raise(result);
  return c.json(success(result.endpoint));
});

webhooks.get('/:id/deliveries', validate('param', webhookIdParamSchema), validate('query', deliveriesQuerySchema), async (c) => {
  const { limit, offset } = c.req.valid('query');
  const result = await listDeliveries(webhookDeps(c.env), c.get('caller').merchantId, c.req.valid('param').id, { limit, offset });
  if (!result.ok) raise(result);
  return c.json({ ...success(result.deliveries), total_count: result.total, limit, offset });
});

webhooks.post('/:id/deliveries/:delivery_id/redeliver', validate('param', deliveryParamSchema), async (c) => {
  const { id, delivery_id } = c.req.valid('param');
  const result = await redeliver(webhookDeps(c.env), c.get('caller').merchantId, id, delivery_id);
  if (!result.ok) raise(result);
  return c.json(success(result.delivery), 202);
});
