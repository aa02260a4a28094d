import { deletedSchema, successEnvelopeSchema } from '../../schemas/envelope';
import { achSchema, cardSchema, customerCreateSchema, customerParamSchema, customerPatchSchema } from '../../schemas/vault';
import { customerViewSchema, paymentMethodViewSchema } from '../../schemas/vault-response';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Tokens and vault'];
const customer = successEnvelopeSchema(customerViewSchema);

export function registerVault(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/vault/customer',
    operationId: 'createCustomer',
    tags,
    summary: 'Create a vault customer, optionally with a card (number or temp token) or a bank account',
    description: 'The first payment method becomes the default. A CVC is refused: it is never stored.',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(customerCreateSchema) } },
    responses: {
      201: ok('The customer, masked numbers only.', customer),
      ...errors([400, 401, 409, 413], { 409: 'A customer with this id exists.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/vault/customer/{id}',
    operationId: 'getCustomer',
    tags,
    summary: 'A vault customer and its payment methods (masked)',
    security: SECRET_KEY,
    request: { params: customerParamSchema },
    responses: { 200: ok('The customer.', customer), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'patch',
    path: '/api/vault/customer/{id}',
    operationId: 'updateCustomer',
    tags,
    summary: "Change a customer's default payment method, flags, description or email",
    security: SECRET_KEY,
    request: { params: customerParamSchema, body: { required: true, content: json(customerPatchSchema) } },
    responses: { 200: ok('The customer.', customer), ...errors([400, 401, 404, 413]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/vault/customer/{id}',
    operationId: 'deleteCustomer',
    tags,
    summary: 'Delete a customer and its payment methods',
    security: SECRET_KEY,
    request: { params: customerParamSchema },
    responses: { 200: ok('Deleted.', successEnvelopeSchema(deletedSchema), { status: 'success', msg: 'success', data: { id: 'cust001', deleted: true } }), ...errors([400, 401, 404]) },
  });
  for (const [kind, schema, summary] of [
    ['card', cardSchema, 'Add a card (number + expiration, or a temp token)'],
    ['ach', achSchema, 'Add a bank account'],
  ] as const) {
    registry.registerPath({
      method: 'post',
      path: `/api/vault/customer/{id}/${kind}`,
      operationId: kind === 'card' ? 'addCustomerCard' : 'addCustomerAch',
      tags,
      summary,
      security: SECRET_KEY,
      request: { params: customerParamSchema, body: { required: true, content: json(schema) } },
      responses: { 201: ok('The new payment method, masked.', successEnvelopeSchema(paymentMethodViewSchema)), ...errors([400, 401, 404, 413]) },
    });
  }
}
