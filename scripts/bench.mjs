#!/usr/bin/env node
// `npm run bench`: starts the Worker on a fresh local state (as `npm run dev` does), prepares data,
// runs every scenario of docs/performance.md with fixed connections and duration (warm-up excluded),
// stops the server, prints one table and writes bench/results.json.
//
//   npm run bench                          the full run (figures shown in docs/performance.md; the
//                                          cost model's calculation in docs/cost.md)
//   npm run bench -- --only lookup,batch   some groups: baseline, import, lookup, batch, contention, fairness, cost, search, recurring (baseline always runs)
//   npm run bench -- --only recurring --recurring-subs N   N subscriptions (seeded by the bench-only entry) due today, billed step by step, each step's CPU and heap measured (default 20,000; --quick 2,000;
//            --recurring-measure-every K: only every Kth step profiled, for a million's 3,334 steps)
//   npm run bench -- --only largest        the largest workloads (a 500,000-row file and an API day shard of
//                                          a million transactions, settled and archived step by step, the
//                                          CPU and heap of each step against the limits); not in a full run
//                                          (about an hour): docs/capacity.md cites its runs in bench/runs/
//   npm run bench -- --quick               shorter runs and smaller files (no 500,000-row file), for development
//   npm run bench -- --profile             the cost runs' profiles in detail (top functions, every binding call)
//   options: --connections N  --duration S  --warmup S  --rounds N  --tool wrk|autocannon  --keep-state
//            --scenario "<name>;<name>" (only these scenarios, plus the baseline and the import)
//            --port P --inspector-port Q (the server's ports; a second server, the cost or largest one, takes P+1 and Q+1)
//            --largest-rows N --largest-api N (smaller largest workloads, to try the group)
//            --largest-heap-limit MB (the largest group's isolate may hold at most this much V8 heap)
//   npm run bench -- --only shardrate      one ledger shard's sustained rate of API sales (claims and answers), 3 × 20 s
//            --shardrate-seconds N (each of the 3 concurrencies runs N s)
//   npm run bench -- --only bigday         one big merchant's day through the real paths (files at once, API sales
//                                          with captures, voids and refunds, searches and an export), settled
//                                          and archived; --bigday-scale N transactions (default 1,000,000),
//                                          --bigday-api N of them through the API (default 5%),
//                                          --bigday-files N files at once (default 4, more if a file would pass
//                                          500,000 rows), --bigday-concurrency N API requests at once (default 50);
//                                          not in a full run
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { EndpointMissing } from './bench/http.mjs';
import { detectTool } from './bench/load.mjs';
import { printCost } from './bench/cost.mjs';
import { foreignWorkerdCount, machineInfo, printCpu, printTable, updateCostDoc, updatePerformanceDoc, writeResults } from './bench/report.mjs';
import { RssSampler } from './bench/rss.mjs';
import { batchScenarios } from './bench/scenarios/batch.mjs';
import { captureFileScenarios } from './bench/scenarios/capture-file.mjs';
import { contentionScenarios } from './bench/scenarios/contention.mjs';
import { fairnessScenarios } from './bench/scenarios/fairness.mjs';
import { baselineScenarios } from './bench/scenarios/baseline.mjs';
import { runCost } from './bench/scenarios/cost.mjs';
import { runSearchBench } from './bench/scenarios/search.mjs';
import { runRecurringBench } from './bench/scenarios/recurring.mjs';
import { importScenarios } from './bench/scenarios/import.mjs';
import { lookupScenarios, runLimiterInIsolate } from './bench/scenarios/lookup.mjs';
import { startServer } from './bench/server.mjs';
import { runLargest } from './bench/scenarios/largest.mjs';
import { runBigday } from './bench/scenarios/bigday.mjs';
import { runShardRate } from './bench/scenarios/shardrate.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

const GROUPS = ['baseline', 'import', 'lookup', 'batch', 'contention', 'fairness', 'cost', 'search', 'recurring', 'largest', 'bigday', 'shardrate'];
/** A full run: every group but `largest` and `bigday` (an hour each; run them with --only). */
const FULL_GROUPS = GROUPS.filter((g) => g !== 'largest' && g !== 'bigday' && g !== 'shardrate');
const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    connections: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    tool: { type: 'string' },
    'keep-state': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    rounds: { type: 'string' },
    port: { type: 'string' },
    'inspector-port': { type: 'string' },
    'largest-rows': { type: 'string' },
    'recurring-subs': { type: 'string' },
    'recurring-measure-every': { type: 'string' },
    'largest-api': { type: 'string' },
    'largest-heap-limit': { type: 'string' },
    'bigday-scale': { type: 'string' },
    'bigday-files': { type: 'string' },
    'bigday-concurrency': { type: 'string' },
    'bigday-api': { type: 'string' },
    'shardrate-seconds': { type: 'string' },
  },
});

const only = values.only ? values.only.split(',').map((g) => g.trim()).filter(Boolean) : FULL_GROUPS;
for (const group of only) {
  if (!GROUPS.includes(group)) {
    console.error(`Unknown group "${group}" in --only; use some of: ${GROUPS.join(', ')}.`);
    process.exit(2);
  }
}
if (values.tool && !['wrk', 'autocannon'].includes(values.tool)) {
  console.error(`--tool must be wrk or autocannon, not "${values.tool}".`);
  process.exit(2);
}
const quick = values.quick;
const settings = {
  quick,
  full: !values.only && !values.scenario && !quick,
  // Modest on purpose: wrk (or autocannon) shares the 2 cores with workerd; more connections only
  // queue inside workerd, which raises latency without raising throughput.
  connections: Number(values.connections ?? 10),
  durationS: Number(values.duration ?? (quick ? 3 : 10)),
  warmupS: Number(values.warmup ?? (quick ? 1 : 3)),
  tool: values.tool ?? detectTool(),
  // 500,000 rows is BATCH_MAX_ROWS, the largest file accepted: full runs only (about 2 minutes).
  batchSizes: quick ? [1_000, 10_000] : [1_000, 10_000, 100_000, 500_000],
  profile: values.profile,
  // Paired healthz/lookup-warm rounds for the headline ratio (the median round is reported).
  rounds: Number(values.rounds ?? (quick ? 1 : 3)),
  groups: new Set(['baseline', ...only]),
  port: values.port ? Number(values.port) : null,
  inspectorPort: values['inspector-port'] ? Number(values['inspector-port']) : null,
  largestRows: values['largest-rows'] ? Number(values['largest-rows']) : null,
  recurringSubs: values['recurring-subs'] ? Number(values['recurring-subs']) : null,
  recurringMeasureEvery: values['recurring-measure-every'] ? Number(values['recurring-measure-every']) : null,
  largestApi: values['largest-api'] ? Number(values['largest-api']) : null,
  largestHeapLimit: values['largest-heap-limit'] ? Number(values['largest-heap-limit']) : null,
  bigdayScale: values['bigday-scale'] ? Number(values['bigday-scale']) : null,
  bigdayFiles: values['bigday-files'] ? Number(values['bigday-files']) : null,
  bigdayConcurrency: values['bigday-concurrency'] ? Number(values['bigday-concurrency']) : null,
  bigdayApi: values['bigday-api'] ? Number(values['bigday-api']) : null,
  shardrateSeconds: values['shardrate-seconds'] ? Number(values['shardrate-seconds']) : null,
};
if ((settings.port === null) !== (settings.inspectorPort === null)) {
  console.error('--port and --inspector-port go together.');
  process.exit(2);
}
/** The main server's ports when given (a second server takes the next ones). */
const serverPorts = settings.port ? { port: settings.port, inspectorPort: settings.inspectorPort } : {};

const loadAtStart = Math.round(loadavg()[0] * 100) / 100;
const log = (line) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
log(`load generator: ${settings.tool}, ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s measured per scenario`);

const rows = [];
const ctx = { root, settings, log, rows, data: {} };

log('starting wrangler dev on a fresh local state...');
let server = await startServer({ root, logDir: `${root}bench/results`, log, keepState: values['keep-state'], ...serverPorts });
Object.assign(ctx, { url: server.url, adminToken: server.adminToken, server });
const foreignWorkerd = foreignWorkerdCount(server.workerdPids());
if (foreignWorkerd > 0) log(`note: ${foreignWorkerd} other workerd processes are running on this machine; figures will be noisier`);
const rss = new RssSampler(() => server.workerdPids()).start();
// workerd processes that vanish mid-run (a crash, or something else on the machine ending them)
// are logged with the time, so a failed scenario can be told from a slow one.
const runtimeEvents = [];
let knownPids = new Set(server.workerdPids());
let replacing = false;
const pidWatch = setInterval(() => {
  if (replacing) return;
  const now = new Set(server.workerdPids());
  const gone = [...knownPids].filter((pid) => !now.has(pid));
  const added = [...now].filter((pid) => !knownPids.has(pid));
  if (gone.length > 0 || added.length > 0) {
    const event = `${new Date().toISOString()}: workerd ${gone.length ? `pids ${gone.join(', ')} ended` : ''}${gone.length && added.length ? '; ' : ''}${added.length ? `pids ${added.join(', ')} started` : ''}`;
    runtimeEvents.push(event);
    log(event);
  }
  knownPids = now;
}, 500);
pidWatch.unref();
ctx.rss = rss;
log(`server at ${server.url} (workerd pids ${server.workerdPids().join(', ')}, RSS ${rss.currentMb()?.toFixed(0)} MB)`);

const scenarios = [
  ...baselineScenarios,
  ...importScenarios,
  ...lookupScenarios,
  ...batchScenarios,
  ...captureFileScenarios,
  ...contentionScenarios,
  ...fairnessScenarios,
  // The baseline again at the end: how much the machine's own load drifted during the run.
  { ...baselineScenarios[0], name: 'healthz (again, at the end)' },
]
  .filter((s) => (settings.groups.has(s.group) || s.needed?.(settings.groups)) && s.enabled?.(settings) !== false)
  // --scenario "lookup warm;lookup cold": only these (plus what they need: the baseline, the import).
  .filter((s) => !values.scenario || s.group === 'baseline' || s.needed?.(settings.groups) || values.scenario.split(';').map((n) => n.trim()).includes(s.name));

/** Whether the server still answers GET /healthz within 5 s. */
async function healthy() {
  try {
    const response = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * A server that stopped answering (it happened on the shared machine this was built on: the
 * workerd processes vanished mid-run) is replaced by a fresh one, with the BIN data imported again.
 */
async function replaceServer(reason = 'the server stopped answering') {
  const events = runtimeEvents.length && reason.includes('stopped') ? ` (${runtimeEvents.at(-1)})` : '';
  log(`${reason}${events}; starting a fresh server...`);
  replacing = true;
  await server.stop().catch(() => {});
  server = await startServer({ root, logDir: `${root}bench/results`, log, keepState: values['keep-state'], ...serverPorts });
  Object.assign(ctx, { url: server.url, adminToken: server.adminToken, server });
  knownPids = new Set(server.workerdPids());
  replacing = false;
  ctx.data.batchCustomers = undefined;
  if (settings.groups.has('lookup') || settings.groups.has('batch') || settings.groups.has('import') || settings.groups.has('fairness')) {
    const bins = ctx.data.bins;
    await importScenarios[0].run(ctx);
    ctx.data.bins = bins ?? ctx.data.bins;
  }
  if (reason.includes('stopped')) runtimeEvents.push(`${new Date().toISOString()}: server replaced by a fresh one (${server.url})`);
}
// Each batch file runs on a fresh server (BINs imported, no other load before it): workerd's RSS
// only grows over a run, so peaks of files measured one after the other would not compare.
ctx.freshServer = replaceServer;

let failed = false;
try {
  for (const scenario of scenarios) {
    const report = settings.groups.has(scenario.group);
    log(`${report ? 'scenario' : 'preparing'}: ${scenario.name}`);
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      try {
        const produced = await scenario.run(ctx);
        const retried = attempt > 1 ? { retried: 'run again on a fresh server: the first one stopped answering' } : {};
        if (report) for (const row of produced ?? []) rows.push({ group: scenario.group, ...row, ...retried });
        break;
      } catch (error) {
        const skipped = error instanceof EndpointMissing;
        log(`${scenario.name}: ${error.message}`);
        if (!skipped && attempt === 1 && !(await healthy())) {
          await replaceServer();
          continue;
        }
        if (!skipped) {
          failed = true;
          console.error(error);
        }
        if (report) rows.push({ group: scenario.group, scenario: scenario.name, skipped: skipped ? error.message : `failed: ${error.message}` });
        break;
      }
    }
  }
} finally {
  clearInterval(pidWatch);
  rss.stop();
  log('stopping the server...');
  await server.stop();
}
// Lookup rows carry a ratio to a healthz run measured right before them (see lookup.mjs); the
// healthz run at the end is compared with the one at the start.
const baseline = rows.find((r) => r.scenario === 'healthz');
for (const row of rows) {
  if (row.ratioToBaseline !== true) continue;
  if (baseline?.rps) {
    row.ratioToBaseline = row.rps / baseline.rps;
    row.p99Ratio = row.p99Ms / baseline.p99Ms;
  } else {
    delete row.ratioToBaseline;
  }
}

const wanted = (name) => !values.scenario || values.scenario.split(';').map((n) => n.trim()).includes(name);

// The warm lookup with the limiter answered in the isolate: its own server, after the main run.
if (settings.groups.has('lookup') && wanted('lookup warm (limiter in isolate)')) {
  try {
    for (const row of await runLimiterInIsolate(ctx, { startServer, RssSampler, importScenario: importScenarios[0] })) rows.push({ group: 'lookup', ...row });
  } catch (error) {
    log(`lookup warm (limiter in isolate): ${error.message}`);
    rows.push({ group: 'lookup', scenario: 'lookup warm (limiter in isolate)', skipped: `failed: ${error.message}` });
  }
}

// Search (issue 33): indexing's rows written, a 100-shard merchant's first pages, a 100,000-row
// export; the probe's server of its own, after the main run.
if (settings.groups.has('search') && wanted('search')) {
  try {
    for (const row of await runSearchBench(ctx)) rows.push({ group: 'search', ...row });
  } catch (error) {
    failed = true;
    log(`search: ${error.message}`);
    rows.push({ group: 'search', scenario: 'search', skipped: `failed: ${error.message}` });
  }
}

// Recurring billing: subscriptions due today billed in bounded steps (docs/recurring.md); a server of its own.
if (settings.groups.has('recurring') && wanted('recurring')) {
  try {
    for (const row of await runRecurringBench(ctx)) rows.push({ group: 'recurring', ...row });
  } catch (error) {
    failed = true;
    log(`recurring: ${error.message}`);
    rows.push({ group: 'recurring', scenario: 'recurring', skipped: `failed: ${error.message}` });
  }
}

// The cost model and CPU per unit of work: the probe's server, after everything else.
let cost = null;
if ((settings.groups.has('cost') && wanted('cost')) || settings.profile) {
  cost = await runCost(ctx);
  if (cost.runs.error) failed = true;
}

// The largest workloads: their own server, after everything else (bench/runs/ keeps the run).
let largest = null;
if (settings.groups.has('largest')) {
  try {
    largest = await runLargest(ctx);
  } catch (error) {
    log(`largest: ${error.stack ?? error.message}`);
    failed = true;
  }
}

// One big merchant's day: its own server too (bench/runs/ keeps the run).
let bigday = null;
if (settings.groups.has('bigday')) {
  try {
    bigday = await runBigday(ctx);
  } catch (error) {
    log(`bigday: ${error.stack ?? error.message}`);
    failed = true;
  }
}

// One ledger shard's sustained rate of API sales (docs/capacity.md, "An API day in sub-shards"): its own server.
let shardrate = null;
if (settings.groups.has('shardrate')) {
  try {
    shardrate = await runShardRate(ctx);
  } catch (error) {
    log(`shardrate: ${error.stack ?? error.message}`);
    failed = true;
  }
}

// CPU per unit of work: the cost runs', and the warm lookup's with the limiter in the isolate.
const isolated = rows.find((r) => r.limiterInIsolate && r.cpu);
const cpu = [
  ...(cost?.cpu ?? []),
  ...(isolated
    ? [{
        key: 'lookupWarmIsolated',
        label: 'warm lookup, limiter in isolate (estimate)',
        msPerUnit: isolated.cpu.msPerUnit,
        sampledMsPerUnit: isolated.cpu.sampledMsPerUnit,
        onCpu: isolated.cpu.onCpu,
        workerdMsPerUnit: isolated.cpu.workerdMsPerUnit,
        top: isolated.cpu.top,
        goalMs: 0.5,
        met: isolated.cpu.msPerUnit <= 0.5,
      }]
    : []),
];

const results = {
  generatedAt: new Date().toISOString(),
  command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  machine: { ...machineInfo(root, settings.tool), loadAverage1mAtStart: loadAtStart, foreignWorkerdAtStart: foreignWorkerd },
  settings: { ...settings, groups: [...settings.groups], devVars: process.env.BENCH_DEV_VARS ?? null },
  rows,
  ...(cost ? { cost: { rows: cost.rows, targets: cost.targets }, costRuns: cost.runs } : {}),
  ...(cpu.length > 0 ? { cpu } : {}),
  ...(largest ? { largest: { ...largest, phases: largest.phases.map((p) => ({ ...p, detail: undefined })) } } : {}),
  ...(bigday ? { bigday } : {}),
  ...(shardrate ? { shardrate } : {}),
  ...(runtimeEvents.length > 0 ? { runtimeEvents } : {}),
};
printTable(results);
if (cost) printCost(cost.rows, cost.targets);
printCpu(results, { detail: settings.profile });
const written = writeResults(root, results, settings.full);
if (settings.full && updatePerformanceDoc(root, results)) written.push('docs/performance.md');
if (settings.full && cost && updateCostDoc(root, results)) written.push('docs/cost.md');
log(`results written to ${written.join(', ')}`);
// Exit explicitly: an inspector socket or keep-alive connection must not hold the process open.
process.exit(failed ? 1 : 0);
