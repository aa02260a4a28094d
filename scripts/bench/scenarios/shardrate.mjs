// One ledger shard's sustained request rate (`npm run bench -- --only shardrate`): API sales claimed
// and completed in ONE API day shard through the shard's own RPC, one sale per claim and one per
// answer as POST /api/transaction makes them, from the bench-only entry
// scripts/bench/shardrate-entry.mjs, at a few concurrencies for --shardrate-seconds each (default 20).
// Reported: sales a second the shard sustained, and workerd's CPU per sale (caller and shard
// together, so an upper bound of the shard's own: its one thread can do at most 1,000 / that a
// second). docs/capacity.md quotes the run; bench/runs/ keeps it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { callJson } from '../http.mjs';
import { cpuMsOf } from '../rss.mjs';
import { startServer } from '../server.mjs';

const DAY = 86_400_000;
const STEP_SALES = 200;
const round = (n) => Math.round(n * 100) / 100;

async function post(ctx, path, payload) {
  const answer = await callJson(ctx, 'POST', path, payload, { auth: ctx.adminToken });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

export async function runShardRate(ctx) {
  const { root, log, settings } = ctx;
  const seconds = settings.shardrateSeconds ?? 20;
  const loadAtStart = round(loadavg()[0]);
  log('shardrate: starting a server with the bench-only shardrate entry...');
  const server = await startServer({
    root,
    logDir: `${root}bench/results`,
    log,
    entry: `${root}scripts/bench/shardrate-entry.mjs`,
    ...(settings.port ? { port: settings.port + 1, inspectorPort: settings.inspectorPort + 1 } : {}),
  });
  const sctx = { ...ctx, url: server.url, adminToken: server.adminToken };
  const runs = [];
  try {
    const merchant = await callJson(sctx, 'POST', '/admin/merchants', { name: 'Shard Rate Merchant' }, { auth: server.adminToken });
    if (merchant.status !== 201) throw new Error(`admin: ${merchant.status} ${JSON.stringify(merchant.body)}`);
    const { id: merchantId, secret_key: key } = merchant.body.data;
    const template = await callJson(sctx, 'POST', '/api/transaction', { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000, billing_first_name: 'Ana', billing_last_name: 'Bench', billing_postal_code: '73301', billing_country: 'US', order_id: 'RATE1' }, { auth: key });
    if (template.status !== 201) throw new Error(`template transaction: ${template.status} ${JSON.stringify(template.body)}`);
    const templateDay = new Date().toISOString().slice(0, 10);
    let next = 0;
    // [HTTP calls in flight, sales in flight per call]: 8, 32 and 64 sales at once on the one shard.
    for (const [parallel, concurrency] of [[1, 8], [2, 16], [4, 16]]) {
      // A day of its own a month ahead per run (its alarms stay away; each run starts from an empty shard).
      const day = new Date(Date.now() + (30 + runs.length) * DAY).toISOString().slice(0, 10);
      const cpuBefore = cpuMsOf(server.workerdPids());
      const started = performance.now();
      let done = 0;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (performance.now() - started < seconds * 1000) {
            const from = next;
            next += STEP_SALES;
            const answer = await post(sctx, '/__bench/shardrate/step', { merchantId, templateId: template.body.data.id, templateDay, day, from, count: STEP_SALES, concurrency });
            done += answer.done;
          }
        }),
      );
      const wallS = (performance.now() - started) / 1000;
      const cpuMs = cpuMsOf(server.workerdPids()) - cpuBefore;
      const run = { inFlight: parallel * concurrency, sales: done, seconds: round(wallS), salesPerSecond: round(done / wallS), shardCallsPerSecond: round((2 * done) / wallS), workerdCpuMsPerSale: round(cpuMs / done), shard: `${merchantId}/api/${day}` };
      runs.push(run);
      log(`shardrate: ${run.inFlight} in flight: ${run.sales} sales in ${run.seconds} s = ${run.salesPerSecond}/s (${run.shardCallsPerSecond} shard calls/s), workerd CPU ${run.workerdCpuMsPerSale} ms a sale`);
    }
  } finally {
    await server.stop();
  }
  const commit = execSync('git rev-parse --short HEAD', { cwd: root }).toString().trim();
  const best = runs.reduce((a, b) => (b.salesPerSecond > a.salesPerSecond ? b : a));
  const result = {
    generatedAt: new Date().toISOString(),
    commit,
    loadAverage1mAtStart: loadAtStart,
    loadAverage1mAtEnd: round(loadavg()[0]),
    note: 'one API day shard, one sale per claim and one per complete (as POST /api/transaction); the driver runs in the same workerd on the same cores, so the rates are lower bounds of what the shard alone sustains',
    runs,
    sustainedSalesPerSecond: best.salesPerSecond,
    cpuBoundSalesPerSecond: round(1000 / Math.min(...runs.map((r) => r.workerdCpuMsPerSale))),
  };
  const file = join(root, 'bench', 'runs', `${result.generatedAt.slice(0, 16).replace(':', '-')}-shardrate-${commit}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  log(`shardrate: sustained ${result.sustainedSalesPerSecond} sales/s; CPU bound ${result.cpuBoundSalesPerSecond}/s; written to ${file}`);
  return result;
}
