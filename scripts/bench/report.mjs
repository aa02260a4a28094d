// The table printed at the end, the machine description, and bench/results.json.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, release, platform } from 'node:os';
import { join } from 'node:path';
import { costDetailMarkdown, costMarkdown } from './cost.mjs';
import { wrkVersion } from './load.mjs';

const version = (root, pkg) => {
  try {
    return JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return 'unknown';
  }
};

/** Other workerd processes on the machine (other checkouts' tests or dev servers) compete for the cores. */
export function foreignWorkerdCount(ours) {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || ours.includes(Number(entry))) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('workerd')) count += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}

export function machineInfo(root, tool) {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    // Not a git checkout.
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
    workerd: version(root, 'workerd'),
    wrangler: version(root, 'wrangler'),
    loadGenerator: tool === 'wrk' ? wrkVersion() : `autocannon ${version(root, 'autocannon')}`,
    commit,
    loadAverage1mAtEnd: Math.round(loadavg()[0] * 100) / 100,
  };
}

const int = (n) => Math.round(n).toLocaleString('en-US');
const fixed = (n, digits = 1) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n) => (n == null ? '' : n < 10 ? `${fixed(n, 2)} ms` : `${fixed(n, 1)} ms`);

/** One display line per row: [scenario, rate, p50, p99, vs healthz, time, peak RSS, notes]. */
export function tableLines(results) {
  return results.rows.map((row) => {
    if (row.skipped) return [row.scenario, '', '', '', '', '', '', row.skipped];
    const rate =
      row.unit === 'req/s' ? `${int(row.rps)} req/s`
      : row.unit === 'rows/s' ? `${int(row.rate)} rows/s`
      : row.unit === 'MB/s' ? `${fixed(row.rate)} MB/s`
      : row.unit === 'receipts/s' ? `${fixed(row.rate)} receipts/s`
      : '';
    const ratio =
      typeof row.ratioToBaseline === 'number'
        ? `${fixed(row.ratioToBaseline, 2)}×, p99 ${fixed(row.p99Ratio, 2)}×`
        : '';
    const time = row.seconds != null && row.unit !== 'req/s' ? `${fixed(row.seconds, 2)} s` : '';
    // For a batch file: the peak, and how far it rose above the RSS at the file's start.
    const rss =
      row.peakRssMb == null ? ''
      : row.rssBeforeMb != null ? `${int(row.peakRssMb)} MB (+${int(row.peakRssMb - row.rssBeforeMb)})`
      : `${int(row.peakRssMb)} MB`;
    const note = `${row.note ?? ''}${row.retried ? ' [run again on a fresh server: the first stopped answering]' : ''}`;
    return [row.scenario, rate, ms(row.p50Ms), ms(row.p99Ms), ratio, time, rss, note];
  });
}

const HEADER = ['Scenario', 'Rate', 'p50', 'p99', 'vs healthz (req/s, p99)', 'Time', 'Peak RSS', 'Notes'];

export function printTable(results) {
  const lines = [HEADER, ...tableLines(results)];
  const widths = HEADER.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  const fmt = (l) => l.map((cell, i) => String(cell).padEnd(widths[i])).join('  ').trimEnd();
  console.log('');
  console.log(fmt(lines[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const line of lines.slice(1)) console.log(fmt(line));
  console.log('');
  for (const t of targets(results)) console.log(`${t.met === null ? '  -   ' : t.met ? '  met ' : 'MISSED'}  ${t.target}: ${t.measured}`);
  const m = results.machine;
  console.log(`\nload average at start ${m.loadAverage1mAtStart}, other workerd processes running at start: ${m.foreignWorkerdAtStart}`);
  console.log(`${m.cores} cores (${m.cpu}), ${m.memoryGb} GB, Node ${m.node}, workerd ${m.workerd}, wrangler ${m.wrangler}, ${m.loadGenerator}, commit ${m.commit}`);
}

/** The same table as Markdown (docs/performance.md, Latest figures). */
export function markdownTable(results) {
  const lines = tableLines(results);
  return [
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...lines.map((l) => `| ${l.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`),
  ].join('\n');
}

/**
 * A full run writes bench/results.json (committed: docs/performance.md shows it); every run also
 * leaves a timestamped copy in bench/results/ (git-ignored).
 */
export function writeResults(root, results, full) {
  const dir = join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(results, null, 2) + '\n';
  const stamp = results.generatedAt.replace(/[:.]/g, '-');
  const written = [join('bench', 'results', `${stamp}${full ? '' : '-partial'}.json`)];
  writeFileSync(join(root, written[0]), json);
  writeFileSync(join(dir, `${stamp}${full ? '' : '-partial'}.md`), markdownTable(results) + '\n');
  if (full) {
    writeFileSync(join(root, 'bench', 'results.json'), json);
    written.unshift(join('bench', 'results.json'));
  }
  return written;
}

const START = '<!-- bench:results:start (written by npm run bench; do not edit by hand) -->';
const END = '<!-- bench:results:end -->';

/** A full run rewrites the figures block of docs/performance.md (between its markers), if present. */
export function updatePerformanceDoc(root, results) {
  const path = join(root, 'docs', 'performance.md');
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return false;
  }
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) return false;
  const m = results.machine;
  const block = [
    START,
    `Run ${results.generatedAt.slice(0, 16).replace('T', ' ')} UTC, commit \`${m.commit}\`, \`${results.command}\`: ` +
      `${m.cores} cores (${m.cpu}), ${m.memoryGb} GB RAM, ${m.os}, Node ${m.node}, workerd ${m.workerd} (wrangler ${m.wrangler}), ` +
      `${m.loadGenerator.split(' Copyright')[0]}, ${results.settings.connections} connections, ` +
      `${results.settings.warmupS} s warm-up + ${results.settings.durationS} s per run. ` +
      `Load average at start ${m.loadAverage1mAtStart}, ${m.foreignWorkerdAtStart} other workerd processes running.`,
    '',
    markdownTable(results),
    '',
    targetsMarkdown(results),
    ...(results.cost
      ? [
          '',
          `**What Cloudflare would bill** (Workers Paid list prices beyond the monthly allowances, read ${PRICES_READ(results)}; every unit counted by the I/O probe during this run; the calculation of each row is in [docs/cost.md](cost.md)):`,
          '',
          costMarkdown(results.cost.rows),
        ]
      : []),
    ...(results.cpu?.length
      ? [
          '',
          '**Worker CPU per unit of work** (the isolate\'s CPU profile under `wrangler dev` on this machine: sampled time minus idle and the probe, times the share of runnable time workerd\'s threads were on a core; "all of workerd" is its whole CPU time, local simulators included):',
          '',
          cpuMarkdown(results),
        ]
      : []),
    END,
  ].join('\n');
  writeFileSync(path, text.slice(0, from) + block + text.slice(to + END.length));
  return true;
}

/** The issue's targets, judged from this run's rows: [{ target, measured, met }] (met null: not measured). */
export function targets(results) {
  const row = (name) => results.rows.find((r) => r.scenario === name && !r.skipped);
  const warm = row('lookup warm');
  const e2e = row('batch 100,000 rows: upload → completed');
  const download = row('batch 100,000 rows: download');
  const big = row('batch 100,000 rows: download');
  const small = row('batch 10,000 rows: download');
  const out = [];
  const add = (target, measured, met) => out.push({ target, measured, met });
  add('lookup warm ≥ 0.8 × healthz throughput', warm ? `${fixed(warm.ratioToBaseline, 2)}× (${int(warm.rps)} vs ${int(warm.pairedHealthz?.rps ?? 0)} req/s)` : 'not measured', warm ? warm.ratioToBaseline >= 0.8 : null);
  add('lookup warm p99 ≤ 2 × healthz p99', warm ? `${fixed(warm.p99Ratio, 2)}× (${ms(warm.p99Ms)} vs ${ms(warm.pairedHealthz?.p99Ms)})` : 'not measured', warm ? warm.p99Ratio <= 2 : null);
  add('100,000 rows upload → completed < 60 s (≥ 1,700 rows/s)', e2e ? `${fixed(e2e.seconds, 1)} s (${int(e2e.rate)} rows/s)` : 'not measured', e2e ? e2e.seconds < 60 : null);
  add('download of the 100,000-row results ≥ 20 MB/s', download ? `${fixed(download.rate, 1)} MB/s` : 'not measured', download ? download.rate >= 20 : null);
  if (big && small) {
    const rss = big.peakRssMb - small.peakRssMb;
    add('peak workerd RSS, 100k rows ≤ 10k rows + 64 MB', `${int(big.peakRssMb)} vs ${int(small.peakRssMb)} MB (${rss >= 0 ? '+' : ''}${int(rss)} MB)`, rss <= 64);
    if (big.peakHeapTotalMb != null && small.peakHeapTotalMb != null) {
      const heap = big.peakHeapTotalMb - small.peakHeapTotalMb;
      add('(same, for the Worker isolate\'s V8 heap alone)', `${int(big.peakHeapTotalMb)} vs ${int(small.peakHeapTotalMb)} MB (${heap >= 0 ? '+' : ''}${int(heap)} MB)`, heap <= 64);
    }
  } else {
    add('peak workerd RSS, 100k rows ≤ 10k rows + 64 MB', 'not measured', null);
  }
  // The row limit: 500,000 rows (BATCH_MAX_ROWS) against the 100,000-row file.
  const limit = row('batch 500,000 rows: upload → completed');
  if (limit && e2e) {
    add('500,000 rows: rows/s within 20% of the 100,000-row file', `${int(limit.rate)} vs ${int(e2e.rate)} rows/s (${fixed(limit.rate / e2e.rate, 2)}×; ${fixed(limit.seconds, 1)} s)`, limit.rate >= 0.8 * e2e.rate);
    if (limit.peakHeapTotalMb != null && e2e.peakHeapTotalMb != null) {
      add('500,000 rows: isolate heap peak flat (≤ 100,000-row file + 20%)', `${int(limit.peakHeapTotalMb)} vs ${int(e2e.peakHeapTotalMb)} MB`, limit.peakHeapTotalMb <= e2e.peakHeapTotalMb * 1.2);
    }
    const limitDownload = row('batch 500,000 rows: download');
    if (limitDownload) add('500,000 rows: download ≥ 20 MB/s', `${fixed(limitDownload.rate, 1)} MB/s (${fixed(limitDownload.megabytes, 0)} MB); peak RSS ${int(limitDownload.peakRssMb)} vs ${int(download?.peakRssMb ?? 0)} MB for 100k`, limitDownload.rate >= 20);
  } else if (results.settings?.batchSizes?.includes(500_000)) {
    add('500,000 rows: rows/s within 20% of the 100,000-row file', 'not measured', null);
  }
  const enhanced = row('batch 100,000 rows, enhanced lookup: upload → completed');
  if (enhanced && e2e) {
    add('100,000 rows with the enhanced lookup: rows/s within 20% of the plain file', `${int(enhanced.rate)} vs ${int(e2e.rate)} rows/s (${fixed(enhanced.seconds, 1)} s vs ${fixed(e2e.seconds, 1)} s)`, enhanced.rate >= 0.8 * e2e.rate);
  }
  const isolated = row('lookup warm (limiter in isolate)');
  if (isolated) {
    add('(estimate) lookup warm, limiter in isolate ≥ 0.8 × healthz', `${fixed(isolated.ratioToBaseline, 2)}× (${int(isolated.rps)} vs ${int(isolated.pairedHealthz?.rps ?? 0)} req/s)`, isolated.ratioToBaseline >= 0.8);
  }
  for (const t of results.cost?.targets ?? []) add(t.target, t.measured, t.met);
  for (const c of results.cpu ?? []) {
    if (c.goalMs == null) continue;
    add(`Worker CPU per ${c.label} ≤ ${c.goalMs} ms`, `${fixed(c.msPerUnit, 3)} ms (top: ${c.top.map((t) => `${shortStage(t.category)} ${Math.round(t.share * 100)}%`).join(', ')})`, c.met);
  }
  return out;
}

/** A profile stage's name without its parenthesised detail. */
const shortStage = (category) => category.replace(/\s*\(.*\)$/, '');

/** CPU per unit of work: the console version. */
export function printCpu(results, { detail = false } = {}) {
  if (!results.cpu?.length) return;
  console.log('\nWorker CPU per unit of work (CPU profile of the isolate: sampled time minus idle and the probe):');
  for (const c of results.cpu) {
    const all = c.workerdMsPerUnit != null ? `; all of workerd ${fixed(c.workerdMsPerUnit, 2)} ms` : '';
    const sampled = `sampled ${fixed(c.sampledMsPerUnit, 3)} ms × on-CPU ${fixed(c.onCpu, 2)}`;
    console.log(`  ${c.label.padEnd(20)} ${fixed(c.msPerUnit, 3).padStart(7)} ms${c.goalMs != null ? ` (goal ≤ ${c.goalMs} ms)` : ''} (${sampled}${all})`);
    for (const t of c.top) console.log(`      ${fixed(t.msPerUnit, 3).padStart(7)} ms  ${String(Math.round(t.share * 100)).padStart(3)}%  ${t.category}`);
  }
  if (!detail) return;
  for (const [name, run] of Object.entries(results.costRuns ?? {})) {
    if (typeof run !== 'object' || !run.profile) continue;
    const p = run.profile;
    console.log(`\nCPU profile, ${name}: ${p.profiledMs} ms sampled over ${p.wallSeconds} s, ${run.units} units`);
    for (const c of p.categories) console.log(`  ${String(c.share).padStart(5)}%  ${String(c.ms).padStart(8)} ms  ${c.category}`);
    console.log('  top functions (self time):');
    for (const t of p.top.slice(0, 15)) console.log(`  ${String(t.share).padStart(5)}%  ${String(t.ms).padStart(8)} ms  ${t.name}  ${t.file}`);
    console.log('  binding calls:');
    for (const c of run.io.calls) {
      const sent = c.paramBytes ? `  ${(c.paramBytes / c.calls / 1024).toFixed(1)} KiB sent per call` : '';
      console.log(`  ${String(c.calls).padStart(7)} calls  ${(c.calls / run.units).toFixed(4).padStart(8)}/unit  ${String(Math.round(c.ms)).padStart(7)} ms  ${c.name}${sent}`);
    }
  }
}

/** CPU per unit of work as Markdown (docs/performance.md). */
export function cpuMarkdown(results) {
  const lines = (results.cpu ?? []).map((c) => {
    const top = c.top.map((t) => `${shortStage(t.category)} ${fixed(t.msPerUnit, 3)} ms (${Math.round(t.share * 100)}%)`).join('; ');
    const all = c.workerdMsPerUnit != null ? `${fixed(c.workerdMsPerUnit, 2)} ms` : '';
    return `| ${c.label} | ${fixed(c.msPerUnit, 3)} ms | ${fixed(c.sampledMsPerUnit, 3)} ms × ${fixed(c.onCpu, 2)} | ${c.goalMs != null ? `≤ ${c.goalMs} ms: ${c.met ? '**met**' : '**missed**'}` : ''} | ${top} | ${all} |`;
  });
  return ['| Worker CPU per | Measured | Sampled × on-CPU share | Goal | Top three costs | All of workerd (upper bound) |', '|---|---|---|---|---|---|', ...lines].join('\n');
}

/** The dates the prices were read (prices.json). */
function PRICES_READ(results) {
  const dates = new Set((results.cost?.rows ?? []).flatMap((r) => r.lines.map((l) => l.read)).filter(Boolean));
  return dates.size > 0 ? [...dates].join(', ') : 'see scripts/bench/prices.json';
}

const COST_START = '<!-- bench:cost:start (written by npm run bench; do not edit by hand) -->';
const COST_END = '<!-- bench:cost:end -->';

/** A full run rewrites the measured calculation in docs/cost.md (between its markers). */
export function updateCostDoc(root, results) {
  const path = join(root, 'docs', 'cost.md');
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return false;
  }
  const from = text.indexOf(COST_START);
  const to = text.indexOf(COST_END);
  if (from < 0 || to < from || !results.cost) return false;
  const m = results.machine;
  const block = [
    COST_START,
    `Run ${results.generatedAt.slice(0, 16).replace('T', ' ')} UTC, commit \`${m.commit}\`, \`${results.command}\`; load average at start ${m.loadAverage1mAtStart}.`,
    '',
    costMarkdown(results.cost.rows),
    '',
    ...results.cost.rows.flatMap((row) => [costDetailMarkdown(row), '']),
    cpuMarkdown(results),
    COST_END,
  ].join('\n');
  writeFileSync(path, text.slice(0, from) + block + text.slice(to + COST_END.length));
  return true;
}

export function targetsMarkdown(results) {
  const mark = (met) => (met === null ? 'not measured' : met ? '**met**' : '**missed**');
  return ['| Target | This run | |', '|---|---|---|', ...targets(results).map((t) => `| ${t.target} | ${t.measured} | ${mark(t.met)} |`)].join('\n');
}
