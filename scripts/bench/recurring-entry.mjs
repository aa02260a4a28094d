// Bench-only Worker entry for `npm run bench -- --only recurring` (never used by `npm run dev` or a
// deploy; no route of it exists in src/): the bigday entry (the service's src/index.ts unchanged,
// plus the sizes of a merchant's objects), and endpoints that let the bench make a merchant with
// hundreds of thousands of subscriptions without as many HTTP calls, then drive its billing one
// step per request, as the merchant's billing object's alarm would:
//   POST /__bench/recurring/seed   { merchantId, customerId, subscriptionId, from, count }: copies of a
//                                  template vault customer (its card), payment method and subscription,
//                                  written in D1 statements of SEED_ROWS rows each
//   POST /__bench/recurring/step   { merchantId, day }: one billing step (billDue, the alarm's work)
//   POST /__bench/recurring/sizes  { merchantId, day }: the D1 database's size and the SQLite size of
//                                  each object the billing writes to
import bigday from './bigday-entry.mjs';
import { systemClock } from '../../src/lib/time.ts';
import { billDue } from '../../src/services/recurring/billing.ts';
import { shardFor } from '../../src/services/transactions/ledger.ts';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry.ts';
import { weekOf } from '../../src/services/search/names.ts';

export * from './bigday-entry.mjs';

/** Rows per INSERT … SELECT: a few thousand keep each statement well under D1's 30 s per query. */
const SEED_ROWS = 5_000;

const SUBSCRIPTION_COLUMNS = [
  'plan_id', 'description', 'payment_method_type', 'billing_address_id', 'shipping_address_id', 'billing_cycle_interval',
  'billing_frequency', 'billing_days', 'charge_on_day', 'duration', 'add_ons', 'discounts', 'po_number', 'tax_amount', 'tax_exempt',
  'status', 'cycle_date', 'next_bill_date', 'billings', 'retries', 'last_transaction_id', 'last_decline', 'lease_until', 'created_at', 'updated_at',
];

const numbers = 'WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2)';

async function seed({ merchantId, customerId, subscriptionId, from, count }, env) {
  const template = await env.DB.prepare('SELECT default_payment_method_id AS pm FROM vault_customers WHERE merchant_id = ? AND id = ?').bind(merchantId, customerId).first();
  if (!template?.pm) throw new Error('template customer not found');
  for (let at = from; at < from + count; at += SEED_ROWS) {
    const to = Math.min(at + SEED_ROWS, from + count);
    await env.DB.batch([
      env.DB.prepare(
        `${numbers} INSERT INTO vault_customers (merchant_id, id, description, email, surcharge_exempt, default_payment_method_id, created_at, updated_at)
         SELECT c.merchant_id, 'rbc' || n.i, c.description, c.email, c.surcharge_exempt, 'rbpm' || n.i, c.created_at, c.updated_at
         FROM n, vault_customers c WHERE c.merchant_id = ?3 AND c.id = ?4`,
      ).bind(at, to, merchantId, customerId),
      env.DB.prepare(
        `${numbers} INSERT INTO vault_payment_methods (merchant_id, id, customer_id, type, sealed_number, masked, expiration, routing_number, account_type, sec_code, created_at)
         SELECT p.merchant_id, 'rbpm' || n.i, 'rbc' || n.i, p.type, p.sealed_number, p.masked, p.expiration, p.routing_number, p.account_type, p.sec_code, p.created_at
         FROM n, vault_payment_methods p WHERE p.merchant_id = ?3 AND p.id = ?5`,
      ).bind(at, to, merchantId, customerId, template.pm),
      // Amounts vary (10.00 to 89.99) and avoid the sandbox's decline amounts (docs/transactions.md).
      env.DB.prepare(
        `${numbers} INSERT INTO recurring_subscriptions (merchant_id, id, customer_id, payment_method_id, amount, ${SUBSCRIPTION_COLUMNS.join(', ')})
         SELECT s.merchant_id, 'rbs' || n.i, 'rbc' || n.i, 'rbpm' || n.i, 1000 + (n.i % 8000), ${SUBSCRIPTION_COLUMNS.map((c) => `s.${c}`).join(', ')}
         FROM n, recurring_subscriptions s WHERE s.merchant_id = ?3 AND s.id = ?4`,
      ).bind(at, to, merchantId, subscriptionId),
    ]);
  }
  return { seeded: count };
}

async function d1Size(env) {
  const result = await env.DB.prepare('SELECT 1').run();
  return result.meta.size_after ?? null;
}

async function sizes({ merchantId, day }, env) {
  const processorId = defaultSandboxProcessorId(merchantId);
  const shard = shardFor(env, { kind: 'api', merchantId, day }, `${day}T00:00:00.000Z`).identity.name;
  const request = new Request('http://bench/__bench/bigday/sizes', {
    method: 'POST',
    body: JSON.stringify({ merchantId, processorId, days: [day], weeks: [weekOf(day)], shards: [shard] }),
  });
  const objects = await (await bigday.fetch(request, env)).json();
  return { d1Bytes: await d1Size(env), objects };
}

const routes = {
  '/__bench/recurring/seed': seed,
  '/__bench/recurring/step': ({ merchantId, day }, env) => billDue(env, merchantId, day, systemClock),
  '/__bench/recurring/sizes': sizes,
  '/__bench/recurring/d1-size': (_, env) => d1Size(env),
};

export default {
  ...bigday,
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    const route = request.method === 'POST' ? routes[path] : undefined;
    if (!route) return bigday.fetch(request, env, ctx);
    try {
      return Response.json(await route(await request.json(), env));
    } catch (error) {
      return Response.json({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, { status: 500 });
    }
  },
};
