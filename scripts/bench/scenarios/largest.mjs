// The largest workloads the docs promise (`npm run bench -- --only largest`; issue 29): a
// 500,000-row file (BATCH_MAX_ROWS) processed, settled and archived, and an API day shard of
// 1,000,000 transactions (seeded through the shard's own claim and complete from the bench-only
// entry scripts/bench/largest-entry.mjs) settled, its request hashes cleared, and archived. Each
// settlement and retention step is driven as the alarm (or "settle now") drives it, one request
// per step, and measured alone: the isolate's CPU (the profiler's non-idle samples over the step:
// the settlement object's invocation and the shard calls it makes, so an upper bound of any one of
// them) and its V8 heap (Runtime.getHeapUsage sampled every 50 ms, after a GC before the step),
// printed beside Cloudflare's limits (30 s CPU, 128 MB) and the goal of half of them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { callJson } from '../http.mjs';
import { connectInspector, selfTimes } from '../profile.mjs';
import { cpuMsOf, schedstatOf } from '../rss.mjs';
import { startServer } from '../server.mjs';
import { DEMO } from '../../local-state.mjs';
import { startBatchFile, ensureCustomers, fileBins } from './batch.mjs';

const DAY = 86_400_000;
const MIB = 1024 * 1024;
const LIMITS = { cpuMs: 30_000, heapMb: 128 };
const GOALS = { cpuMs: 15_000, heapMb: 64 };

/** One inspector session for the whole run: each step is profiled and its heap sampled. */
export class StepMeter {
  #session;
  #pids;

  static async open(port, pids) {
    const meter = new StepMeter();
    meter.#session = await connectInspector(port);
    meter.#pids = pids;
    await meter.#session.send('Profiler.enable');
    await meter.#session.send('Profiler.setSamplingInterval', { interval: 1000 });
    await meter.#session.send('HeapProfiler.enable');
    return meter;
  }

  async measure(work) {
    const send = (method) => Promise.race([this.#session.send(method), new Promise((_, reject) => setTimeout(() => reject(new Error(`inspector: ${method} timed out`)), 600_000))]);
    // A full GC before the step (workerd's inspector never answers HeapProfiler.collectGarbage, but a
    // heap snapshot collects first): the heap before is what is live, and the peak during the step is
    // that plus what the step allocated and the collector had not yet taken back (an upper bound).
    await send('HeapProfiler.takeHeapSnapshot');
    const before = await send('Runtime.getHeapUsage');
    let peakUsed = before.usedSize;
    let peakTotal = before.totalSize;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          const { usedSize, totalSize } = await send('Runtime.getHeapUsage');
          peakUsed = Math.max(peakUsed, usedSize);
          peakTotal = Math.max(peakTotal, totalSize);
        } catch {
          // The isolate was busy or replaced: the next sample counts.
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const workerdBefore = cpuMsOf(this.#pids());
    const schedBefore = schedstatOf(this.#pids());
    const started = performance.now();
    await send('Profiler.start');
    let result;
    let profile;
    try {
      result = await work();
    } finally {
      // A loaded machine has seen the inspector answer the stop without a profile: the step then
      // counts as unprofiled (its CPU unknown, said so) instead of ending an hour's run.
      profile = (await send('Profiler.stop'))?.profile ?? null;
      sampling = false;
      await sampler;
    }
    const after = await send('Runtime.getHeapUsage');
    peakUsed = Math.max(peakUsed, after.usedSize);
    peakTotal = Math.max(peakTotal, after.totalSize);
    const entries = profile ? selfTimes(profile).filter((e) => e.name !== '(idle)') : [];
    const busyMs = entries.reduce((sum, e) => sum + e.selfMs, 0);
    const workerdAfter = cpuMsOf(this.#pids());
    // On a shared machine the profiler also samples while the isolate's thread waits for a core:
    // workerd's share of runnable time it actually ran (schedstat) takes that out, as the cost run does.
    const schedAfter = schedstatOf(this.#pids());
    const ran = schedAfter && schedBefore ? schedAfter.runNs - schedBefore.runNs : 0;
    const waited = schedAfter && schedBefore ? schedAfter.waitNs - schedBefore.waitNs : 0;
    const onCpu = ran + waited > 0 ? ran / (ran + waited) : 1;
    return {
      result,
      wallMs: Math.round(performance.now() - started),
      sampledCpuMs: profile ? Math.round(busyMs) : null,
      onCpu: round(onCpu * 100) / 100,
      cpuMs: profile ? Math.round(busyMs * onCpu) : null,
      unprofiled: !profile,
      top: entries.slice(0, 8).map((e) => ({ name: e.name, at: `${e.url}:${e.line}`, ms: Math.round(e.selfMs) })),
      workerdCpuMs: workerdBefore !== null && workerdAfter !== null ? workerdAfter - workerdBefore : null,
      // The isolate's heap used just before the step (after the full GC), at its peak during the
      // step, and the step's own: the rise above that level. Under wrangler dev every object of the
      // script lives in this one isolate, so the peak also holds what every other live object holds;
      // the rise is the step's (an upper bound: garbage the collector had not yet taken back counts).
      heapBeforeMb: round(before.usedSize / MIB),
      heapUsedMb: round(peakUsed / MIB),
      heapTotalMb: round(peakTotal / MIB),
      heapOwnMb: round((peakUsed - before.usedSize) / MIB),
    };
  }

  /**
   * Samples the isolate's V8 heap every `everyMs` until the answer's stop() (which answers the peak
   * used and held, in MB): over a stretch where many invocations run at once, the isolate's peak is
   * an upper bound of what any one of them held.
   */
  sampleHeap(everyMs = 250) {
    let peakUsed = 0;
    let peakTotal = 0;
    let samples = 0;
    let sampling = true;
    const loop = (async () => {
      while (sampling) {
        try {
          const { usedSize, totalSize } = await this.#session.send('Runtime.getHeapUsage');
          peakUsed = Math.max(peakUsed, usedSize);
          peakTotal = Math.max(peakTotal, totalSize);
          samples += 1;
        } catch {
          // The isolate was busy or replaced: the next sample counts.
        }
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
    return {
      async stop() {
        sampling = false;
        await loop;
        return { samples, heapUsedMb: round(peakUsed / MIB), heapTotalMb: round(peakTotal / MIB) };
      },
    };
  }

  /** `listener(params)` for every console call in the isolate (Runtime.consoleAPICalled). */
  async onConsole(listener) {
    this.#session.on('Runtime.consoleAPICalled', listener);
    await this.#session.send('Runtime.enable');
  }

  close() {
    this.#session.close();
  }
}

const round = (n) => Math.round(n * 10) / 10;

export async function post(ctx, path, body) {
  const response = await fetch(`${ctx.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(900_000) });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** Runs `step` until `done(answer)`, each step measured alone; answers the phase's figures. */
export async function phase(ctx, meter, name, step, done, maxSteps = 1_000) {
  const steps = [];
  for (let i = 0; i < maxSteps; i += 1) {
    const measured = await meter.measure(step);
    steps.push({ ...measured, result: undefined, answer: summary(measured.result) });
    ctx.log(`largest: ${name} step ${i + 1}: CPU ${measured.cpuMs} ms (sampled ${measured.sampledCpuMs}, on CPU ${measured.onCpu}), heap: the step's own ${measured.heapOwnMb} MB (isolate ${measured.heapBeforeMb} MB before, ${measured.heapUsedMb} MB used at the peak, ${measured.heapTotalMb} MB held), ${measured.wallMs} ms wall`);
    if (done(measured.result)) break;
  }
  const max = (field) => Math.max(...steps.map((s) => s[field] ?? 0));
  const heaviest = steps.reduce((a, b) => ((b.cpuMs ?? 0) > (a.cpuMs ?? 0) ? b : a));
  return {
    phase: name,
    steps: steps.length,
    maxCpuMs: max('cpuMs'),
    maxSampledCpuMs: max('sampledCpuMs'),
    heaviestTop: heaviest.top,
    maxWorkerdCpuMs: max('workerdCpuMs'),
    maxHeapUsedMb: max('heapUsedMb'),
    maxHeapTotalMb: max('heapTotalMb'),
    unprofiledSteps: steps.filter((s) => s.unprofiled).length,
    maxHeapBeforeMb: max('heapBeforeMb'),
    maxHeapRiseMb: max('heapOwnMb'),
    // The heap goal is judged on the step's own heap (its rise over the isolate's level before it):
    // the isolate's peak also counts every other object alive in the one local isolate, which a
    // deployed invocation does not share.
    withinGoal: max('cpuMs') <= GOALS.cpuMs && max('heapOwnMb') <= GOALS.heapMb,
    isolateWithinGoal: max('heapUsedMb') <= GOALS.heapMb,
    detail: steps,
  };
}

/** The answer of a step without its batches' full lists. */
function summary(answer) {
  if (!answer || typeof answer !== 'object') return answer;
  const { batches, ...rest } = answer;
  return batches ? { ...rest, batches: batches.map((b) => ({ id: b.id, num_transactions: b.num_transactions, amount_captured: b.amount_captured, amount_credit: b.amount_credit })) } : rest;
}

export async function runLargest(ctx) {
  const { root, log, settings } = ctx;
  const loadAtStart = round(loadavg()[0]);
  log('largest: starting a server with the bench-only largest entry...');
  const server = await startServer({
    root,
    logDir: `${root}bench/results`,
    log,
    entry: `${root}scripts/bench/largest-entry.mjs`,
    ...(settings.port ? { port: settings.port + 1, inspectorPort: settings.inspectorPort + 1 } : {}),
    // --largest-heap-limit N: V8 may hold at most N MB in the isolate (workerd's flags through
    // Miniflare): a step that needed more live memory would fail, not just show a peak.
    ...(settings.largestHeapLimit ? { env: { MINIFLARE_WORKERD_V8_FLAGS: `--max-heap-size=${settings.largestHeapLimit}` } } : {}),
  });
  const pctx = { ...ctx, url: server.url, adminToken: server.adminToken, server, data: {} };
  const meter = await StepMeter.open(server.inspectorPort, () => server.workerdPids());
  const phases = [];
  const facts = {};
  try {
    // 1. The largest file: processed by the real pipeline, then settled and archived step by step.
    const rows = settings.largestRows ?? 500_000;
    const bins = fileBins(pctx);
    await ensureCustomers(pctx, bins);
    log(`largest: a ${rows.toLocaleString('en-US')}-row file through the pipeline...`);
    const started = performance.now();
    const file = await startBatchFile(pctx, rows);
    const record = await file.done(2_000);
    facts.file = { rows, batchId: file.id, processedLines: record.processed_lines, seconds: Math.round((performance.now() - started) / 1000) };
    const batchShard = `${DEMO.merchantId}/batch/${file.id}`;
    facts.file.shard = await post(pctx, '/__bench/largest/shard-info', { shard: batchShard });
    log(`largest: file done in ${facts.file.seconds} s; its shard ${JSON.stringify(facts.file.shard)}`);
    const now = new Date().toISOString();
    phases.push(await phase(pctx, meter, `${rows.toLocaleString('en-US')}-row file: settle`, () => post(pctx, '/__bench/largest/settle-step', { merchantId: DEMO.merchantId, now }), (a) => a.done));
    facts.file.settled = phases.at(-1).detail.at(-1).answer;
    const archiveAt = new Date(Date.parse(record.created_at) + 548 * DAY).toISOString();
    phases.push(await phase(pctx, meter, `${rows.toLocaleString('en-US')}-row file: archive`, () => post(pctx, '/__bench/largest/retention-step', { shard: batchShard, now: archiveAt }), (a) => !a.more));
    facts.file.archived = phases.at(-1).detail.at(-1).answer;

    // 2. An API day shard of a million transactions, on a day a month ahead (its alarms stay away).
    const count = settings.largestApi ?? 1_000_000;
    if (count > 0) {
    const merchant = await callJson(pctx, 'POST', '/admin/merchants', { name: 'Largest API Day Merchant' }, { auth: server.adminToken });
    if (merchant.status !== 201) throw new Error(`admin: ${merchant.status} ${JSON.stringify(merchant.body)}`);
    const { id: merchantId, secret_key: key } = merchant.body.data;
    const template = await callJson(pctx, 'POST', '/api/transaction', { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000, billing_first_name: 'Ana', billing_last_name: 'Bench', billing_postal_code: '73301', billing_country: 'US', order_id: 'LARGEST1' }, { auth: key });
    if (template.status !== 201) throw new Error(`template transaction: ${template.status} ${JSON.stringify(template.body)}`);
    const templateDay = new Date().toISOString().slice(0, 10);
    const day = new Date(Date.now() + 30 * DAY).toISOString().slice(0, 10);
    log(`largest: seeding ${count.toLocaleString('en-US')} API transactions into ${merchantId}/api/${day}...`);
    const seeding = performance.now();
    const per = 10_000;
    let identity;
    for (let from = 0; from < count; from += per) {
      ({ shard: identity } = await post(pctx, '/__bench/largest/seed', { merchantId, templateId: template.body.data.id, templateDay, day, from, count: Math.min(per, count - from), perCall: 2_000 }));
      if ((from / per) % 10 === 9) log(`largest: seeded ${(from + per).toLocaleString('en-US')} (${Math.round((performance.now() - seeding) / 1000)} s)`);
    }
    facts.api = { count, shard: identity.name, seedSeconds: Math.round((performance.now() - seeding) / 1000) };
    facts.api.before = await post(pctx, '/__bench/largest/shard-info', { shard: identity.name });
    const dayStart = Date.parse(`${day}T00:00:00.000Z`);
    phases.push(await phase(pctx, meter, `API day shard of ${count.toLocaleString('en-US')}: settle`, () => post(pctx, '/__bench/largest/settle-step', { merchantId, now: new Date(dayStart + DAY).toISOString() }), (a) => a.done));
    facts.api.settled = phases.at(-1).detail.at(-1).answer;
    phases.push(await phase(pctx, meter, `API day shard of ${count.toLocaleString('en-US')}: clear hashes`, () => post(pctx, '/__bench/largest/retention-step', { shard: identity.name, now: identity.hashesClearAt }), (a) => !a.more));
    facts.api.hashes = phases.at(-1).detail.reduce((sum, s) => sum + (s.answer?.hashesCleared ?? 0), 0);
    phases.push(await phase(pctx, meter, `API day shard of ${count.toLocaleString('en-US')}: archive`, () => post(pctx, '/__bench/largest/retention-step', { shard: identity.name, now: identity.archiveAt }), (a) => !a.more));
    facts.api.archived = phases.at(-1).detail.at(-1).answer;
    }
  } finally {
    meter.close();
    await server.stop();
  }
  const commit = execSync('git rev-parse --short HEAD', { cwd: root }).toString().trim();
  const result = { generatedAt: new Date().toISOString(), commit, heapLimitMb: settings.largestHeapLimit ?? null, loadAverage1mAtStart: loadAtStart, loadAverage1mAtEnd: round(loadavg()[0]), limits: LIMITS, goals: GOALS, facts, phases };
  const file = join(root, 'bench', 'runs', `${result.generatedAt.slice(0, 16).replace(':', '-')}-largest-${commit}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  printLargest(result);
  log(`largest: written to ${file}`);
  return result;
}

export function printLargest(result) {
  const pad = (s, n) => String(s).padEnd(n);
  console.log(`\nLargest workloads (commit ${result.commit}, load ${result.loadAverage1mAtStart} → ${result.loadAverage1mAtEnd}): the most any one step used`);
  console.log(`${pad('step', 46)}${pad('steps', 7)}${pad('CPU ms (limit 30,000; goal 15,000)', 36)}${pad("heap MB: step's own (goal 64); isolate before / peak used / held", 66)}within goal`);
  for (const p of result.phases) {
    console.log(`${pad(p.phase, 46)}${pad(p.steps, 7)}${pad(`${p.maxCpuMs.toLocaleString('en-US')} (sampled ${p.maxSampledCpuMs.toLocaleString('en-US')})`, 36)}${pad(`${p.maxHeapRiseMb}; ${p.maxHeapBeforeMb ?? '?'} / ${p.maxHeapUsedMb} / ${p.maxHeapTotalMb}`, 66)}${p.withinGoal ? 'yes' : 'NO'}`);
  }
  console.log('CPU: the profiler\'s non-idle samples over a step, times the share of runnable time workerd ran (sampled: without that correction).');
  console.log('Heap: the step\'s own is the rise of the isolate\'s V8 heap used, from just before the step (after a full GC) to its peak during it (what the step allocated and the collector had not taken back counts: an upper bound); the goal is judged on it. Beside it the isolate\'s: before, used at the peak, and held.');
  for (const p of result.phases) console.log(`  ${p.phase}, heaviest step: ${p.heaviestTop.map((t) => `${t.name || '(anonymous)'} ${t.ms} ms`).join(', ')}`);
}
