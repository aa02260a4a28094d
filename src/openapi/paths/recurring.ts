import { deletedSchema, successEnvelopeSchema } from '../../schemas/envelope';
import {
  adjustmentBodySchema,
  adjustmentListSchema,
  adjustmentViewSchema,
  billBodySchema,
  billResultSchema,
  planBodySchema,
  planListSchema,
  planViewSchema,
  recurringParamSchema,
  statusParamSchema,
  statusQuerySchema,
  subscriptionCreateSchema,
  subscriptionListSchema,
  subscriptionSearchSchema,
  subscriptionUpdateSchema,
  subscriptionViewSchema,
} from '../../schemas/recurring';
import { idParamSchema } from '../../schemas/admin';
import { ADMIN_TOKEN, errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Recurring billing'];
const deleted = ok('Deleted.', successEnvelopeSchema(deletedSchema));

export function registerRecurring(registry: Registry): void {
  for (const [kind, name, Name] of [
    ['addon', 'add-on', 'AddOn'],
    ['discount', 'discount', 'Discount'],
  ] as const) {
    const one = successEnvelopeSchema(adjustmentViewSchema);
    registry.registerPath({
      method: 'post',
      path: `/api/recurring/${kind}`,
      operationId: `create${Name}`,
      tags,
      summary: `Create an ${name}: an amount or a percentage, and how many billings it lasts`,
      security: SECRET_KEY,
      request: { body: { required: true, content: json(adjustmentBodySchema) } },
      responses: { 201: ok(`The ${name}.`, one), ...errors([400, 401, 413]) },
    });
    registry.registerPath({
      method: 'get',
      path: `/api/recurring/${kind}s`,
      operationId: `list${Name}s`,
      tags,
      summary: `The merchant's ${name}s (the first 100, oldest first) and how many there are`,
      security: SECRET_KEY,
      responses: { 200: ok(`The ${name}s.`, adjustmentListSchema), ...errors([401]) },
    });
    registry.registerPath({
      method: 'get',
      path: `/api/recurring/${kind}/{id}`,
      operationId: `get${Name}`,
      tags,
      summary: `One ${name}`,
      security: SECRET_KEY,
      request: { params: recurringParamSchema },
      responses: { 200: ok(`The ${name}.`, one), ...errors([400, 401, 404]) },
    });
    registry.registerPath({
      method: 'post',
      path: `/api/recurring/${kind}/{id}`,
      operationId: `update${Name}`,
      tags,
      summary: `Replace an ${name}'s fields (plans and subscriptions already using it keep what they had)`,
      security: SECRET_KEY,
      request: { params: recurringParamSchema, body: { required: true, content: json(adjustmentBodySchema) } },
      responses: { 200: ok(`The ${name}.`, one), ...errors([400, 401, 404, 413]) },
    });
    registry.registerPath({
      method: 'delete',
      path: `/api/recurring/${kind}/{id}`,
      operationId: `delete${Name}`,
      tags,
      summary: `Delete an ${name} (plans and subscriptions already using it keep it)`,
      security: SECRET_KEY,
      request: { params: recurringParamSchema },
      responses: { 200: deleted, ...errors([400, 401, 404]) },
    });
  }

  const plan = successEnvelopeSchema(planViewSchema);
  registry.registerPath({
    method: 'post',
    path: '/api/recurring/plan',
    operationId: 'createPlan',
    tags,
    summary: 'Create a plan: amount, billing frequency, interval and days, duration, add-ons and discounts',
    description: 'billing_days: one day of the month for monthly ("1"), two for twice_monthly ("1,15"), 0 for the last day; a day the month lacks is billed on its last day (docs/recurring.md).',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(planBodySchema) } },
    responses: { 201: ok('The plan.', plan), ...errors([400, 401, 413]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/recurring/plans',
    operationId: 'listPlans',
    tags,
    summary: "The merchant's plans (the first 100, oldest first) and how many there are",
    security: SECRET_KEY,
    responses: { 200: ok('The plans.', planListSchema), ...errors([401]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/recurring/plan/{id}',
    operationId: 'getPlan',
    tags,
    summary: 'One plan',
    security: SECRET_KEY,
    request: { params: recurringParamSchema },
    responses: { 200: ok('The plan.', plan), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/recurring/plan/{id}',
    operationId: 'updatePlan',
    tags,
    summary: "Replace a plan's fields (existing subscriptions keep the fields they copied)",
    security: SECRET_KEY,
    request: { params: recurringParamSchema, body: { required: true, content: json(planBodySchema) } },
    responses: { 200: ok('The plan.', plan), ...errors([400, 401, 404, 413]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/recurring/plan/{id}',
    operationId: 'deletePlan',
    tags,
    summary: 'Delete a plan (existing subscriptions go on billing)',
    security: SECRET_KEY,
    request: { params: recurringParamSchema },
    responses: { 200: deleted, ...errors([400, 401, 404]) },
  });

  const subscription = successEnvelopeSchema(subscriptionViewSchema);
  registry.registerPath({
    method: 'post',
    path: '/api/recurring/subscription',
    operationId: 'createSubscription',
    tags,
    summary: "Subscribe a vault customer's payment method: a plan's billing, or its own fields over the plan's",
    description:
      'The first bill date is next_bill_date, today with charge_on_day, or the first billing day from today on. Days are UTC days. Each billing is a sale through the transaction engine, with subscription_id in its record (docs/recurring.md).',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(subscriptionCreateSchema) } },
    responses: { 201: ok('The subscription.', subscription), ...errors([400, 401, 413]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/recurring/subscription/search',
    operationId: 'searchSubscriptions',
    tags,
    summary: "Search subscriptions (FluidPay's {operator, value} filters on plan_id, customer.id and status; a next_bill_date range)",
    security: SECRET_KEY,
    request: { body: { required: true, content: json(subscriptionSearchSchema) } },
    responses: { 200: ok('A page of subscriptions and how many match.', subscriptionListSchema), ...errors([400, 401, 413]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/recurring/subscription/{id}',
    operationId: 'getSubscription',
    tags,
    summary: 'One subscription, with its last decline when billing failed',
    security: SECRET_KEY,
    request: { params: recurringParamSchema },
    responses: { 200: ok('The subscription.', subscription), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/recurring/subscription/{id}',
    operationId: 'updateSubscription',
    tags,
    summary: "Change a subscription's fields (those not sent are kept)",
    security: SECRET_KEY,
    request: { params: recurringParamSchema, body: { required: true, content: json(subscriptionUpdateSchema) } },
    responses: { 200: ok('The subscription.', subscription), ...errors([400, 401, 404, 409, 413], { 409: 'A billing run or another update changed it meanwhile; ask again.' }) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/recurring/subscription/{id}',
    operationId: 'deleteSubscription',
    tags,
    summary: 'Delete a subscription (its charges stay in the ledger)',
    security: SECRET_KEY,
    request: { params: recurringParamSchema },
    responses: { 200: deleted, ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/recurring/subscription/{id}/status/{status}',
    operationId: 'setSubscriptionStatus',
    tags,
    summary: "Set a subscription's status: paused, past_due, cancelled, completed, or active again (from ?next_bill_date=)",
    description: 'FluidPay\'s status calls are GETs. Completed and cancelled are final (409 to change them).',
    security: SECRET_KEY,
    request: { params: statusParamSchema, query: statusQuerySchema },
    responses: { 200: ok('The subscription.', subscription), ...errors([400, 401, 404, 409]) },
  });
}

export function registerRecurringAdmin(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/admin/merchants/{id}/bill',
    operationId: 'billMerchant',
    tags: ['Admin'],
    summary: "Bill the merchant's subscriptions due on or before a day now, as the hourly run does",
    description:
      'The body is optional: {"date": "YYYY-MM-DD"} bills what is due on or before that UTC day (default: today). Each due subscription is charged once per cycle ' +
      '(its charge is keyed by subscription, cycle and attempt): calling it again charges nothing twice. 202 when the step budget ran out before everything due was billed: the merchant\'s billing object bills the rest in bounded alarm steps (docs/recurring.md).',
    security: ADMIN_TOKEN,
    request: { params: idParamSchema, body: { required: false, content: json(billBodySchema) } },
    responses: {
      200: ok('What this call charged, declined and skipped; everything due was billed.', successEnvelopeSchema(billResultSchema)),
      202: ok('The same, with finished false: more was due; the merchant\'s billing object goes on with it.', successEnvelopeSchema(billResultSchema)),
      ...errors([400, 401, 404, 413, 415]),
    },
  });
}

export function registerRecurringConsole(registry: Registry): void {
  registry.registerPath({
    method: 'get',
    path: '/console/subscriptions/attention',
    operationId: 'consoleSubscriptionsNeedingAttention',
    tags: ['Console'],
    summary: 'Subscriptions needing attention (failing, failed, error) with their last decline, the latest changed first (at most 100)',
    security: [{ consoleSession: [] }],
    responses: { 200: ok('The subscriptions.', subscriptionListSchema), ...errors([401]) },
  });
}
