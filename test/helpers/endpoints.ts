/**
 * Every endpoint the service serves, with who may call it and a request the owner can make, so
 * that the access, header and limit tests run over the whole surface. `routes` must match
 * `app.routes` exactly: a test fails when an endpoint is added without an entry here.
 */
import { env } from 'cloudflare:workers';
import { vi } from 'vitest';
import { admin, call, createMerchant, type TestMerchant } from './api';
import { createUnqueuedBatch, csv, waitForStatus } from './batch';
import { createEndpoint, deliveries, receiver } from './webhooks';
import { transactionExport } from '../../src/services/search/exports';

export type Auth = 'secret' | 'any' | 'admin' | 'none';

/** Resources of merchant "owner", which merchant "intruder" must never reach. */
export interface World {
  owner: TestMerchant;
  intruder: TestMerchant;
  /** A merchant whose secret and public keys have both been revoked (after being used once). */
  revoked: TestMerchant;
  customerId: string;
  /** A customer only DELETE uses, so the other rows keep theirs. */
  customerToDelete: string;
  /** Another, for FluidPay's DELETE /api/vault/{id}. */
  fluidCustomerToDelete: string;
  paymentMethodId: string;
  /** The owner customer's other methods and addresses: one each to change, one each only DELETE uses. */
  cardToDelete: string;
  achId: string;
  achToDelete: string;
  addressId: string;
  addressToDelete: string;
  tempToken: string;
  /** The owner's key id (admin DELETE /admin/keys/{id} revokes a spare one). */
  spareKeyId: string;
  /** A transaction of the owner (POST /api/transaction). */
  transactionId: string;
  /** A completed batch of the owner. */
  batchId: string;
  /** The owner's authorization (capture), unsettled sale (void), settled sale (refund) and settlement batch. */
  authorizationId: string;
  voidableId: string;
  settledId: string;
  settlementBatchId: string;
  /** A batch of the owner that never starts (its chunks are never sent): pause and resume answer 200 however often. */
  runningBatchId: string;
  /** A batch of the owner that never starts, for cancel (whose 200 ends it). */
  batchToCancel: string;
  /** The owner's webhook endpoint (its receiver answers 204) and its delivery of the batch's event. */
  webhookId: string;
  webhookUrl: string;
  deliveryId: string;
  /** An endpoint only DELETE uses. */
  webhookToDelete: string;
  /** A completed export of the owner's transactions. */
  exportId: string;
  /**
   * The owner's recurring billing: an add-on, a discount, a plan carrying both, and a subscription of
   * the vault customer (billed in 2099, so billing now charges nothing); one of each only DELETE uses.
   */
  addonId: string;
  addonToDelete: string;
  discountId: string;
  discountToDelete: string;
  planId: string;
  planToDelete: string;
  subscriptionId: string;
  subscriptionToDelete: string;
}

export interface Endpoint {
  /** "METHOD /path/:param" as Hono lists it in app.routes. */
  route: string;
  auth: Auth;
  path: (world: World) => string;
  body?: (world: World) => unknown;
  /** Extra request headers (a CSV body's Content-Type). */
  headers?: Record<string, string>;
  /** The path or body names one of the owner's resources: another merchant gets `crossStatus`. */
  owned?: boolean;
  /** What another merchant gets for the owner's resource (documented: 404, or 400 for temp tokens). */
  crossStatus?: number;
  /** A streamed upload: exempt from the JSON body limit, it enforces its own. */
  streamed?: boolean;
  /** The owner's success status (proves the request is right, so refusals are about access). */
  okStatus: number;
  /** The Content-Type of that success, when it is neither JSON nor CSV. */
  successType?: RegExp;
}

const CARD = '4242424242424242';

export const endpoints: Endpoint[] = [
  { route: 'GET /healthz', auth: 'none', path: () => '/healthz', okStatus: 200 },
  { route: 'GET /openapi.json', auth: 'none', path: () => '/openapi.json', okStatus: 200 },
  { route: 'GET /docs', auth: 'none', path: () => '/docs', okStatus: 200 },
  {
    route: 'POST /admin/merchants',
    auth: 'admin',
    path: () => '/admin/merchants',
    body: () => ({ name: 'Made By Table' }),
    okStatus: 201,
  },
  { route: 'GET /admin/merchants/:id', auth: 'admin', path: (w) => `/admin/merchants/${w.owner.id}`, okStatus: 200 },
  {
    route: 'PATCH /admin/merchants/:id',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.intruder.id}`,
    body: () => ({ surcharge_rate_bps: 0 }),
    okStatus: 200,
  },
  {
    route: 'POST /admin/merchants/:id/keys',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.owner.id}/keys`,
    body: () => ({ type: 'public' }),
    okStatus: 201,
  },
  { route: 'DELETE /admin/keys/:id', auth: 'admin', path: (w) => `/admin/keys/${w.spareKeyId}`, okStatus: 200 },
  {
    route: 'POST /admin/bins/import',
    streamed: true,
    auth: 'admin',
    path: () => '/admin/bins/import',
    body: () => 'bin,card_brand,card_type,country\n42424242,visa,credit,US\n',
    headers: { 'Content-Type': 'text/csv' },
    okStatus: 200,
  },
  {
    route: 'POST /admin/bins/ranges/import',
    streamed: true,
    auth: 'admin',
    path: () => '/admin/bins/ranges/import',
    body: () => 'low,high,issuing_bank\n42424250,42424259,Range Bank\n',
    headers: { 'Content-Type': 'text/csv' },
    okStatus: 200,
  },
  { route: 'GET /admin/surcharge-rules', auth: 'admin', path: () => '/admin/surcharge-rules', okStatus: 200 },
  {
    route: 'PUT /admin/surcharge-rules',
    auth: 'admin',
    path: () => '/admin/surcharge-rules',
    body: () => ({ rules: [{ country: 'US', region: '*', effective_from: '2023-04-15', surcharge: 'allowed', max_rate_bps: 300 }] }),
    okStatus: 200,
  },
  {
    route: 'GET /admin/merchants/:id/processors',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.owner.id}/processors`,
    okStatus: 200,
  },
  {
    route: 'POST /admin/merchants/:id/processors',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.intruder.id}/processors`,
    body: () => ({ name: 'Sandbox West', type: 'sandbox', is_default: false }),
    okStatus: 201,
  },
  {
    route: 'POST /api/transaction',
    auth: 'secret',
    path: () => '/api/transaction',
    body: (w) => ({ transaction_type: 'sale', customer_id: w.customerId, amount: 1250 }),
    owned: true,
    crossStatus: 400, // docs/transactions.md: another merchant's vault customer is a validation error
    okStatus: 201,
  },
  {
    route: 'GET /api/transaction/:id',
    auth: 'secret',
    path: (w) => `/api/transaction/${w.transactionId}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/transaction/:id/capture',
    auth: 'secret',
    path: (w) => `/api/transaction/${w.authorizationId}/capture`,
    body: () => ({ amount: 500 }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/transaction/:id/void',
    auth: 'secret',
    path: (w) => `/api/transaction/${w.voidableId}/void`,
    body: () => ({}),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/transaction/:id/refund',
    auth: 'secret',
    path: (w) => `/api/transaction/${w.settledId}/refund`,
    body: () => ({ amount: 100 }),
    owned: true,
    okStatus: 201,
  },
  {
    // Under one Idempotency-Key: however often the tests send it, one receipt is queued (at most 10 per transaction).
    route: 'POST /api/transaction/:id/receipt',
    auth: 'secret',
    path: (w) => `/api/transaction/${w.transactionId}/receipt`,
    body: () => ({ email: 'access-check@example.com' }),
    headers: { 'Idempotency-Key': 'access-check-receipt' },
    owned: true,
    okStatus: 202,
  },
  {
    route: 'POST /api/settlement/batch/search',
    auth: 'secret',
    path: () => '/api/settlement/batch/search',
    body: () => ({ limit: 10 }),
    okStatus: 200,
  },
  {
    route: 'POST /api/transaction/search',
    auth: 'secret',
    path: () => '/api/transaction/search',
    body: () => ({ amount: { operator: '>', value: 0 }, limit: 10 }),
    okStatus: 200,
  },
  {
    route: 'POST /api/transaction/export',
    auth: 'secret',
    path: () => '/api/transaction/export',
    body: () => ({ type: { operator: '=', value: 'sale' } }),
    okStatus: 202,
  },
  {
    route: 'GET /api/transaction/export/:id',
    auth: 'secret',
    path: (w) => `/api/transaction/export/${w.exportId}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'GET /api/transaction/export/:id/download',
    auth: 'secret',
    path: (w) => `/api/transaction/export/${w.exportId}/download`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'GET /api/settlement/batch/:id',
    auth: 'secret',
    path: (w) => `/api/settlement/batch/${w.settlementBatchId}`,
    owned: true,
    okStatus: 200,
  },
  {
    // The owner's subscriptions are billed in 2099: nothing is due, so every run finishes (200).
    route: 'POST /admin/merchants/:id/bill',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.owner.id}/bill`,
    body: () => ({}),
    okStatus: 200,
  },
  {
    route: 'POST /admin/merchants/:id/settle',
    auth: 'admin',
    path: (w) => `/admin/merchants/${w.intruder.id}/settle`,
    okStatus: 200,
  },
  {
    route: 'POST /api/filebatch',
    streamed: true,
    auth: 'secret',
    // The same small file again and again: meant (its refusal is filebatch-repeats.test.ts's).
    path: () => '/api/filebatch?allow_duplicate=true',
    body: () => batchForm(),
    okStatus: 200,
  },
  {
    // The upload's body, checked and reported; nothing is stored.
    route: 'POST /api/filebatch/validate',
    streamed: true,
    auth: 'secret',
    path: () => '/api/filebatch/validate',
    body: () => batchForm(),
    okStatus: 200,
  },
  { route: 'GET /api/filebatch', auth: 'secret', path: () => '/api/filebatch', okStatus: 200 },
  {
    route: 'GET /api/filebatch/:id',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.batchId}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'GET /api/filebatch/:id/download',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.batchId}/download`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'GET /api/filebatch/:id/events',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.batchId}/events`,
    owned: true,
    okStatus: 200,
    successType: /^text\/event-stream/,
  },
  {
    route: 'POST /api/filebatch/:id/events/token',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.batchId}/events/token`,
    owned: true,
    okStatus: 201,
  },
  {
    route: 'POST /api/filebatch/:id/pause',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.runningBatchId}/pause`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/filebatch/:id/resume',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.runningBatchId}/resume`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/filebatch/:id/cancel',
    auth: 'secret',
    path: (w) => `/api/filebatch/${w.batchToCancel}/cancel`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/webhooks',
    auth: 'secret',
    path: () => '/api/webhooks',
    body: (w) => ({ url: w.webhookUrl, events: ['batch.failed'] }),
    okStatus: 201,
  },
  { route: 'GET /api/webhooks', auth: 'secret', path: () => '/api/webhooks', okStatus: 200 },
  {
    route: 'DELETE /api/webhooks/:id',
    auth: 'secret',
    path: (w) => `/api/webhooks/${w.webhookToDelete}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/webhooks/:id/rotate-secret',
    auth: 'secret',
    path: (w) => `/api/webhooks/${w.webhookId}/rotate-secret`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'GET /api/webhooks/:id/deliveries',
    auth: 'secret',
    path: (w) => `/api/webhooks/${w.webhookId}/deliveries`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/webhooks/:id/deliveries/:delivery_id/redeliver',
    auth: 'secret',
    path: (w) => `/api/webhooks/${w.webhookId}/deliveries/${w.deliveryId}/redeliver`,
    owned: true,
    okStatus: 202,
  },
  {
    route: 'POST /api/lookup/bin/protected',
    auth: 'secret',
    path: () => '/api/lookup/bin/protected',
    body: (w) => ({ customer_id: w.customerId, country: 'US', state: 'TX' }),
    owned: true,
    crossStatus: 400, // docs/bin-lookup.md: another merchant's customer or token is a 400 naming the field
    okStatus: 200,
  },
  {
    route: 'POST /api/tokenizer/token',
    auth: 'any',
    path: () => '/api/tokenizer/token',
    body: () => ({ cc_number: CARD, cc_expiration: '12/39', cc_cvc: '123' }),
    okStatus: 201,
  },
  {
    route: 'POST /api/vault/customer',
    auth: 'secret',
    path: () => '/api/vault/customer',
    body: (w) => ({ payment_method: { card: { temp_token: w.tempToken } } }),
    owned: true,
    crossStatus: 400, // docs/vault.md: another merchant's token is "unknown or expired" (400)
    okStatus: 201,
  },
  {
    route: 'GET /api/vault/customer/:id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/vault/customer/:id/card',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/card`,
    body: () => ({ number: CARD, expiration: '12/39' }),
    owned: true,
    okStatus: 201,
  },
  {
    route: 'POST /api/vault/customer/:id/ach',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/ach`,
    body: () => ({ account_number: '000123456789', routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' }),
    owned: true,
    okStatus: 201,
  },
  {
    route: 'PATCH /api/vault/customer/:id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}`,
    body: (w) => ({ default_payment_method_id: w.paymentMethodId }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'DELETE /api/vault/customer/:id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerToDelete}`,
    owned: true,
    okStatus: 200,
  },
  // FluidPay's vault paths (issue 34; docs/vault.md, "FluidPay's shape").
  { route: 'GET /api/vault/:id', auth: 'secret', path: (w) => `/api/vault/${w.customerId}`, owned: true, okStatus: 200 },
  { route: 'DELETE /api/vault/:id', auth: 'secret', path: (w) => `/api/vault/${w.fluidCustomerToDelete}`, owned: true, okStatus: 200 },
  {
    route: 'POST /api/vault/customer/:id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}`,
    body: () => ({ notes: 'regular', description: 'updated by POST' }),
    owned: true,
    okStatus: 200,
  },
  {
    // A search is scoped to the caller's customers: another merchant's id finds nothing (200, empty).
    route: 'POST /api/vault/customer/search',
    auth: 'secret',
    path: () => '/api/vault/customer/search',
    body: (w) => ({ id: { operator: '=', value: w.customerId }, email: { operator: '!=', value: 'nobody@example.com' } }),
    okStatus: 200,
  },
  {
    route: 'POST /api/vault/customer/:id/token',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/token`,
    body: (w) => ({ token: w.tempToken }),
    owned: true,
    okStatus: 201,
  },
  {
    route: 'POST /api/vault/customer/:id/card/:method_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/card/${w.paymentMethodId}`,
    body: () => ({ number: '', expiration_date: '11/39' }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/vault/customer/:id/token/:method_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/token/${w.paymentMethodId}`,
    body: (w) => ({ token: w.tempToken }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/vault/customer/:id/ach/:method_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/ach/${w.achId}`,
    body: () => ({ account_number: '000987654321', routing_number: '021000021', account_type: 'savings', sec_code: 'ccd' }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'DELETE /api/vault/customer/:id/card/:method_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/card/${w.cardToDelete}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'DELETE /api/vault/customer/:id/ach/:method_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/ach/${w.achToDelete}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/vault/customer/:id/address',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/address`,
    // A new address each time: an identical one is a 409.
    body: () => ({ line_1: `${crypto.randomUUID().slice(0, 8)} Main St`, city: 'Chicago', postal_code: '60601', country: 'US' }),
    owned: true,
    okStatus: 201,
  },
  {
    route: 'POST /api/vault/customer/:id/address/:address_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/address/${w.addressId}`,
    body: () => ({ line_1: `${crypto.randomUUID().slice(0, 8)} Side St`, city: 'Chicago' }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'DELETE /api/vault/customer/:id/address/:address_id',
    auth: 'secret',
    path: (w) => `/api/vault/customer/${w.customerId}/address/${w.addressToDelete}`,
    owned: true,
    okStatus: 200,
  },
  // Recurring billing (docs/recurring.md): add-ons and discounts, plans, subscriptions.
  ...(['addon', 'discount'] as const).flatMap((kind): Endpoint[] => {
    const id = (w: World) => (kind === 'addon' ? w.addonId : w.discountId);
    const toDelete = (w: World) => (kind === 'addon' ? w.addonToDelete : w.discountToDelete);
    return [
      {
        route: `POST /api/recurring/${kind}`,
        auth: 'secret',
        path: () => `/api/recurring/${kind}`,
        body: () => ({ name: `Table ${kind}`, amount: 250, duration: 3 }),
        okStatus: 201,
      },
      { route: `GET /api/recurring/${kind}s`, auth: 'secret', path: () => `/api/recurring/${kind}s`, okStatus: 200 },
      { route: `GET /api/recurring/${kind}/:id`, auth: 'secret', path: (w) => `/api/recurring/${kind}/${id(w)}`, owned: true, okStatus: 200 },
      {
        route: `POST /api/recurring/${kind}/:id`,
        auth: 'secret',
        path: (w) => `/api/recurring/${kind}/${id(w)}`,
        body: () => ({ name: `Table ${kind}, replaced`, percentage: 12_500, duration: 0 }),
        owned: true,
        okStatus: 200,
      },
      { route: `DELETE /api/recurring/${kind}/:id`, auth: 'secret', path: (w) => `/api/recurring/${kind}/${toDelete(w)}`, owned: true, okStatus: 200 },
    ];
  }),
  {
    route: 'POST /api/recurring/plan',
    auth: 'secret',
    path: () => '/api/recurring/plan',
    body: (w) => ({ name: 'Table plan', amount: 1500, billing_frequency: 'monthly', billing_days: '1', add_ons: [{ id: w.addonId }], discounts: [{ id: w.discountId }] }),
    owned: true,
    crossStatus: 400, // another merchant's add-on or discount is unknown: add_ons.0.id, discounts.0.id
    okStatus: 201,
  },
  { route: 'GET /api/recurring/plans', auth: 'secret', path: () => '/api/recurring/plans', okStatus: 200 },
  { route: 'GET /api/recurring/plan/:id', auth: 'secret', path: (w) => `/api/recurring/plan/${w.planId}`, owned: true, okStatus: 200 },
  {
    route: 'POST /api/recurring/plan/:id',
    auth: 'secret',
    path: (w) => `/api/recurring/plan/${w.planId}`,
    body: () => ({ name: 'Table plan, replaced', amount: 1600, billing_frequency: 'monthly', billing_days: '15' }),
    owned: true,
    okStatus: 200,
  },
  { route: 'DELETE /api/recurring/plan/:id', auth: 'secret', path: (w) => `/api/recurring/plan/${w.planToDelete}`, owned: true, okStatus: 200 },
  {
    route: 'POST /api/recurring/subscription',
    auth: 'secret',
    path: () => '/api/recurring/subscription',
    body: (w) => ({ plan_id: w.planId, customer: { id: w.customerId }, next_bill_date: '2099-01-01' }),
    owned: true,
    crossStatus: 400, // another merchant's plan and customer are unknown here: plan_id, customer.id
    okStatus: 201,
  },
  {
    // A search is scoped to the caller's subscriptions: another merchant's plan id finds nothing (200, empty).
    route: 'POST /api/recurring/subscription/search',
    auth: 'secret',
    path: () => '/api/recurring/subscription/search',
    body: (w) => ({ plan_id: { operator: '=', value: w.planId }, limit: 10 }),
    okStatus: 200,
  },
  {
    route: 'GET /api/recurring/subscription/:id',
    auth: 'secret',
    path: (w) => `/api/recurring/subscription/${w.subscriptionId}`,
    owned: true,
    okStatus: 200,
  },
  {
    route: 'POST /api/recurring/subscription/:id',
    auth: 'secret',
    path: (w) => `/api/recurring/subscription/${w.subscriptionId}`,
    body: () => ({ amount: 1300, description: 'updated by the table' }),
    owned: true,
    okStatus: 200,
  },
  {
    route: 'DELETE /api/recurring/subscription/:id',
    auth: 'secret',
    path: (w) => `/api/recurring/subscription/${w.subscriptionToDelete}`,
    owned: true,
    okStatus: 200,
  },
  {
    // Paused again and again: each call answers 200 (only a cancelled or completed one stays ended).
    route: 'GET /api/recurring/subscription/:id/status/:status',
    auth: 'secret',
    path: (w) => `/api/recurring/subscription/${w.subscriptionId}/status/paused`,
    owned: true,
    okStatus: 200,
  },
];

/** A small batch file as the upload form carries it. */
export function batchForm(rows = 2): FormData {
  const lines = ['"transaction_type","amount","cc_number","cc_expiration"'];
  for (let i = 0; i < rows; i++) lines.push(`"sale","${100 + i}","${CARD}","12/39"`);
  const form = new FormData();
  form.append('file', new File([`${lines.join('\n')}\n`], 'table.csv', { type: 'text/csv' }));
  return form;
}

async function json<T>(response: Response, expected: number, what: string): Promise<T> {
  if (response.status !== expected) throw new Error(`${what}: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: T }>()).data;
}

/** Two merchants with resources, and one whose keys are revoked after a first successful use. */
export async function buildWorld(): Promise<World> {
  const owner = await createMerchant({ name: 'Owner Shop' });
  const intruder = await createMerchant({ name: 'Intruder Shop' });
  const revoked = await createMerchant({ name: 'Revoked Shop' });

  const customer = await json<{ id: string; default_payment_method_id: string }>(
    await call('POST', '/api/vault/customer', {
      key: owner.secretKey,
      body: { id: 'ownercust', payment_method: { card: { number: CARD, expiration: '12/39' } } },
    }),
    201,
    'customer',
  );
  await json(await call('POST', '/api/vault/customer', { key: owner.secretKey, body: { id: 'ownercust2' } }), 201, 'customer 2');
  await json(await call('POST', '/api/vault/customer', { key: owner.secretKey, body: { id: 'ownercust3' } }), 201, 'customer 3');
  // Adding a method or an address answers the customer and the new one's id (FluidPay's answer).
  const added = async (kind: string, body: unknown, field: 'created_payment_method_id' | 'created_address_id') =>
    (await json<Record<string, string>>(await call('POST', `/api/vault/customer/ownercust/${kind}`, { key: owner.secretKey, body }), 201, kind))[field] ?? '';
  const ach = { routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' };
  const cardToDelete = await added('card', { number: CARD, expiration: '10/39' }, 'created_payment_method_id');
  const achId = await added('ach', { ...ach, account_number: '000111111111' }, 'created_payment_method_id');
  const achToDelete = await added('ach', { ...ach, account_number: '000222222222' }, 'created_payment_method_id');
  const addressId = await added('address', { line_1: '1 First St', city: 'Chicago' }, 'created_address_id');
  const addressToDelete = await added('address', { line_1: '2 Second St', city: 'Chicago' }, 'created_address_id');
  const token = await json<{ temp_token: string }>(
    await call('POST', '/api/tokenizer/token', {
      key: owner.publicKey,
      body: { cc_number: CARD, cc_expiration: '12/39', cc_cvc: '123' },
    }),
    201,
    'token',
  );
  const spare = await json<{ id: string }>(await admin('POST', `/admin/merchants/${owner.id}/keys`, { type: 'secret' }), 201, 'key');

  // Use the keys once (so the auth cache holds them), then revoke: the cache must not keep them alive.
  for (const key of [revoked.secretKey, revoked.publicKey]) {
    const use = await call('POST', '/api/tokenizer/token', { key, body: { cc_number: CARD, cc_expiration: '12/39' } });
    if (use.status !== 201) throw new Error(`warm-up use of a key: ${use.status}`);
  }
  const { results } = await env.DB.prepare('SELECT id FROM api_keys WHERE merchant_id = ?1')
    .bind(revoked.id)
    .all<{ id: string }>();
  for (const { id } of results) {
    const response = await admin('DELETE', `/admin/keys/${id}`);
    if (response.status !== 200) throw new Error(`revoke: ${response.status}`);
  }

  const sale = await json<{ id: string }>(
    await call('POST', '/api/transaction', {
      key: owner.secretKey,
      body: { transaction_type: 'sale', cc_number: CARD, cc_expiration: '12/39', amount: 990 },
    }),
    201,
    'transaction',
  );
  const hook = receiver();
  const webhook = await createEndpoint(owner.secretKey, { url: hook.url });
  const webhookToDelete = await createEndpoint(owner.secretKey, { url: hook.url, events: ['batch.failed'] });

  const batch = await json<{ id: string }>(await call('POST', '/api/filebatch', { key: owner.secretKey, body: batchForm() }), 200, 'batch');
  await waitForStatus(owner.secretKey, batch.id, 'completed');
  // The batch's event reaches the owner's endpoint: a delivered delivery, so redelivery is allowed.
  const delivery = await vi.waitFor(async () => {
    const [first] = await deliveries(owner.secretKey, webhook.id);
    if (first?.status !== 'delivered') throw new Error('webhook not delivered yet');
    return first;
  }, { timeout: 30_000, interval: 20 });

  // Settled now: the sale (refundable) and its settlement batch; then an authorization and a sale left open.
  const settled = await json<{ id: string }[]>(await admin('POST', `/admin/merchants/${owner.id}/settle`), 200, 'settlement');
  const open = async (transaction_type: string) =>
    json<{ id: string }>(
      await call('POST', '/api/transaction', { key: owner.secretKey, body: { transaction_type, cc_number: CARD, cc_expiration: '12/39', amount: 990 } }),
      201,
      transaction_type,
    );
  // Never started: they stay running for as long as the tests need. No card numbers in them: their
  // uploads stay in R2 (the card-door scan reads it), as a running batch's do.
  const noCards = csv(['transaction_type', 'amount', 'order_id'], [['sale', '1000', 'run1'], ['sale', '1001', 'run2']]);
  const running = await createUnqueuedBatch(owner.secretKey, noCards, 'running.csv');
  const toCancel = await createUnqueuedBatch(owner.secretKey, noCards, 'to-cancel.csv');

  // A completed export of the owner's transactions: its steps run here rather than by its alarm.
  const started = await json<{ id: string }>(await call('POST', '/api/transaction/export', { key: owner.secretKey, body: {} }), 202, 'export');
  while ((await transactionExport(env, started.id).run(new Date().toISOString())).export?.status === 'running');

  // Recurring billing: the vault customer's subscription to a plan with an add-on and a discount.
  const recurring = async (path: string, body: unknown) =>
    (await json<{ id: string }>(await call('POST', `/api/recurring${path}`, { key: owner.secretKey, body }), 201, `recurring ${path}`)).id;
  const addonId = await recurring('/addon', { name: 'Setup', amount: 500, duration: 1 });
  const addonToDelete = await recurring('/addon', { name: 'Spare add-on', amount: 100 });
  const discountId = await recurring('/discount', { name: 'Loyal', percentage: 10_000 });
  const discountToDelete = await recurring('/discount', { name: 'Spare discount', amount: 100 });
  const planId = await recurring('/plan', {
    name: 'Gold',
    amount: 3000,
    billing_frequency: 'monthly',
    billing_days: '1',
    add_ons: [{ id: addonId }],
    discounts: [{ id: discountId }],
  });
  const planToDelete = await recurring('/plan', { name: 'Spare plan', amount: 100, billing_frequency: 'monthly' });
  const subscription = { plan_id: planId, customer: { id: customer.id }, next_bill_date: '2099-01-01' };
  const subscriptionId = await recurring('/subscription', subscription);
  const subscriptionToDelete = await recurring('/subscription', subscription);

  return {
    owner,
    intruder,
    revoked,
    customerId: customer.id,
    customerToDelete: 'ownercust2',
    fluidCustomerToDelete: 'ownercust3',
    paymentMethodId: customer.default_payment_method_id,
    cardToDelete,
    achId,
    achToDelete,
    addressId,
    addressToDelete,
    tempToken: token.temp_token,
    spareKeyId: spare.id,
    transactionId: sale.id,
    batchId: batch.id,
    authorizationId: (await open('authorize')).id,
    voidableId: (await open('sale')).id,
    settledId: sale.id,
    settlementBatchId: settled[0]?.id ?? 'stl_none',
    runningBatchId: running.id,
    batchToCancel: toCancel.id,
    webhookId: webhook.id,
    webhookUrl: hook.url,
    deliveryId: delivery.id,
    webhookToDelete: webhookToDelete.id,
    exportId: started.id,
    addonId,
    addonToDelete,
    discountId,
    discountToDelete,
    planId,
    planToDelete,
    subscriptionId,
    subscriptionToDelete,
  };
}

/** The request for `endpoint` with the given Authorization value (null: none sent). */
export function request(endpoint: Endpoint, world: World, key: string | null, headers: Record<string, string> = {}) {
  const method = endpoint.route.split(' ')[0] ?? 'GET';
  const body = endpoint.body?.(world);
  return call(method, endpoint.path(world), {
    key,
    headers: { ...endpoint.headers, ...headers },
    ...(body === undefined ? {} : { body }),
  });
}
