// The search group (issue 33): on a server of its own whose entry is the I/O probe (every row
// written, every Durable Object request counted, by class):
//   1. what indexing writes: a 10,000-row batch file through the upload path and 200 single API
//      transactions, the search objects' rows written per indexed transaction;
//   2. a merchant with 100 shards over the last 31 days (31 API day shards and 69 batch files),
//      seeded through the engine with each day's clock (POST /__bench/search-seed);
//   3. first pages over it: an exact filter (order_id), a 31-day window alone, and a 31-day window
//      with a status filter; time per search (sequential) and the objects one search touches;
//   4. an export of all of it (100,015 rows): time to complete, rows per second, workerd's RSS
//      during it (memory flat), the download streamed and counted.
import { callJson, mapLimit } from '../http.mjs';
import { RssSampler } from '../rss.mjs';
import { startServer } from '../server.mjs';
import { runBatchFile } from './batch.mjs';
import { importScenarios } from './import.mjs';

const SEARCHES = 20;
const SEED = { days: 31, apiPerDay: 10, batches: 69, rowsPerBatch: 1_445 };

async function io(url, reset = false) {
  if (reset) return fetch(`${url}/__bench/io/reset`, { method: 'POST' }).then((r) => r.body?.cancel());
  return (await fetch(`${url}/__bench/io`)).json();
}

const searchRows = (snapshot) => Object.entries(snapshot.durableObjects.rowsWrittenByClass ?? {}).filter(([label]) => label.startsWith('Search')).reduce((n, [, rows]) => n + rows, 0);
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

export async function runSearchBench(ctx) {
  const { root, log } = ctx;
  log('search: starting a server with the I/O probe entry...');
  const server = await startServer({ root, logDir: `${root}bench/results`, log, entry: `${root}scripts/bench/io-probe-entry.mjs` });
  const pctx = { ...ctx, url: server.url, adminToken: server.adminToken, server, data: {} };
  const rss = new RssSampler(() => server.workerdPids()).start();
  const rows = [];
  try {
    await importScenarios[0].run(pctx);

    // 1. Indexing: rows the search objects write per indexed transaction.
    log('search: a 10,000-row batch file, counted...');
    await runBatchFile(pctx, 1_000, { pollMs: 1_000 }); // vault customers and the sandbox processor; not counted
    await io(server.url, true);
    await runBatchFile(pctx, 10_000, { pollMs: 1_000 });
    const batchIo = await io(server.url);
    const batchRecorded = 10_000 * 0.95; // the bench's files hold ~5% invalid rows, refused and not recorded
    const batchPerRow = searchRows(batchIo) / batchRecorded;
    rows.push({
      scenario: 'search: indexing a batch file (10,000 rows)',
      unit: '',
      note: `${batchPerRow.toFixed(4)} rows written by the search objects per indexed batch row (${searchRows(batchIo)} in all: ${JSON.stringify(Object.fromEntries(Object.entries(batchIo.durableObjects.rowsWrittenByClass).filter(([k]) => k.startsWith('Search'))))}); ledger, progress and sandbox ${(batchIo.durableObjects.sqlRowsWritten - searchRows(batchIo)) / batchRecorded} per row`,
      searchRowsWrittenPerRow: batchPerRow,
    });
    log('search: 200 API transactions, counted...');
    await io(server.url, true);
    const sales = Array.from({ length: 200 }, (_, i) => ({ transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1_000 + i, order_id: `IDX${i}` }));
    await mapLimit(sales, 4, (body) => callJson(pctx, 'POST', '/api/transaction', body));
    const apiIo = await io(server.url);
    rows.push({
      scenario: 'search: indexing API transactions (200)',
      unit: '',
      note: `${(searchRows(apiIo) / 200).toFixed(2)} rows written by the search objects per API transaction; ${(apiIo.durableObjects.requestsByClass.SEARCH_DAY?.requests ?? 0) / 200 + (apiIo.durableObjects.requestsByClass.SEARCH_KEYS?.requests ?? 0) / 200 + (apiIo.durableObjects.requestsByClass.SEARCH_DIRECTORY?.requests ?? 0) / 200} search object requests each`,
      searchRowsWrittenPerTransaction: searchRows(apiIo) / 200,
    });

    // 2. The merchant with 100 shards.
    const merchant = await fetch(`${server.url}/admin/merchants`, { method: 'POST', headers: { authorization: server.adminToken, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Search Bench' }) }).then((r) => r.json());
    const key = merchant.data.secret_key;
    log(`search: seeding ${SEED.days} API day shards and ${SEED.batches} batch files of ${SEED.rowsPerBatch} rows over ${SEED.days} days...`);
    await io(server.url, true);
    const seedStarted = performance.now();
    const seed = await fetch(`${server.url}/__bench/search-seed`, { method: 'POST', body: JSON.stringify({ merchantKey: key, ...SEED }), signal: AbortSignal.timeout(1_800_000) }).then((r) => r.json());
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const seedIo = await io(server.url);
    const seeded = seed.apiRows + seed.batchRows;
    log(`search: seeded ${seeded} transactions in ${seedSeconds.toFixed(1)} s`);
    rows.push({
      scenario: `search: a merchant with ${seed.apiShards + seed.batchShards} shards over ${SEED.days} days (${seeded.toLocaleString('en-US')} transactions)`,
      unit: 'rows/s',
      rate: seeded / seedSeconds,
      seconds: seedSeconds,
      note: `seeded through the engine with each day's clock; search objects wrote ${(searchRows(seedIo) / seeded).toFixed(4)} rows per transaction (${seed.batchRows} batch rows in chunks of 500, ${seed.apiRows} API transactions)`,
    });

    // 3. First pages.
    const today = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.parse(`${today}T00:00:00.000Z`) - 30 * 86_400_000).toISOString();
    const window31 = { start_date: from, end_date: `${today}T23:59:59Z` };
    const searches = [
      ['exact filter: order_id = B34X700 (one batch row, 31-day window)', { created_at: window31, order_id: { operator: '=', value: 'B34X700' } }],
      ['31-day window, no filter', { created_at: window31 }],
      ['31-day window, status = pending_settlement and amount > 5000', { created_at: window31, status: { operator: '=', value: 'pending_settlement' }, amount: { operator: '>', value: 5000 } }],
    ];
    for (const [label, body] of searches) {
      await callJson(pctx, 'POST', '/api/transaction/search', body, { auth: key }); // warm
      await io(server.url, true);
      const first = await callJson(pctx, 'POST', '/api/transaction/search', body, { auth: key });
      const touched = await io(server.url);
      if (first.status !== 200) throw new Error(`search ${label}: HTTP ${first.status} ${JSON.stringify(first.body)}`);
      const times = [];
      for (let i = 0; i < SEARCHES; i++) times.push((await callJson(pctx, 'POST', '/api/transaction/search', body, { auth: key })).ms);
      times.sort((a, b) => a - b);
      const byClass = touched.durableObjects.requestsByClass;
      const objects = ['SEARCH_DIRECTORY', 'SEARCH_DAY', 'SEARCH_KEYS'].map((b) => `${b.slice(7).toLowerCase()} ${byClass[b]?.objects ?? 0}`).join(', ');
      rows.push({
        scenario: `search: ${label}, first page`,
        unit: '',
        p50Ms: quantile(times, 0.5),
        p99Ms: times.at(-1),
        note: `${SEARCHES} sequential searches (p99 column: the slowest); total_count ${first.body.total_count}${first.body.total_count_exact ? '' : ' (a lower bound)'}, ${first.body.data.length} on the page; objects touched: ${objects}; ${touched.durableObjects.requests} object requests`,
        totalCount: first.body.total_count,
        objectsTouched: Object.fromEntries(Object.entries(byClass).map(([b, t]) => [b, t.objects])),
      });
    }

    // 4. Exports: three days of it, then all of it; memory flat means the peak does not grow with the rows.
    const exportRun = async (label, filters) => {
      log(`search: exporting ${label}...`);
      await new Promise((r) => setTimeout(r, 2_000));
      const beforeMb = rss.reset();
      const started = performance.now();
      const begun = await callJson(pctx, 'POST', '/api/transaction/export', filters, { auth: key });
      if (begun.status !== 202) throw new Error(`export: HTTP ${begun.status} ${JSON.stringify(begun.body)}`);
      let state = begun.body.data;
      while (state.status === 'running') {
        await new Promise((r) => setTimeout(r, 500));
        state = (await callJson(pctx, 'GET', `/api/transaction/export/${state.id}`, undefined, { auth: key })).body.data;
      }
      const seconds = (performance.now() - started) / 1000;
      const peakMb = rss.peakMb();
      if (state.status !== 'completed') throw new Error(`export: ${JSON.stringify(state)}`);
      const download = await fetch(`${server.url}${state.download_url}`, { headers: { authorization: key } });
      let bytes = 0;
      let lines = 0;
      for await (const chunk of download.body) {
        bytes += chunk.length;
        for (const byte of chunk) if (byte === 10) lines++;
      }
      if (lines - 1 !== state.rows) throw new Error(`export: ${state.rows} rows written, ${lines - 1} downloaded`);
      rows.push({
        scenario: `search: export of ${state.rows.toLocaleString('en-US')} rows (${label})`,
        unit: 'rows/s',
        rate: state.rows / seconds,
        seconds,
        rssBeforeMb: beforeMb,
        peakRssMb: peakMb,
        note: `POST to completed (its alarm's steps of 50,000 rows, 8 MiB parts); ${(bytes / 1e6).toFixed(1)} MB, ${lines - 1} rows downloaded (streamed); all of workerd's RSS: ${beforeMb?.toFixed(0)} MB before, peak ${peakMb?.toFixed(0)} MB`,
        exportRows: state.rows,
      });
    };
    const threeDays = new Date(Date.parse(`${today}T00:00:00.000Z`) - 2 * 86_400_000).toISOString();
    await exportRun('the last 3 days', { created_at: { start_date: threeDays } });
    await exportRun('every transaction', {});
  } finally {
    rss.stop();
    await server.stop();
  }
  return rows;
}
