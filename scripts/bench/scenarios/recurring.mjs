// The recurring group (`npm run bench -- --only recurring [--recurring-subs N]`): a merchant with N
// subscriptions due today (default 20,000; --quick 2,000), billed through the real engine one step
// per request, as the merchant's billing object's alarm bills them (services/recurring/billing.ts,
// billDue), each step measured alone: the isolate's CPU (the profiler's non-idle samples, the
// machine's wait for a core taken out) and its V8 heap, against the goal of half Cloudflare's
// limits (15 s CPU, 64 MB of the isolate's 128 MB). Also: that a second run charges nothing, the
// size of D1 and of each object the billing writes to with its projection to 1,000,000
// subscriptions, and the pace (charges a second) beside the merchant's rate tiers.
//
// Seeding goes through the bench-only entry (scripts/bench/recurring-entry.mjs): one template
// customer, card and subscription made through the API, copied in D1 statements of 5,000 rows
// (1,000,000 through the API would be some 2 million calls). Billing is what is measured, and it
// goes through the service's own code only.
import { loadavg } from 'node:os';
import { callJson } from '../http.mjs';
import { startServer } from '../server.mjs';
import { StepMeter, post } from './largest.mjs';

const GOALS = { cpuMs: 15_000, heapMb: 64 };
/** Half of 10 GB: a SQLite-backed Durable Object's storage, and a D1 database's. */
const HALF_STORAGE = 5_000_000_000;
const TIERS = { standard: 50, high: 250, max: 1_000 };
const TARGET = 1_000_000;
const round = (n) => Math.round(n * 10) / 10;

export async function runRecurringBench(ctx) {
  const { root, log, settings } = ctx;
  const count = settings.recurringSubs ?? (settings.quick ? 2_000 : 20_000);
  const every = Math.max(1, settings.recurringMeasureEvery ?? 1);
  const loadAtStart = round(loadavg()[0]);
  log(`recurring: starting a server with the bench-only recurring entry; ${count.toLocaleString('en-US')} subscriptions due today...`);
  const server = await startServer({
    root,
    logDir: `${root}bench/results`,
    log,
    entry: `${root}scripts/bench/recurring-entry.mjs`,
    ...(settings.port ? { port: settings.port + 1, inspectorPort: settings.inspectorPort + 1 } : {}),
  });
  const pctx = { ...ctx, url: server.url };
  let meter;
  try {
    const api = async (method, path, body, auth, expected) => {
      const answer = await callJson(pctx, method, path, body, { auth });
      if (answer.status !== expected) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body.data;
    };
    const merchant = await api('POST', '/admin/merchants', { name: 'Recurring Bench' }, server.adminToken, 201);
    const { id: merchantId, secret_key: key } = merchant;
    const plan = await api('POST', '/api/recurring/plan', { name: 'Bench', amount: 1999, billing_frequency: 'monthly', billing_days: '1', billing_cycle_interval: 1, duration: 0 }, key, 201);
    await api('POST', '/api/vault/customer', { id: 'template', payment_method: { card: { number: '4111111111111111', expiration: '12/39' } } }, key, 201);
    const template = await api('POST', '/api/recurring/subscription', { plan_id: plan.id, customer: { id: 'template' }, charge_on_day: true }, key, 201);
    const day = template.next_bill_date;
    const d1Before = await post(pctx, '/__bench/recurring/d1-size', {});
    const seedStart = performance.now();
    const per = 20_000;
    for (let from = 0; from < count - 1; from += per) {
      await post(pctx, '/__bench/recurring/seed', { merchantId, customerId: 'template', subscriptionId: template.id, from, count: Math.min(per, count - 1 - from) });
    }
    const seedS = (performance.now() - seedStart) / 1000;
    const d1After = await post(pctx, '/__bench/recurring/d1-size', {});
    log(`recurring: seeded ${count.toLocaleString('en-US')} in ${seedS.toFixed(1)} s (D1 ${d1Before} → ${d1After} bytes); billing ${day} step by step...`);

    meter = await StepMeter.open(server.inspectorPort, () => server.workerdPids());
    const steps = [];
    const billStart = performance.now();
    for (let guard = 0; guard < 100_000; guard++) {
      // --recurring-measure-every N: only every Nth step is profiled (a million's 3,334 steps run
      // without the meter's heap snapshot between each); the others are timed by their wall time.
      const metered = steps.length % every === 0;
      const measured = metered
        ? await meter.measure(() => post(pctx, '/__bench/recurring/step', { merchantId, day }))
        : await (async () => {
            const started = performance.now();
            const result = await post(pctx, '/__bench/recurring/step', { merchantId, day });
            return { result, wallMs: Math.round(performance.now() - started) };
          })();
      const { result } = measured;
      steps.push({ wallMs: measured.wallMs, cpuMs: measured.cpuMs, sampledCpuMs: measured.sampledCpuMs, onCpu: measured.onCpu, heapUsedMb: measured.heapUsedMb, heapTotalMb: measured.heapTotalMb, heapBeforeMb: measured.heapBeforeMb, top: measured.top, ...result });
      if ((metered && steps.length % (10 * every) === 1) || result.finished) {
        const profiled = metered ? `CPU ${measured.cpuMs} ms (sampled ${measured.sampledCpuMs}, on CPU ${measured.onCpu}), heap ${measured.heapUsedMb} MB used, ` : '';
        log(`recurring: step ${steps.length}: ${result.charged} charged, ${profiled}${measured.wallMs} ms wall`);
      }
      if (result.finished) break;
    }
    const billS = (performance.now() - billStart) / 1000;
    const charged = steps.reduce((n, s) => n + s.charged, 0);
    const declined = steps.reduce((n, s) => n + s.declined, 0);
    const skipped = steps.reduce((n, s) => n + s.skipped, 0);
    const again = await post(pctx, '/__bench/recurring/step', { merchantId, day });
    const sizes = await post(pctx, '/__bench/recurring/sizes', { merchantId, day });

    // The steps' own time (the meter's heap snapshot between steps is the bench's, not the run's).
    const stepsS = steps.reduce((n, s) => n + s.wallMs, 0) / 1000;
    const pace = charged / stepsS;
    const meteredSteps = steps.filter((s) => s.cpuMs !== undefined);
    const cpuPerCharge = meteredSteps.reduce((n, s) => n + s.cpuMs, 0) / Math.max(1, meteredSteps.reduce((n, s) => n + s.charged + s.declined + s.skipped, 0));
    const max = (field) => Math.max(...(field === 'wallMs' ? steps : meteredSteps).map((s) => s[field] ?? 0));
    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const quarter = Math.max(1, Math.floor(steps.length / 4));
    const full = steps.filter((s) => s.charged + s.declined + s.skipped > 0);
    const fullMetered = full.filter((s) => s.cpuMs !== undefined);
    const meteredQuarter = Math.max(1, Math.floor(fullMetered.length / 4));
    const d1PerSubscription = d1After !== null && d1Before !== null ? (d1After - d1Before) / Math.max(1, count - 1) : null;
    const objects = Object.entries(sizes.objects).map(([object, bytes]) => {
      const projected = Math.round((bytes / Math.max(1, charged)) * TARGET);
      return { object, bytes, projectedBytes: projected, shareOfHalfLimit: round((projected / HALF_STORAGE) * 1000) / 10 };
    });
    const d1Projected = d1PerSubscription === null ? null : Math.round(d1PerSubscription * TARGET);
    const tiers = Object.fromEntries(
      Object.entries(TIERS).map(([tier, perSecond]) => {
        // The billing object's pace: the engine's, at most half the tier's rate (billingPacePerSecond).
        const capped = Math.min(pace, perSecond / 2);
        return [tier, { ratePerSecond: perSecond, paceCap: perSecond / 2, measuredPaceShare: round((pace / perSecond) * 100), billingPace: round(capped), millionHours: round(TARGET / capped / 3600) }];
      }),
    );
    const row = {
      scenario: `recurring: billing ${count.toLocaleString('en-US')} subscriptions due today, step by step`,
      unit: 'charges/s',
      value: round(pace),
      note:
        `${charged} charged (${declined} declined, ${skipped} skipped) in ${steps.length} steps of ≤300; max step CPU ${max('cpuMs')} ms, max heap ${max('heapUsedMb')} MB (goal ${GOALS.cpuMs} ms, ${GOALS.heapMb} MB); ` +
        `step wall median ${median(full.map((s) => s.wallMs))} ms (first quarter ${median(full.slice(0, quarter).map((s) => s.wallMs))}, last ${median(full.slice(-quarter).map((s) => s.wallMs))}); ` +
        `a second run charged ${again.charged}; D1 ${d1PerSubscription === null ? '?' : Math.round(d1PerSubscription)} B a subscription (${d1Projected === null ? '?' : (d1Projected / 1e9).toFixed(2)} GB at 1,000,000); ` +
        `1,000,000 at this pace ${round(TARGET / pace / 3600)} h; standard tier capped at 25/s: ${tiers.standard.millionHours} h`,
      loadAverage1mAtStart: loadAtStart,
      subscriptions: count,
      seeding: { seconds: round(seedS), perSecond: Math.round(count / seedS) },
      charged,
      declined,
      skipped,
      secondRunCharged: again.charged,
      steps: steps.length,
      billingWallSeconds: round(billS),
      stepsSeconds: round(stepsS),
      chargesPerSecond: round(pace),
      cpuMsPerCharge: round(cpuPerCharge),
      maxStepCpuMs: max('cpuMs'),
      maxStepSampledCpuMs: max('sampledCpuMs'),
      maxStepHeapUsedMb: max('heapUsedMb'),
      maxStepHeapTotalMb: max('heapTotalMb'),
      maxStepHeapRiseMb: Math.max(...meteredSteps.map((s) => round(s.heapUsedMb - s.heapBeforeMb))),
      withinGoal: max('cpuMs') <= GOALS.cpuMs && max('heapUsedMb') <= GOALS.heapMb,
      goals: GOALS,
      stepWallMs: { median: median(full.map((s) => s.wallMs)), firstQuarterMedian: median(full.slice(0, quarter).map((s) => s.wallMs)), lastQuarterMedian: median(full.slice(-quarter).map((s) => s.wallMs)), max: max('wallMs') },
      stepCpuMs: { median: median(fullMetered.map((s) => s.cpuMs)), firstQuarterMedian: median(fullMetered.slice(0, meteredQuarter).map((s) => s.cpuMs)), lastQuarterMedian: median(fullMetered.slice(-meteredQuarter).map((s) => s.cpuMs)) },
      meteredSteps: meteredSteps.length,
      heaviestStepTop: meteredSteps.reduce((a, b) => (b.cpuMs > a.cpuMs ? b : a)).top,
      d1: { bytesBefore: d1Before, bytesAfter: d1After, bytesPerSubscription: d1PerSubscription === null ? null : Math.round(d1PerSubscription), projectedBytes: d1Projected, shareOfHalfLimit: d1Projected === null ? null : round((d1Projected / HALF_STORAGE) * 1000) / 10 },
      objects,
      tiers,
      million: { steps: Math.ceil(TARGET / 300), hoursAtMeasuredPace: round(TARGET / pace / 3600) },
    };
    log(`recurring: ${row.note}`);
    return [row];
  } finally {
    meter?.close();
    await server.stop();
  }
}
