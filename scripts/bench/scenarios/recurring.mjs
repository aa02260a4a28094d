// The recurring group: a merchant with N subscriptions due today (default 2,000; --recurring-subs N),
// billed by POST /admin/merchants/{id}/bill, a bounded step per call (300 charges in pages of 50),
// called until it answers finished. Reports the time per step and charges per second, that a second
// run charges nothing, and workerd's RSS during the run. Its own server (fresh state).
//
// Seeding goes through the API (a vault customer and a subscription each, 8 at a time): about 25
// subscriptions a second on a laptop, so 1,000,000 is a day of seeding; the full-scale figure is
// extrapolated from the per-step cost, which does not depend on how many are due (each step reads
// one page of the due index with LIMIT, docs/recurring.md).
import { mapLimit } from '../http.mjs';
import { RssSampler } from '../rss.mjs';
import { startServer } from '../server.mjs';

async function call(url, auth, method, path, body) {
  const started = performance.now();
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => null);
  return { status: response.status, body: json, ms: performance.now() - started };
}

export async function runRecurringBench(ctx) {
  const { root, log, settings } = ctx;
  const count = settings.recurringSubs ?? (settings.quick ? 300 : 2_000);
  log(`recurring: starting a server; seeding ${count} subscriptions due today...`);
  const server = await startServer({ root, logDir: `${root}bench/results`, log });
  const rss = new RssSampler(() => server.workerdPids()).start();
  try {
    const merchant = await call(server.url, server.adminToken, 'POST', '/admin/merchants', { name: 'Recurring Bench' });
    const key = merchant.body.data.secret_key;
    const merchantId = merchant.body.data.id;
    const plan = await call(server.url, key, 'POST', '/api/recurring/plan', { name: 'Bench', amount: 1999, billing_frequency: 'monthly', billing_days: '1', billing_cycle_interval: 1, duration: 0 });
    const seedStart = performance.now();
    await mapLimit(
      Array.from({ length: count }, (_, i) => i),
      8,
      async (i) => {
        const id = `bench${i}`;
        const customer = await call(server.url, key, 'POST', '/api/vault/customer', { id, payment_method: { card: { number: '4111111111111111', expiration: '12/39' } } });
        if (customer.status !== 201) throw new Error(`customer ${i}: ${customer.status} ${JSON.stringify(customer.body)}`);
        const sub = await call(server.url, key, 'POST', '/api/recurring/subscription', { plan_id: plan.body.data.id, customer: { id }, charge_on_day: true });
        if (sub.status !== 201) throw new Error(`subscription ${i}: ${sub.status} ${JSON.stringify(sub.body)}`);
      },
    );
    const seedS = (performance.now() - seedStart) / 1000;
    log(`recurring: seeded in ${seedS.toFixed(1)} s; billing...`);

    const steps = [];
    const billStart = performance.now();
    for (let guard = 0; guard < 100_000; guard++) {
      const step = await call(server.url, server.adminToken, 'POST', `/admin/merchants/${merchantId}/bill`);
      if (step.status !== 200 && step.status !== 202) throw new Error(`bill: ${step.status} ${JSON.stringify(step.body)}`);
      steps.push({ ms: step.ms, ...step.body.data });
      if (step.body.data.finished) break;
    }
    const billS = (performance.now() - billStart) / 1000;
    const charged = steps.reduce((n, s) => n + s.charged, 0);
    const again = await call(server.url, server.adminToken, 'POST', `/admin/merchants/${merchantId}/bill`);
    const sorted = steps.map((s) => s.ms).sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    const rate = charged / billS;
    const millionHours = 1_000_000 / rate / 3600;
    return [
      {
        scenario: `recurring: billing ${count} subscriptions due today`,
        unit: 'charges/s',
        value: Number(rate.toFixed(1)),
        note:
          `${charged} charged in ${steps.length} steps (≤300 charges each), ${billS.toFixed(1)} s; step median ${median.toFixed(0)} ms, max ${sorted.at(-1).toFixed(0)} ms; ` +
          `a second run charged ${again.body?.data?.charged}; workerd RSS peak ${rss.peakMb()?.toFixed(0) ?? '?'} MB; at this pace 1,000,000 due take ${millionHours.toFixed(1)} h of one merchant's billing object; seeding ${(count / seedS).toFixed(0)}/s`,
        charged,
        steps: steps.length,
        stepMedianMs: median,
        secondRunCharged: again.body?.data?.charged,
      },
    ];
  } finally {
    rss.stop();
    await server.stop();
  }
}
