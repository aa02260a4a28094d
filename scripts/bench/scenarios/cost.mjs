// The cost and CPU runs: a second fresh server whose entry is the I/O probe
// (scripts/bench/io-probe-entry.mjs: the same service, every billed unit counted) runs each unit
// of work of the cost table under the CPU profiler: warm lookups, cold lookups, single
// transactions and a 100,000-row batch file (10,000 with --quick). Each run's counts are read
// from the probe (GET /__bench/io) and its CPU from its profile; scripts/bench/cost.mjs turns them
// into $ per million. Nothing here is timed for the main table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { costTable, costTargets, ioDifference } from '../cost.mjs';
import { callJson, mapLimit } from '../http.mjs';
import { cardNumber, random, shuffled } from '../dataset.mjs';
import { measure } from '../load.mjs';
import { profileWork } from '../profile.mjs';
import { cpuMsOf, RssSampler, schedstatOf } from '../rss.mjs';
import { startServer } from '../server.mjs';
import { DEMO } from '../../local-state.mjs';
import { runBatchFile } from './batch.mjs';
import { importScenarios } from './import.mjs';

const LOOKUP = '/api/lookup/bin/protected';
/** The distinct email addresses of a generated batch file (scripts/bench/scenarios/batch.mjs: `buyer${i % 997}`). */
const RECEIPT_ADDRESSES = 997;
/** How long a ledger archive is kept in R2: 7 years, by the bucket's lifecycle rule (README, "Deploy"). */
const ARCHIVE_DAYS = 7 * 365;
const REGIONS = [['US', 'TX'], ['US', 'CA'], ['US', 'CT'], ['CA', 'ON'], ['CA', 'QC'], ['GB', 'LND'], ['DE', 'BY'], ['US', 'CO']];
/** Stages that are not the Worker's CPU: waiting on I/O, and the probe's own wrappers. */
const NOT_WORKER_CPU = [/^idle/, /^bench I\/O probe/];

/** A [vars] value of wrangler.toml (the retention period, for the R2 storage held). */
function wranglerVar(root, name) {
  const match = new RegExp(`^${name}\\s*=\\s*"?([^"\\n]+)"?`, 'm').exec(readFileSync(join(root, 'wrangler.toml'), 'utf8'));
  return match ? match[1].trim() : null;
}

/**
 * Worker CPU per unit from a profile: every sampled stage but idle and the probe, divided by the
 * units of work; the three largest stages with their share. The profiler samples wall time: while
 * the isolate's thread is runnable but waits for a core (other processes on a shared machine), the
 * samples keep counting. `onCpu` (the share of runnable time workerd's threads actually ran, from
 * /proc schedstat over the same run) takes that waiting out; 1 on an idle machine.
 */
export function cpuPerUnit(profile, units, onCpu = 1) {
  const stages = profile.categories.filter((c) => !NOT_WORKER_CPU.some((re) => re.test(c.category)));
  const busy = stages.reduce((sum, c) => sum + c.ms, 0);
  return {
    msPerUnit: (busy * onCpu) / units,
    sampledMsPerUnit: busy / units,
    onCpu,
    top: stages.slice(0, 3).map((c) => ({ category: c.category, msPerUnit: (c.ms * onCpu) / units, share: c.ms / busy })),
  };
}

/**
 * Runs `work` under the profiler: its result, the profile, and the Worker's CPU per unit of work
 * (`unitsOf(result)` units), with workerd's whole CPU time per unit beside it.
 */
export async function profiledCpu(pctx, name, work, unitsOf) {
  const pids = () => pctx.server.workerdPids();
  const cpuBefore = cpuMsOf(pids());
  const schedBefore = schedstatOf(pids());
  const profile = await profileWork(pctx, name, work);
  const cpuAfter = cpuMsOf(pids());
  const schedAfter = schedstatOf(pids());
  const ran = schedAfter && schedBefore ? schedAfter.runNs - schedBefore.runNs : 0;
  const waited = schedAfter && schedBefore ? schedAfter.waitNs - schedBefore.waitNs : 0;
  const onCpu = ran + waited > 0 ? ran / (ran + waited) : 1;
  const units = unitsOf(profile.work);
  return {
    units,
    profile,
    cpu: cpuPerUnit(profile, units, onCpu),
    // All of workerd (isolate, simulators, proxy): an upper bound of the Worker's own CPU.
    workerdCpuMsPerUnit: cpuBefore !== null && cpuAfter !== null ? (cpuAfter - cpuBefore) / units : null,
  };
}

/** `profiledCpu` on the probe's server, its totals reset first; adds the probe's counts (`io`). */
async function metered(pctx, name, work, unitsOf) {
  await fetch(`${pctx.url}/__bench/io/reset`, { method: 'POST' }).then((r) => r.body?.cancel());
  let io;
  const run = await profiledCpu(pctx, name, async () => {
    const result = await work();
    io = await (await fetch(`${pctx.url}/__bench/io`)).json();
    return result;
  }, (result) => unitsOf(io, result));
  return { ...run, io };
}

const invocationCount = (route) => (io) => io.invocations[`fetch ${route}`] ?? 0;

/** A POST /api/transaction body: a card sale with the fields a checkout sends. */
function transactionBody(bin, next, i) {
  const number = cardNumber(bin, next);
  const amex = /^3[47]/.test(number);
  return {
    transaction_type: 'sale',
    cc_number: number,
    cc_expiration: '12/30',
    cc_cvc: amex ? '1234' : '123',
    amount: 100 + Math.floor(next() * 99_900),
    order_id: `COST${String(i).padStart(8, '0')}`,
    billing_postal_code: '73301',
    billing_country: 'US',
    billing_state: 'TX',
  };
}

/**
 * The cost runs. Answers { runs, rows, targets, cpu, load } (rows: the cost table, cpu: per warm
 * lookup and per batch row with their top three stages).
 */
export async function runCost(ctx) {
  const { settings, root, log } = ctx;
  log('cost: starting a server with the I/O probe entry...');
  // Receipts go out unpaced here (RECEIPT_SENDS_PER_MINUTE raised): the receipts row waits for every one.
  const server = await startServer({ root, logDir: `${root}bench/results`, log, entry: `${root}scripts/bench/io-probe-entry.mjs`, devVars: ['RECEIPT_SENDS_PER_MINUTE=100000000'] });
  const pctx = { ...ctx, url: server.url, adminToken: server.adminToken, server, data: {}, rss: new RssSampler(() => server.workerdPids()).start() };
  const runs = {};
  const seconds = settings.quick ? 3 : 5;
  const retentionDays = Number(wranglerVar(root, 'BATCH_RETENTION_DAYS') ?? 10);
  const load = (bodies, path = LOOKUP) =>
    measure({ tool: settings.tool, url: `${server.url}${path}`, method: 'POST', auth: DEMO.secretKey, bodies, connections: settings.connections, durationS: seconds, warmupS: 0 });
  try {
    await importScenarios[0].run(pctx);
    const pool = shuffled(pctx.data.bins.filter((b) => b.country).map((b) => b.bin), random(23));
    const withRegion = (bin, i) => ({ bin, country: REGIONS[i % 8][0], state: REGIONS[i % 8][1] });

    log(`cost: warm lookups (${seconds} s)...`);
    const warm = pool.slice(0, 1_000).map(withRegion);
    await mapLimit(warm, 8, (body) => callJson(pctx, 'POST', LOOKUP, body));
    runs.lookupWarm = await metered(pctx, 'lookup-warm', () => load(warm), invocationCount(`POST ${LOOKUP}`));
    runs.lookupWarm.measuredWith = `${settings.tool}, ${settings.connections} connections, ${seconds} s, 1,000 cached BINs`;

    log(`cost: cold lookups (${seconds} s)...`);
    const cold = pool.slice(1_000).map(withRegion);
    runs.lookupCold = await metered(pctx, 'lookup-cold', () => load(cold), invocationCount(`POST ${LOOKUP}`));
    runs.lookupCold.measuredWith = `${settings.tool}, ${settings.connections} connections, ${seconds} s, each BIN asked once`;

    log(`cost: single transactions (${seconds} s)...`);
    const next = random(29);
    // 16-digit Visa and Mastercard numbers: every body is a valid sale, so each request records one.
    const cards = pool.filter((bin) => /^(4|5[1-5])/.test(bin)).slice(0, 5_000);
    const bodies = cards.map((bin, i) => transactionBody(bin, next, i));
    // The merchant's first transaction creates its sandbox processor: once, not per transaction.
    await callJson(pctx, 'POST', '/api/transaction', transactionBody(cards[0], random(31), 0));
    // Units: the transactions recorded (answered 201); a refused request would be billed but is not one.
    runs.transaction = await metered(pctx, 'transaction', () => load(bodies, '/api/transaction'), (io, result) => invocationCount('POST /api/transaction')(io) - (result.non2xx ?? 0));
    runs.transaction.measuredWith = `${settings.tool}, ${settings.connections} connections, ${seconds} s, card sales, no Idempotency-Key${runs.transaction.profile.work.non2xx ? `; ${runs.transaction.profile.work.non2xx} requests refused` : ''}`;

    const rows = settings.quick ? 10_000 : 100_000;
    log(`cost: a ${rows.toLocaleString('en-US')}-row batch file...`);
    await runBatchFile(pctx, 1_000, { pollMs: 1_000 }); // creates the vault customers; not counted
    // The batch and its retention work (the shard archived and emptied, the sandbox's memory
    // forgotten), done at once so the same count holds every row a batch row writes over its life.
    const batch = await metered(pctx, `batch-${rows / 1000}k`, async () => {
      const figures = await runBatchFile(pctx, rows, { pollMs: 1_000 });
      const retention = await fetch(`${pctx.url}/__bench/retention`, { method: 'POST', body: JSON.stringify({ batchId: figures[0]?.batchId }) });
      if (!retention.ok) throw new Error(`retention of the batch's shard: HTTP ${retention.status} ${await retention.text()}`);
      const answer = await retention.json();
      if (!answer.archived?.archived) throw new Error(`the batch's shard was not archived: ${JSON.stringify(answer)}`);
      log(`cost: retention archived ${answer.archived.lines} records to ${answer.archived.key}`);
      return figures;
    }, () => rows);
    const completed = batch.profile.work.find((r) => r.scenario.endsWith('upload → completed'));
    runs.batch = {
      ...batch,
      heldSeconds: { uploads: completed?.seconds ?? 0 },
      measuredWith: `one ${rows.toLocaleString('en-US')}-row file, status polled once a second, then its retention (shard archived to R2 and emptied, sandbox memory forgotten)${rows < 100_000 ? ' (--quick: per-file costs spread over fewer rows)' : ''}`,
    };

    // Issue 32: what email receipts add, per receipt. The same file twice, each with its retention:
    // without email_receipt, then with it on every row, measured until every receipt is sent.
    const receiptRows = settings.quick ? 2_000 : 20_000;
    log(`cost: receipts (a ${receiptRows.toLocaleString('en-US')}-row file without, then with email_receipt)...`);
    const withRetention = async (receipts) => {
      const figures = await runBatchFile(pctx, receiptRows, { pollMs: 1_000, receipts, label: `receipts ${receipts ? 'on' : 'off'}`, allowDuplicate: true });
      const batchId = figures[0]?.batchId;
      const deadline = Date.now() + 15 * 60_000;
      while (receipts) {
        const counts = await (await fetch(`${pctx.url}/__bench/receipts`, { method: 'POST', body: JSON.stringify({ batchId }) })).json();
        if (counts.queued === 0) {
          // A receipt refused by a budget (a recipient past its count) is not sent: the per-receipt figure would then count less work than a real file's.
          if (counts.failed > 0) throw new Error(`receipts of ${batchId}: ${counts.failed} failed (a budget refused them): ${JSON.stringify(counts)}`);
          break;
        }
        if (Date.now() > deadline) throw new Error(`receipts of ${batchId} still queued: ${JSON.stringify(counts)}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
      const retention = await fetch(`${pctx.url}/__bench/retention`, { method: 'POST', body: JSON.stringify({ batchId }) });
      if (!retention.ok) throw new Error(`retention of the batch's shard: HTTP ${retention.status} ${await retention.text()}`);
      await retention.arrayBuffer();
      return figures;
    };
    // The merchant's own receipt budgets (docs/receipts.md, "Budgets") would pace this step: the
    // demo merchant is seeded at 600 a minute (the default is a quarter of RECEIPT_SENDS_PER_MINUTE,
    // 150 at the shipped 600), and the generated file writes to 997 addresses (about 20 receipts each
    // at 20,000 rows, past the default 10 per recipient a day). At 600 a minute the 19,000 receipts
    // would take half an hour, past the step's 15-minute wait: the run stalled there. The product's
    // limits stay; the bench merchant is given budgets that fit the step through the same admin API
    // an operator uses for a big merchant (PATCH /admin/merchants/{id} receipt_limits). This keeps
    // every receipt's real work in the count (the budget object's admission and give-back per run,
    // the outbox, the render, the send), which a step sized to 150 a minute would not: 15 minutes
    // of sends is about 2,000 receipts, and the batch's fixed costs spread over them would be
    // charged to the receipts. The daily budget is sized to the step (twice over), not the maximum:
    // it fixes the width of the budget object's recipient sketch, which is part of what is counted.
    const perAddress = Math.ceil(receiptRows / RECEIPT_ADDRESSES);
    const budgets = { daily: receiptRows * 2, per_minute: Math.min(100_000, receiptRows * 2), per_recipient: Math.min(1_000, perAddress * 2) };
    const limits = await callJson(pctx, 'PATCH', `/admin/merchants/${DEMO.merchantId}`, { receipt_limits: budgets }, { auth: pctx.adminToken });
    if (limits.status !== 200) throw new Error(`receipt budgets of the bench merchant: HTTP ${limits.status} ${JSON.stringify(limits.body)}`);
    log(`cost: the bench merchant's receipt budgets set through the admin API: ${JSON.stringify(limits.body.data.receipt_limits)}`);
    // The pair is measured again (two new files) if the profiler loses a profile (see profile.mjs).
    let off;
    let on;
    for (let attempt = 1; ; attempt++) {
      try {
        off = await metered(pctx, 'receipts-off', () => withRetention(false), () => receiptRows);
        on = await metered(pctx, 'receipts-on', () => withRetention(true), (io) => io.email?.messages ?? 0);
        break;
      } catch (error) {
        if (attempt >= 2 || !/^profiler:/.test(error.message)) throw error;
        log(`cost: receipts measured again: ${error.message}`);
      }
    }
    const messages = on.io.email?.messages ?? 0;
    if (messages > 0) {
      // CPU: what the run with receipts took beyond the one without, per receipt.
      const extra = (a, b) => Math.max(0, a * on.units - b * off.units) / messages;
      runs.receipts = {
        units: messages,
        io: ioDifference(on.io, off.io),
        cpu: { msPerUnit: extra(on.cpu.msPerUnit, off.cpu.msPerUnit), sampledMsPerUnit: extra(on.cpu.sampledMsPerUnit, off.cpu.sampledMsPerUnit), onCpu: on.cpu.onCpu, top: [] },
        workerdCpuMsPerUnit: on.workerdCpuMsPerUnit !== null && off.workerdCpuMsPerUnit !== null ? extra(on.workerdCpuMsPerUnit, off.workerdCpuMsPerUnit) : null,
        heldSeconds: { uploads: 0 },
        profile: on.profile,
        measuredWith: `a ${receiptRows.toLocaleString('en-US')}-row file with email_receipt on every row (${messages.toLocaleString('en-US')} receipts, one per approved row) until every receipt was sent, then its retention, less the same file without it; sent unpaced (RECEIPT_SENDS_PER_MINUTE raised; the merchant's receipt_limits set through the admin API to ${JSON.stringify(budgets)})`,
      };
    }
  } catch (error) {
    log(`cost run failed: ${error.message}`);
    runs.error = error.message;
  } finally {
    pctx.rss.stop();
    await server.stop();
  }
  const ledgerRetentionDays = Number(wranglerVar(root, 'TRANSACTION_RETENTION_DAYS') ?? 548);
  for (const run of Object.values(runs)) {
    if (typeof run !== 'object') continue;
    run.retentionDays = retentionDays;
    run.ledgerRetentionDays = ledgerRetentionDays;
    run.archiveDays = ARCHIVE_DAYS;
    run.cpuMsPerUnit = run.cpu.msPerUnit;
  }
  const table = costTable(runs);
  return {
    rows: table,
    targets: costTargets(table),
    cpu: cpuSummary(runs),
    runs: Object.fromEntries(
      Object.entries(runs).map(([key, run]) => [
        key,
        typeof run === 'object'
          ? { units: run.units, measuredWith: run.measuredWith, io: run.io, cpu: run.cpu, workerdCpuMsPerUnit: run.workerdCpuMsPerUnit, heldSeconds: run.heldSeconds, profile: { ...run.profile, work: undefined } }
          : run,
      ]),
    ),
  };
}

/** CPU per warm lookup and per batch row (and the two other rows), with the issue's goals. */
function cpuSummary(runs) {
  const goals = { lookupWarm: 0.5, batch: 0.2 };
  const labels = { lookupWarm: 'warm lookup', lookupCold: 'cold lookup', transaction: 'single transaction', batch: 'batch row', receipts: 'email receipt (beyond its batch row)' };
  return Object.entries(labels)
    .filter(([key]) => runs[key]?.cpu)
    .map(([key, label]) => ({
      key,
      label,
      msPerUnit: runs[key].cpu.msPerUnit,
      sampledMsPerUnit: runs[key].cpu.sampledMsPerUnit,
      onCpu: runs[key].cpu.onCpu,
      workerdMsPerUnit: runs[key].workerdCpuMsPerUnit,
      top: runs[key].cpu.top,
      goalMs: goals[key] ?? null,
      met: goals[key] ? runs[key].cpu.msPerUnit <= goals[key] : null,
    }));
}
