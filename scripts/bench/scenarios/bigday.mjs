// One big merchant's day through the real paths (`npm run bench -- --only bigday`): the merchant on
// rate tier `max` (set through the admin API, as an operator would), files of at most 500,000 rows
// uploaded at once (every tenth row of the first asking for an email receipt), API sales and
// authorizations sent many at a time with captures and voids, searches and an export while it runs,
// then the day's settlement, refunds of settled sales, and the archive of every ledger shard it made.
// Nothing is seeded: every transaction goes through the HTTP API or the file pipeline.
//
// It prints and stores (bench/runs/):
//   - the most CPU and heap of any metered invocation against the goals (15 s, 64 MB; the heap
//     judged on a step's own, its rise over the isolate's level after a full GC before it): each
//     settlement and retention step alone, the first file's upload alone, and, once the day is in
//     storage, one API sale, capture, void and refund, a one-chunk file, a search and an export
//     start each alone (their step's isolate CPU and peak heap bound every invocation in it); and
//     the isolate's peak heap over the whole day (every invocation at once: an upper bound of any one);
//   - every Durable Object the day made, found by listing the local state's SQLite files by class,
//     the largest per class with its size and its projection to 10 million transactions a day;
//   - the chunk retries and failed batches (goal 0);
//   - the rows written per API transaction over its life (created, captured or voided, indexed,
//     settled, refunded, archived), per class and in D1, measured on a second `max` merchant that
//     runs the same API mix alone after the big day (its objects' SQL cursors' rowsWritten, counted
//     by scripts/bench/bigday-entry.mjs), and the big merchant's API ledger rows per API transaction.
//
// The scale is a parameter: --bigday-scale N transactions in all (default 1,000,000); the API takes
// --bigday-api of them (default 5%), files the rest (--bigday-files of them at once, default 4, more
// when 500,000 rows each would not hold them); --bigday-concurrency API requests at once (default 50).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { callJson } from '../http.mjs';
import { startServer } from '../server.mjs';
import { DEMO } from '../../local-state.mjs';
import { ensureCustomers, fileBins, generateBatchCsv } from './batch.mjs';
import { StepMeter, phase, post } from './largest.mjs';
import { rowsWrittenBetween, rowsWrittenNow, sizeObjects } from '../bigday-objects.mjs';

const DAY = 86_400_000;
const DESIGN_PER_DAY = 10_000_000;
const FILE_MAX_ROWS = 500_000;
const GOALS = { cpuMs: 15_000, heapMb: 64 };
const round = (n) => Math.round(n * 10) / 10;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function upload(ctx, rows, { receipts, seed, bins, customers, auth = DEMO.secretKey }) {
  const { text } = generateBatchCsv(rows, { bins, customers, seed, receipts });
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/csv' }), `bigday-${seed}.csv`);
  const response = await fetch(`${ctx.url}/api/filebatch?allow_duplicate=true`, { method: 'POST', headers: { authorization: auth }, body: form, signal: AbortSignal.timeout(900_000) });
  const body = await response.json().catch(() => null);
  if (body?.status !== 'success') throw new Error(`upload of ${rows} rows: HTTP ${response.status} ${JSON.stringify(body)}`);
  return body.data.id;
}

/** One API call, waiting out 429s; answers the final status and body. */
async function api(ctx, method, path, payload, counts, auth = DEMO.secretKey) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    let answer;
    try {
      answer = await callJson(ctx, method, path, payload, { auth });
    } catch (error) {
      counts.networkErrors += 1;
      if (attempt >= 5) throw error;
      await sleep(1_000);
      continue;
    }
    if (answer.status !== 429) {
      if (answer.status >= 500) {
        counts.fiveXx += 1;
        counts.firstFiveXx ??= `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
      }
      return answer;
    }
    counts.limited += 1;
    await sleep(5_000);
  }
  throw new Error(`${path}: rate limited 100 times`);
}

const newCounts = () => ({ api: 0, sales: 0, authorizations: 0, captures: 0, voids: 0, refunds: 0, limited: 0, fiveXx: 0, networkErrors: 0, toRefund: [], searches: 0, searchFailures: 0 });

/**
 * `count` API transactions, `concurrency` at a time: 60% sales, 40% authorizations; of the
 * authorizations three in four captured, one in four voided; one sale in six voided, one in six
 * kept to be refunded once settled.
 */
async function apiDay(ctx, count, counts, { concurrency, auth, log, label }) {
  let next = 0;
  const started = performance.now();
  const every = Math.max(100, Math.ceil(count / 20));
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const kind = i % 10;
      const type = kind < 6 ? 'sale' : 'authorize';
      const made = await api(ctx, 'POST', '/api/transaction', { transaction_type: type, cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000 + (i % 5000), order_id: `BD${i}` }, counts, auth);
      if ((i + 1) % every === 0) log(`bigday: ${label} ${(i + 1).toLocaleString('en-US')} of ${count.toLocaleString('en-US')} sent (${Math.round((i + 1) / ((performance.now() - started) / 1000))} a second)`);
      if (made.status !== 201) {
        counts.firstError ??= `${made.status} ${JSON.stringify(made.body).slice(0, 200)}`;
        continue;
      }
      counts.api += 1;
      counts[type === 'sale' ? 'sales' : 'authorizations'] += 1;
      const id = made.body.data.id;
      if (type === 'authorize' && kind < 9) {
        if ((await api(ctx, 'POST', `/api/transaction/${id}/capture`, {}, counts, auth)).status === 200) counts.captures += 1;
      } else if (type === 'authorize') {
        if ((await api(ctx, 'POST', `/api/transaction/${id}/void`, {}, counts, auth)).status === 200) counts.voids += 1;
      } else if (kind === 5) {
        // A sale voided before settlement (a refund needs it settled: done after the settlement).
        if ((await api(ctx, 'POST', `/api/transaction/${id}/void`, {}, counts, auth)).status === 200) counts.voids += 1;
      } else if (kind === 0) counts.toRefund.push(id);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return Math.round(count / ((performance.now() - started) / 1000));
}

async function refundAll(ctx, ids, counts, auth, concurrency) {
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      if ((await api(ctx, 'POST', `/api/transaction/${id}/refund`, { amount: 100 }, counts, auth)).status === 201) counts.refunds += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Waits for each file to end; one without progress for 15 minutes is recorded as stalled (a failure). */
async function waitForBatches(ctx, ids, log) {
  const batches = [];
  for (const id of ids) {
    let lastLog = 0;
    let progress = { lines: -1, at: Date.now() };
    for (;;) {
      const record = (await callJson(ctx, 'GET', `/api/filebatch/${id}`, undefined, { auth: DEMO.secretKey })).body;
      if (record?.status === 'completed' || record?.status === 'failed') {
        batches.push({ id, status: record.status, lines: record.num_lines, processed: record.processed_lines });
        break;
      }
      if (record?.processed_lines !== progress.lines) progress = { lines: record?.processed_lines, at: Date.now() };
      if (Date.now() - progress.at > 15 * 60_000) {
        batches.push({ id, status: `stalled (${record?.status})`, lines: record?.num_lines, processed: record?.processed_lines });
        break;
      }
      if (Date.now() - lastLog > 60_000) {
        lastLog = Date.now();
        log(`bigday: file ${id}: ${record?.status}, ${record?.processed_lines ?? '?'} of ${record?.num_lines ?? '?'} lines`);
      }
      await sleep(2_000);
    }
  }
  return batches;
}

/** Waits until `merchant`'s objects stop writing (the index's queue and alarms drained), at most `maxMs`. */
async function quiet(ctx, merchantId, maxMs = 120_000) {
  const sum = (snap) => snap.objects.filter((o) => o.name.includes(merchantId)).reduce((n, o) => n + o.rowsWritten, 0);
  let last = sum(await rowsWrittenNow(ctx));
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    await sleep(3_000);
    const now = sum(await rowsWrittenNow(ctx));
    if (now === last) return;
    last = now;
  }
}

/** The archive of every ledger shard of `merchantId` (sub-shards included), each step metered. */
async function archiveAll(ctx, meter, merchantId, shards, archiveAt, phases, label) {
  for (const shard of shards) {
    phases.push(await phase(ctx, meter, `${label}: archive ${shard.split('/').slice(1).join('/')}`, () => post(ctx, '/__bench/largest/retention-step', { shard, now: archiveAt }), (a) => !a.more));
  }
}

/** Every LedgerShard object name of `merchantId` the state holds (the day's, its sub-shards', its files'). */
function shardsOf(objects, merchantId) {
  const ledger = objects.find((c) => c.class === 'LedgerShard');
  return (ledger?.largest ?? []).map((o) => o.name).filter((n) => typeof n === 'string' && n.startsWith(`${merchantId}/`));
}

/** Each object's size with its projection to 10 million transactions a day (same mix). */
function projected(classes, { transactions, apiCount, fileRows }) {
  return classes.map((c) => ({
    ...c,
    largest: c.largest.map((o) => {
      const name = o.name ?? '';
      // A file's own objects (its ledger shard, its progress) hold one file: bounded by the largest
      // file (500,000 rows), not by the day. An API ledger shard holds API transactions only.
      const perFile = name.includes('/batch/') || /\bbat_[a-z0-9]+/.test(name);
      const per = perFile ? { unit: `a ${FILE_MAX_ROWS.toLocaleString('en-US')}-row file`, factor: FILE_MAX_ROWS / fileRows } : name.includes('/api/') ? { unit: '10M API transactions a day', factor: DESIGN_PER_DAY / Math.max(1, apiCount) } : { unit: '10M transactions a day', factor: DESIGN_PER_DAY / Math.max(1, transactions) };
      return { ...o, projectedGb: Math.round((o.bytes * per.factor) / 1e7) / 100, projectedAt: per.unit };
    }),
  }));
}

export async function runBigday(ctx) {
  const { root, log, settings } = ctx;
  const scale = settings.bigdayScale ?? 1_000_000;
  // API transactions are one request each (and half of them a capture or void too) through the one
  // local isolate, about 60 times a file row's CPU: 5% of the day keeps a 1,000,000 run under an hour
  // on 2 cores (--bigday-api N for another share).
  const apiWanted = settings.bigdayApi ?? Math.round(scale * 0.05);
  const fileTotal = Math.max(0, scale - apiWanted);
  const files = Math.max(settings.bigdayFiles ?? 4, Math.ceil(fileTotal / FILE_MAX_ROWS));
  const fileRows = Math.max(1, Math.floor(fileTotal / files));
  const apiCount = Math.max(1, scale - fileRows * files);
  const concurrency = settings.bigdayConcurrency ?? 50;
  const probeCount = Math.min(2_000, Math.max(200, Math.round(apiCount / 50)));
  const loadAtStart = round(loadavg()[0]);
  const server = await startServer({
    root,
    logDir: `${root}bench/results`,
    log,
    entry: `${root}scripts/bench/bigday-entry.mjs`,
    ...(settings.port ? { port: settings.port + 1, inspectorPort: settings.inspectorPort + 1 } : {}),
  });
  const pctx = { ...ctx, url: server.url, adminToken: server.adminToken, server, data: {} };
  const meter = await StepMeter.open(server.inspectorPort, () => server.workerdPids());
  const counts = newCounts();
  const phases = [];
  const facts = { scale, files, fileRows, apiCount, concurrency, probeCount };
  // Every warning and error the service logs, by event (a chunk retried, an index backing off, a
  // receipt retried), read from the isolate's console through the inspector.
  const loggedEvents = {};
  await meter.onConsole(({ type, args }) => {
    let line = {};
    try {
      line = JSON.parse(args?.[0]?.value ?? '');
    } catch {
      // Not one of the service's JSON lines: its console method is its level.
    }
    const level = line.level ?? (type === 'warning' ? 'warn' : type);
    if (level !== 'warn' && level !== 'error') return;
    const key = `${level} ${line.event ?? 'unstructured'}`;
    loggedEvents[key] = (loggedEvents[key] ?? 0) + 1;
  });
  const started = performance.now();
  let dayHeap = null;
  try {
    // The merchant on the `max` rate tier (its API rate, and as many ledger sub-shards as the tier gets).
    const tier = await callJson(pctx, 'PATCH', `/admin/merchants/${DEMO.merchantId}`, { rate_tier: 'max' }, { auth: server.adminToken });
    if (tier.status !== 200) throw new Error(`rate tier: ${tier.status} ${JSON.stringify(tier.body)}`);
    facts.rateTier = tier.body.data.rate_tier;
    log(`bigday: ${files} files of ${fileRows.toLocaleString('en-US')} rows at once (every tenth row of the first with a receipt), ${apiCount.toLocaleString('en-US')} API transactions ${concurrency} at a time; merchant on tier ${facts.rateTier}`);
    const bins = fileBins(pctx);
    const customers = await ensureCustomers(pctx, bins);
    // The first file's upload metered alone (the upload invocation parses and stores the whole file).
    let firstId;
    phases.push(await phase(pctx, meter, `upload of a ${fileRows.toLocaleString('en-US')}-row file`, async () => (firstId = await upload(pctx, fileRows, { receipts: 10, seed: 1000, bins, customers })), () => true));
    const heap = meter.sampleHeap();
    const rest = Promise.all(Array.from({ length: files - 1 }, (_, i) => upload(pctx, fileRows, { receipts: false, seed: 1001 + i, bins, customers })));
    let running = true;
    // Searches and an export while the day runs.
    const reads = (async () => {
      const bodies = [{}, { status: { operator: '=', value: 'pending_settlement' } }, { order_id: { operator: '=', value: 'BD7' } }, { batch_id: { operator: '=', value: firstId } }];
      for (let i = 0; running; i += 1) {
        const answer = await api(pctx, 'POST', '/api/transaction/search', { limit: 100, ...bodies[i % bodies.length] }, counts);
        counts.searches += 1;
        if (answer.status !== 200) {
          counts.searchFailures += 1;
          counts.firstSearchFailure ??= `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
        }
        if (i === 2) facts.export = (await api(pctx, 'POST', '/api/transaction/export', {}, counts)).status;
        await sleep(2_000);
      }
    })();
    facts.apiPerSecond = await apiDay(pctx, apiCount, counts, { concurrency, log, label: 'API' });
    facts.apiSeconds = Math.round((performance.now() - started) / 1000);
    const ids = [firstId, ...(await rest)];
    const batches = await waitForBatches(pctx, ids, log);
    running = false;
    await reads;
    dayHeap = await heap.stop();
    facts.dayHeap = dayHeap;
    facts.batches = batches;
    facts.failedBatches = batches.filter((b) => b.status !== 'completed').length;
    facts.daySeconds = Math.round((performance.now() - started) / 1000);
    log(`bigday: the day ran in ${facts.daySeconds} s (API ${facts.apiSeconds} s, ${facts.apiPerSecond} a second); batches ${JSON.stringify(batches)}; isolate heap peak ${dayHeap.heapUsedMb} MB`);

    // One of each invocation alone, against the day's full storage.
    const one = newCounts();
    const single = async (name, work) => phases.push(await phase(pctx, meter, name, work, () => true));
    let saleId;
    let authId;
    await single('one API sale', async () => (saleId = (await api(pctx, 'POST', '/api/transaction', { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1234, order_id: 'BDONE1' }, one)).body?.data?.id));
    authId = (await api(pctx, 'POST', '/api/transaction', { transaction_type: 'authorize', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1234, order_id: 'BDONE2' }, one)).body?.data?.id;
    await single('one capture', () => api(pctx, 'POST', `/api/transaction/${authId}/capture`, {}, one));
    await single('one void', () => api(pctx, 'POST', `/api/transaction/${saleId}/void`, {}, one));
    await single('one search (first page, unfiltered)', () => api(pctx, 'POST', '/api/transaction/search', { limit: 100 }, one));
    await single('one one-chunk file (upload to completed)', async () => {
      const id = await upload(pctx, 500, { receipts: false, seed: 7, bins, customers });
      await waitForBatches(pctx, [id], log);
    });
    facts.singles = { fiveXx: one.fiveXx, firstFiveXx: one.firstFiveXx };

    // Settlement of the day, step by step; refunds of settled sales; every object's size; the archive.
    const now = new Date().toISOString();
    phases.push(await phase(pctx, meter, 'settle', () => post(pctx, '/__bench/largest/settle-step', { merchantId: DEMO.merchantId, now }), (a) => a.done));
    facts.settled = phases.at(-1).detail.at(-1).answer;
    await single('one refund', () => api(pctx, 'POST', `/api/transaction/${counts.toRefund[0]}/refund`, { amount: 100 }, one));
    await refundAll(pctx, counts.toRefund.slice(1), counts, DEMO.secretKey, concurrency);
    const transactions = counts.api + batches.reduce((n, b) => n + (b.processed ?? 0), 0);
    facts.transactions = transactions;
    const classes = await sizeObjects(pctx, { root, persistTo: server.persistTo, top: 40 });
    facts.objects = projected(classes, { transactions, apiCount: counts.api, fileRows });
    // The largest API ledger shard's rows per table: what its bytes are made of.
    const apiShard = classes.find((c) => c.class === 'LedgerShard')?.largest.find((o) => String(o.name).includes('/api/'));
    if (apiShard) facts.largestApiShard = { name: apiShard.name, ...(await post(pctx, '/__bench/largest/shard-info', { shard: apiShard.name })) };
    const archiveAt = new Date(Date.now() + 549 * DAY).toISOString();
    const shards = shardsOf(await sizeObjects(pctx, { root, persistTo: server.persistTo, top: 10_000, only: ['LedgerShard'] }), DEMO.merchantId);
    facts.shards = shards;
    await archiveAll(pctx, meter, DEMO.merchantId, shards, archiveAt, phases, 'big merchant');
    const afterBig = await rowsWrittenNow(pctx);
    // The big merchant's API ledger shards over their whole life, per API transaction.
    const apiLedger = rowsWrittenBetween({ objects: [], d1: { rowsWritten: 0 } }, afterBig, (n) => n.startsWith(`${DEMO.merchantId}/api/`));
    facts.bigMerchantApiLedgerRowsPerApiTransaction = Math.round(((apiLedger.perClass.LedgerShard ?? 0) / Math.max(1, counts.api)) * 100) / 100;

    // Rows written per API transaction over its life: a second `max` merchant runs the same mix alone.
    facts.rowsWrittenPerApiTransaction = await probeRowsWritten(pctx, { count: probeCount, concurrency: Math.min(concurrency, 25), log, archiveAt, meter, phases, root, persistTo: server.persistTo });

    // A chunk retried: it failed (chunk_failed), or its rows were still in flight (chunk_rows_in_flight).
    const logText = readFileSync(server.logFile, 'utf8');
    const inLog = (logText.match(/"event":"chunk_failed"/g) ?? []).length + (logText.match(/"event":"chunk_rows_in_flight"/g) ?? []).length;
    facts.loggedEvents = loggedEvents;
    facts.chunkRetries = Math.max(inLog, (loggedEvents['error chunk_failed'] ?? 0) + (loggedEvents['warn chunk_rows_in_flight'] ?? 0));
  } finally {
    meter.close();
    await server.stop();
  }
  const { toRefund: _refund, ...apiCounts } = counts;
  facts.api = apiCounts;
  facts.totalSeconds = Math.round((performance.now() - started) / 1000);
  const commit = execSync('git rev-parse --short HEAD', { cwd: root }).toString().trim();
  const maxCpuMs = Math.max(...phases.map((p) => p.maxCpuMs));
  // The heap goal is judged on a step's own heap (the isolate's rise during it, after a full GC
  // before it); the isolate's peak, which also holds every other object of the local run, beside it.
  const maxHeapMb = Math.max(...phases.map((p) => p.maxHeapRiseMb));
  const maxIsolateHeapMb = Math.max(...phases.map((p) => p.maxHeapUsedMb));
  const result = {
    generatedAt: new Date().toISOString(),
    commit,
    command: `npm run bench -- --only bigday --bigday-scale ${scale}`,
    loadAverage1mAtStart: loadAtStart,
    loadAverage1mAtEnd: round(loadavg()[0]),
    goals: GOALS,
    maxCpuMs,
    maxHeapMb,
    maxIsolateHeapMb,
    dayHeapPeakMb: dayHeap?.heapUsedMb ?? null,
    withinGoals: maxCpuMs <= GOALS.cpuMs && maxHeapMb <= GOALS.heapMb && facts.failedBatches === 0 && facts.chunkRetries === 0,
    notMeasured: [
      'CPU of each chunk and API invocation while the day runs (many run at once in one isolate; each kind is metered alone once the day is in storage)',
      'rows D1 writes in `raw()` statements (none on these paths when this was written)',
    ],
    facts,
    phases: phases.map((p) => ({ ...p, detail: undefined })),
  };
  const file = join(root, 'bench', 'runs', `${result.generatedAt.slice(0, 16).replace(':', '-')}-bigday-${scale}-${commit}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  printBigday(result);
  log(`bigday: written to ${file}`);
  return result;
}

/**
 * A second merchant on tier `max` sends `count` API transactions of the same mix, alone: its objects'
 * rows written (and D1's, in the windows where only it runs) from its first request to its shards'
 * archive, per API transaction.
 */
async function probeRowsWritten(ctx, { count, concurrency, log, archiveAt, meter, phases, root, persistTo }) {
  const made = await callJson(ctx, 'POST', '/admin/merchants', { name: 'Bigday Rows Probe', rate_tier: 'max' }, { auth: ctx.adminToken });
  if (made.status !== 201) throw new Error(`probe merchant: ${made.status} ${JSON.stringify(made.body)}`);
  const { id: merchantId, secret_key: auth } = made.body.data;
  log(`bigday: rows written per API transaction: ${count} API transactions of merchant ${merchantId} alone...`);
  const counts = newCounts();
  const start = await rowsWrittenNow(ctx);
  await apiDay(ctx, count, counts, { concurrency, auth, log, label: 'probe' });
  await quiet(ctx, merchantId);
  const made1 = await rowsWrittenNow(ctx);
  await post(ctx, '/__bench/largest/settle-step', { merchantId, now: new Date().toISOString() });
  await refundAll(ctx, counts.toRefund, counts, auth, concurrency);
  await quiet(ctx, merchantId);
  const classes = await sizeObjects(ctx, { root, persistTo, top: 10_000, only: ['LedgerShard'] });
  await archiveAll(ctx, meter, merchantId, shardsOf(classes, merchantId), archiveAt, phases, 'probe merchant');
  await quiet(ctx, merchantId);
  const end = await rowsWrittenNow(ctx);
  const mine = (n) => n.includes(merchantId);
  const life = rowsWrittenBetween(start, end, mine);
  const creation = rowsWrittenBetween(start, made1, mine);
  const per = (n) => Math.round((n / Math.max(1, counts.api)) * 100) / 100;
  const perClass = Object.fromEntries(Object.entries(life.perClass).map(([k, v]) => [k, per(v)]));
  const index = ['SearchDay', 'SearchKeys', 'SearchDirectory'].reduce((n, k) => n + (life.perClass[k] ?? 0), 0);
  return {
    merchantId,
    apiTransactions: counts.api,
    operations: { captures: counts.captures, voids: counts.voids, refunds: counts.refunds },
    ledger: per(life.perClass.LedgerShard ?? 0),
    index: per(index),
    all: per(Object.values(life.perClass).reduce((a, b) => a + b, 0)),
    perClass,
    createdOnly: Object.fromEntries(Object.entries(creation.perClass).map(([k, v]) => [k, per(v)])),
    // D1 is shared by every merchant: its rows while the probe ran alone (the big merchant's
    // receipts and alarms may add a few).
    d1: per(life.d1),
  };
}

export function printBigday(result) {
  const { facts } = result;
  const n = (v) => (v ?? 0).toLocaleString('en-US');
  console.log(`\nOne big merchant's day (commit ${result.commit}, ${n(facts.transactions)} transactions: ${facts.files} files of ${n(facts.fileRows)} rows, ${n(facts.api.api)} API on tier ${facts.rateTier}; ${facts.daySeconds} s for the day, ${facts.totalSeconds} s in all; load ${result.loadAverage1mAtStart} → ${result.loadAverage1mAtEnd})`);
  console.log(`most CPU of a metered invocation ${n(result.maxCpuMs)} ms (goal ${n(GOALS.cpuMs)}); most heap of a metered step, its own ${result.maxHeapMb} MB (goal ${GOALS.heapMb}; the isolate's peak during a step, every live object included, ${result.maxIsolateHeapMb ?? '?'} MB); the isolate's heap peak over the whole day ${result.dayHeapPeakMb} MB (every invocation at once)`);
  console.log(`chunk retries ${facts.chunkRetries}, failed batches ${facts.failedBatches} (goal 0); API: ${JSON.stringify(facts.api)}; export ${facts.export}`);
  console.log(`warnings and errors the service logged: ${JSON.stringify(facts.loggedEvents ?? {})}`);
  if (facts.largestApiShard) console.log(`largest API ledger shard ${facts.largestApiShard.name}: ${n(facts.largestApiShard.bytes)} B, rows ${JSON.stringify(facts.largestApiShard.rows)}`);
  const rw = facts.rowsWrittenPerApiTransaction;
  if (rw) console.log(`rows written per API transaction over its life: ${rw.ledger} in the ledger + ${rw.index} in the index (${rw.all} in all Durable Objects: ${JSON.stringify(rw.perClass)}; D1 ${rw.d1}); the big merchant's API ledger shards: ${facts.bigMerchantApiLedgerRowsPerApiTransaction}`);
  console.log('objects (largest per class; projection: same mix at 10 million transactions a day, a file\'s objects at a 500,000-row file):');
  for (const c of facts.objects ?? []) {
    const o = c.largest[0];
    if (!o) continue;
    console.log(`  ${c.class.padEnd(20)} ${String(c.objects).padStart(6)} objects; largest ${String(o.name).slice(0, 60).padEnd(60)} ${n(o.bytes).padStart(14)} B → ${o.projectedGb} GB at ${o.projectedAt}`);
  }
  console.log("metered steps (heap: the step's own, then the isolate's before the step after a full GC and at its peak during it):");
  for (const p of result.phases) console.log(`  ${p.phase.slice(0, 60).padEnd(60)} steps ${p.steps}${p.unprofiledSteps ? ` (${p.unprofiledSteps} unprofiled: CPU unknown)` : ''}, CPU ${n(p.maxCpuMs)} ms, heap ${p.maxHeapRiseMb} MB own (isolate ${p.maxHeapBeforeMb ?? '?'} → ${p.maxHeapUsedMb} MB)${p.withinGoal ? '' : ' OVER GOAL'}`);
  console.log(`not measured: ${result.notMeasured.join('; ')}`);
}
