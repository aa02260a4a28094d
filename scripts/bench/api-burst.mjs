#!/usr/bin/env node
// API sales against a running `npm run dev`, N at a time: the answers by status, and the rate one
// merchant's API day shard (with its search day object) sustained locally.
//   node scripts/bench/api-burst.mjs --url http://localhost:8787 --count 2000 --concurrency 25 [--tier standard]
// Reads ADMIN_TOKEN from .dev.vars; creates a merchant of its own (at the tier asked) for the run.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const url = flag('url', 'http://localhost:8787');
const count = Number(flag('count', '2000'));
const concurrency = Number(flag('concurrency', '25'));
const tier = flag('tier', 'standard');
const adminToken = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync('.dev.vars', 'utf8'))?.[1]?.trim();
if (!adminToken) throw new Error('no ADMIN_TOKEN in .dev.vars (run npm run dev once)');

const created = await fetch(`${url}/admin/merchants`, {
  method: 'POST',
  headers: { Authorization: adminToken, 'Content-Type': 'application/json' },
  body: JSON.stringify({ name: `Burst ${Date.now()}`, rate_tier: tier }),
});
if (created.status !== 201) throw new Error(`merchant: ${created.status} ${await created.text()}`);
const { data: merchant } = await created.json();

const statuses = new Map();
const latencies = [];
let next = 0;
const started = performance.now();
async function worker() {
  while (next < count) {
    const i = next++;
    const t0 = performance.now();
    const response = await fetch(`${url}/api/transaction`, {
      method: 'POST',
      headers: { Authorization: merchant.secret_key, 'Content-Type': 'application/json', 'Idempotency-Key': `burst-${i}` },
      body: JSON.stringify({ transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/39', amount: 1000 + i, order_id: `O${i}` }),
    });
    await response.arrayBuffer();
    latencies.push(performance.now() - t0);
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]);
const ok = statuses.get(201) ?? 0;
console.log(JSON.stringify({ count, concurrency, tier, statuses: Object.fromEntries(statuses), seconds: Number(seconds.toFixed(1)), createdPerSecond: Number((ok / seconds).toFixed(1)), p50Ms: pct(50), p99Ms: pct(99), fiveHundreds: [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0) }));
