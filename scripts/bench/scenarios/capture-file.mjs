// Batch files of captures against files of sales of the same size (docs/performance.md): N card
// authorizations are made by a file first (not measured), then a file of N sales and a file of N
// capture rows naming those authorizations are each timed from the upload to `completed`. The
// capture file should run within 20% of the sales file's rows a second. N: 500,000 in a full run
// (BATCH_MAX_ROWS), 5,000 with --quick, or BENCH_CAPTURE_ROWS. BENCH_CAPTURE_PROFILE=1: the capture
// file is run under the CPU profiler (the isolate's JavaScript, Worker and objects alike), its
// stages and top functions logged and kept in bench/results/captures-profile.cpuprofile
// (BENCH_CAPTURE_PROFILE=both: the sales file too, in bench/results/sales-profile.cpuprofile).
import { callJson, requireRoute, SECRET_KEY } from '../http.mjs';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findBundleMap, profileWork } from '../profile.mjs';
import { cpuMsOf } from '../rss.mjs';

const q = (value) => `"${value}"`;

function cardFile(type, rows) {
  const lines = [['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'order_id'].map(q).join(',')];
  for (let i = 0; i < rows; i += 1) lines.push([type, String(1000 + (i % 5000)), '4111111111111111', '12/30', `CAP${i}`].map(q).join(','));
  return lines.join('\n') + '\n';
}

function captureFile(ids) {
  const lines = [['transaction_type', 'transaction_id', 'amount'].map(q).join(',')];
  for (const id of ids) lines.push(['capture', id, ''].map(q).join(','));
  return lines.join('\n') + '\n';
}

/** Uploads `text`, waits for `completed`: seconds, and the result CSV when `keep`. */
async function runFile(ctx, text, name, rows, keep = false) {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/csv' }), name);
  const started = performance.now();
  const cpuBefore = cpuMsOf(ctx.server.workerdPids());
  const upload = await fetch(`${ctx.url}/api/filebatch?allow_duplicate=true`, {
    method: 'POST', headers: { authorization: SECRET_KEY }, body: form, signal: AbortSignal.timeout(600_000),
  });
  const body = await upload.json().catch(() => null);
  requireRoute({ status: upload.status, body }, 'POST /api/filebatch');
  if (body?.status !== 'success') throw new Error(`upload of ${name}: HTTP ${upload.status} ${JSON.stringify(body)}`);
  const id = body.data.id;
  const deadline = Date.now() + 60_000 + rows * 20;
  let record;
  for (;;) {
    record = (await callJson(ctx, 'GET', `/api/filebatch/${id}`)).body;
    if (record?.status === 'completed' || record?.status === 'failed') break;
    if (Date.now() > deadline) throw new Error(`${name} not completed: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - started) / 1000;
  // workerd's CPU time over the file (the isolate and the local storage simulators): what the load
  // of other processes on the machine changes least, so two files compare on a shared machine too.
  const cpuAfter = cpuMsOf(ctx.server.workerdPids());
  const cpuSeconds = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / 1000;
  if (record.status !== 'completed') throw new Error(`${name} ended ${record.status}: ${JSON.stringify(record)}`);
  if (!keep) return { id, seconds, cpuSeconds, csv: null };
  const download = await fetch(`${ctx.url}/api/filebatch/${id}/download`, { headers: { authorization: SECRET_KEY } });
  return { id, seconds, cpuSeconds, csv: await download.text() };
}

/** The workerd CPU seconds a file took, for its note. */
function cpuNote(file) {
  return file.cpuSeconds === null ? '' : `; workerd CPU ${file.cpuSeconds.toFixed(1)} s`;
}

/** Column `name` of every data row of a result CSV (no quotes or commas inside the columns read). */
function column(csv, name) {
  const lines = csv.split('\n').filter(Boolean);
  const header = lines[0].slice(1, -1).split('","');
  const at = header.indexOf(name);
  return lines.slice(1).map((line) => line.slice(1, -1).split('","')[at]);
}

export const captureFileScenarios = [
  {
    name: 'batch captures',
    group: 'batch',
    enabled: (settings) => settings.quick || settings.batchSizes.includes(500_000) || Boolean(process.env.BENCH_CAPTURE_ROWS),
    async run(ctx) {
      const rows = Number(process.env.BENCH_CAPTURE_ROWS ?? (ctx.settings.quick ? 5_000 : 500_000));
      if (ctx.freshServer && !ctx.settings.quick) await ctx.freshServer(`capture file of ${rows.toLocaleString('en-US')} rows`);
      const authorizations = await runFile(ctx, cardFile('authorize', rows), `auth-${rows}.csv`, rows, true);
      const ids = column(authorizations.csv, 'id');
      const statuses = column(authorizations.csv, 'status');
      if (ids.length !== rows || statuses.some((s) => s !== 'authorized')) throw new Error('the authorizations file did not authorize every row');
      const runSales = () => runFile(ctx, cardFile('sale', rows), `sales-${rows}.csv`, rows);
      let sales;
      // BENCH_CAPTURE_PROFILE=both: the sales file profiled too, to compare a sales chunk's stages with a capture chunk's.
      if (process.env.BENCH_CAPTURE_PROFILE === 'both') {
        const profile = await profileWork(ctx, 'sales-profile', runSales);
        sales = profile.work;
        ctx.log(`sales file profiled: ${profile.profiledMs} ms of samples over ${profile.wallSeconds} s`);
        for (const c of profile.categories) ctx.log(`  ${String(c.share).padStart(5)}%  ${c.category}`);
        for (const t of profile.top) ctx.log(`  ${String(t.share).padStart(5)}%  ${t.name}  ${t.file}`);
      } else sales = await runSales();
      const runCaptures = () => runFile(ctx, captureFile(ids), `captures-${rows}.csv`, rows, true);
      let captures;
      if (process.env.BENCH_CAPTURE_PROFILE) {
        const profile = await profileWork(ctx, 'captures-profile', runCaptures);
        captures = profile.work;
        // The bundle's source map, kept beside the profiles (the server's folder goes with it), to read them by caller afterwards.
        const map = findBundleMap(ctx.server.dir);
        if (map) writeFileSync(join(ctx.root, 'bench', 'results', 'profile-bundle.js.map'), JSON.stringify(map));
        ctx.log(`capture file profiled: ${profile.profiledMs} ms of samples over ${profile.wallSeconds} s`);
        for (const c of profile.categories) ctx.log(`  ${String(c.share).padStart(5)}%  ${c.category}`);
        for (const t of profile.top) ctx.log(`  ${String(t.share).padStart(5)}%  ${t.name}  ${t.file}`);
      } else captures = await runCaptures();
      const captured = column(captures.csv, 'status').filter((s) => s === 'pending_settlement').length;
      const salesRate = rows / sales.seconds;
      const captureRate = rows / captures.seconds;
      const label = `batch ${rows.toLocaleString('en-US')} rows`;
      return [
        {
          scenario: `${label} of sales: upload → completed`, unit: 'rows/s', rate: salesRate, seconds: sales.seconds, rows, batchId: sales.id, workerdCpuSeconds: sales.cpuSeconds,
          note: `card sales, the comparison for the capture file${cpuNote(sales)}`,
        },
        {
          scenario: `${label} of captures: upload → completed`, unit: 'rows/s', rate: captureRate, seconds: captures.seconds, rows, batchId: captures.id, workerdCpuSeconds: captures.cpuSeconds,
          note: `${captured} of ${rows} captured; ${((captureRate / salesRate) * 100).toFixed(0)}% of the sales file's rows/s (the aim: at least 80%)${cpuNote(captures)}${
            sales.cpuSeconds && captures.cpuSeconds ? `; sales CPU / captures CPU ${((sales.cpuSeconds / captures.cpuSeconds) * 100).toFixed(0)}%` : ''
          }`,
        },
      ];
    },
  },
];
