import { deletedSchema, successEnvelopeSchema } from '../../schemas/envelope';
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
} from '../../schemas/vault';
import { customerListResponseSchema, customerViewSchema } from '../../schemas/vault-response';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Tokens and vault'];
const customer = successEnvelopeSchema(customerViewSchema);
const deleted = (id: string) => ok('Deleted.', successEnvelopeSchema(deletedSchema), { status: 'success', msg: 'success', data: { id, deleted: true } });
const SHAPES =
  "Every answer is the whole customer: binbatch's fields and the same customer nested under `data.customer` as FluidPay's clients read it (docs/vault.md).";

export function registerVault(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/vault/customer',
    operationId: 'createCustomer',
    tags,
    summary: 'Create a vault customer, optionally with a card (number or temp token) or a bank account and addresses',
    description:
      "binbatch's body (`payment_method`, `email`) or FluidPay's (`default_payment`, `default_billing_address`, `default_shipping_address`, `id_format`, `notes`). " +
      `The first payment method becomes the default. A CVC is refused: it is never stored. ?validate=true verifies the card first (a zero-amount verification; declined: 402, nothing stored). ${SHAPES}`,
    security: SECRET_KEY,
    request: { query: verificationQuerySchema, body: { required: true, content: json(customerCreateSchema) } },
    responses: {
      201: ok('The customer, masked numbers only; `created_payment_method_id` names its method.', customer),
      ...errors([400, 401, 402, 409, 413], { 402: "?validate=true: the card's verification was declined; nothing was stored.", 409: 'A customer (or payment method) with this id exists.' }),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/vault/customer/search',
    operationId: 'searchCustomers',
    tags,
    summary: "Search the vault's customers (FluidPay's {operator, value} filters)",
    description: 'Filters: = or != on the id, email, address fields (any address of the customer), payment_method_type, default address ids; RFC 3339 ranges on created_at and updated_at. Oldest first; limit 1–100 (10).',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(customerSearchSchema) } },
    responses: { 200: ok('A page of customers and how many match.', customerListResponseSchema), ...errors([400, 401, 413]) },
  });
  for (const path of ['/api/vault/customer/{id}', '/api/vault/{id}'] as const) {
    const fluid = path === '/api/vault/{id}';
    registry.registerPath({
      method: 'get',
      path,
      operationId: fluid ? 'getVault' : 'getCustomer',
      tags,
      summary: fluid ? "A vault customer (FluidPay's path)" : 'A vault customer, its payment methods (masked) and addresses',
      description: SHAPES,
      security: SECRET_KEY,
      request: { params: customerParamSchema },
      responses: { 200: ok('The customer.', customer), ...errors([400, 401, 404]) },
    });
    registry.registerPath({
      method: 'delete',
      path,
      operationId: fluid ? 'deleteVault' : 'deleteCustomer',
      tags,
      summary: fluid ? "Delete a customer (FluidPay's path)" : 'Delete a customer, its payment methods and addresses',
      security: SECRET_KEY,
      request: { params: customerParamSchema },
      responses: { 200: deleted('cust001'), ...errors([400, 401, 404]) },
    });
  }
  for (const method of ['patch', 'post'] as const) {
    registry.registerPath({
      method,
      path: '/api/vault/customer/{id}',
      operationId: method === 'patch' ? 'updateCustomer' : 'updateCustomerPost',
      tags,
      summary:
        method === 'patch'
          ? "Change a customer's default payment method, flags, description, notes or email"
          : "Change a customer (FluidPay's method: POST), with FluidPay's `defaults` and `notes`",
      description: `The same body either way. ${SHAPES}`,
      security: SECRET_KEY,
      request: { params: customerParamSchema, body: { required: true, content: json(customerPatchSchema) } },
      responses: { 200: ok('The customer.', customer), ...errors([400, 401, 404, 413]) },
    });
  }
  for (const [kind, schema, summary] of [
    ['card', cardSchema, 'Add a card (number + expiration or expiration_date, or a temp token)'],
    ['token', tokenMethodSchema, "Add the card behind a temp token (FluidPay's CreateToken)"],
    ['ach', achSchema, 'Add a bank account'],
  ] as const) {
    registry.registerPath({
      method: 'post',
      path: `/api/vault/customer/{id}/${kind}`,
      operationId: kind === 'card' ? 'addCustomerCard' : kind === 'ach' ? 'addCustomerAch' : 'addCustomerToken',
      tags,
      summary,
      description: `It becomes the default when the customer had none. ${kind === 'ach' ? '' : '?validate=true verifies the card first (declined: 402, nothing stored). '}${SHAPES}`,
      security: SECRET_KEY,
      request: { params: customerParamSchema, query: verificationQuerySchema, body: { required: true, content: json(schema) } },
      responses: {
        201: ok("The whole customer; `created_payment_method_id` names the new method (FluidPay's answer).", customer),
        ...errors([400, 401, 402, 404, 409, 413], { 402: "?validate=true: the card's verification was declined; nothing was stored.", 409: 'A payment method with this id exists.' }),
      },
    });
  }
  for (const [kind, schema, summary] of [
    ['card', cardUpdateSchema, "Replace a stored card's number (or the card behind a temp token) and expiration; what is left out stays (FluidPay's UpdateCard)"],
    ['token', tokenMethodSchema, "Replace a stored card with the card behind a temp token (FluidPay's UpdateToken)"],
    ['ach', achSchema, "Replace a stored bank account (FluidPay's UpdateACH)"],
  ] as const) {
    registry.registerPath({
      method: 'post',
      path: `/api/vault/customer/{id}/${kind}/{method_id}`,
      operationId: kind === 'card' ? 'updateCustomerCard' : kind === 'ach' ? 'updateCustomerAch' : 'updateCustomerToken',
      tags,
      summary,
      description: `The method keeps its id and its place as the default. ${kind === 'ach' ? 'A card id here is a 404. ' : 'A bank account id here is a 404; ?validate=true verifies the card as it will be stored (declined: 402, nothing changed). '}${SHAPES}`,
      security: SECRET_KEY,
      request: { params: paymentMethodParamSchema, ...(kind === 'ach' ? {} : { query: verificationQuerySchema }), body: { required: true, content: json(schema) } },
      responses: {
        200: ok('The whole customer.', customer),
        ...errors([400, 401, 402, 404, 413], { 402: "?validate=true: the card's verification was declined; nothing was changed." }),
      },
    });
  }
  for (const kind of ['card', 'ach'] as const) {
    registry.registerPath({
      method: 'delete',
      path: `/api/vault/customer/{id}/${kind}/{method_id}`,
      operationId: kind === 'card' ? 'deleteCustomerCard' : 'deleteCustomerAch',
      tags,
      summary: `Delete a stored ${kind === 'card' ? 'card' : 'bank account'} (a default it was is cleared)`,
      security: SECRET_KEY,
      request: { params: paymentMethodParamSchema },
      responses: { 200: deleted('k3j5h7g9f1d3s5a7q9w1'), ...errors([400, 401, 404]) },
    });
  }
  registry.registerPath({
    method: 'post',
    path: '/api/vault/customer/{id}/address',
    operationId: 'addCustomerAddress',
    tags,
    summary: 'Add an address (at most 20 a customer; an identical one is a 409)',
    description: SHAPES,
    security: SECRET_KEY,
    request: { params: customerParamSchema, body: { required: true, content: json(vaultAddressSchema) } },
    responses: {
      201: ok('The whole customer; `created_address_id` names the new address.', customer),
      ...errors([400, 401, 404, 409, 413], { 409: 'The customer holds an identical address: reuse its id.' }),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/vault/customer/{id}/address/{address_id}',
    operationId: 'updateCustomerAddress',
    tags,
    summary: 'Replace an address',
    security: SECRET_KEY,
    request: { params: addressParamSchema, body: { required: true, content: json(vaultAddressSchema) } },
    responses: { 200: ok('The customer.', customer), ...errors([400, 401, 404, 409, 413]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/vault/customer/{id}/address/{address_id}',
    operationId: 'deleteCustomerAddress',
    tags,
    summary: 'Delete an address (a default it was is cleared)',
    security: SECRET_KEY,
    request: { params: addressParamSchema },
    responses: { 200: deleted('bl6nqk69ku6897l45fp0'), ...errors([400, 401, 404]) },
  });
}
