// The cost model: the billed units each unit of work used (counted by the I/O probe during the
// cost runs, never assumed), times the prices in prices.json. Pure arithmetic and formatting:
// scenarios/cost.mjs runs the work, this turns its counts into $ per million.
import { readFileSync } from 'node:fs';

export const PRICES = JSON.parse(readFileSync(new URL('./prices.json', import.meta.url), 'utf8'));

const DAY_S = 86_400;
const MONTH_S = 30 * DAY_S; // R2's GB-month: the daily peak averaged over 30 days
const GB = 1e9;

/** What each scenario is a million of, and its floor (the least any such unit of work can cost). */
export const COST_ROWS = [
  { key: 'lookupWarm', label: '1M warm lookups', unit: 'lookup', floor: { 'workers.requests': 1 }, floorText: '1 Workers request per lookup' },
  { key: 'lookupCold', label: '1M cold lookups', unit: 'lookup', floor: { 'workers.requests': 1 }, floorText: '1 Workers request per lookup' },
  { key: 'batch', label: '1M batch rows (100k-row files)', unit: 'row', floor: { 'queues.operations': 3 / 500 }, floorText: 'a 500-row chunk message sent, delivered and acknowledged' },
  { key: 'transaction', label: '1M single transactions', unit: 'transaction', floor: { 'workers.requests': 1, 'do.rowsWritten': 1 }, floorText: '1 Workers request + 1 row written' },
  // Issue 32: what email receipts add to the batch rows that ask for them (a file with email_receipt
  // on every row, less the same file without it), per receipt sent.
  { key: 'receipts', label: '1M email receipts (batch rows)', unit: 'receipt', floor: { 'email.messages': 1 }, floorText: '1 message through the Email Service' },
];

/** $ for `quantity` of a priced unit (null price: not priced, $0, listed as such). */
export function priceOf(unit, quantity) {
  const price = PRICES.units[unit];
  if (!price) throw new Error(`prices.json has no unit ${unit}`);
  return price.usd === null ? 0 : (quantity * price.usd) / price.per;
}

/**
 * Billed quantities per unit of work from one scenario's probe totals.
 * `run`: { units, io, cpuMsPerUnit, heldSeconds: { uploads }, retentionDays }.
 */
export function quantitiesPerUnit(run) {
  const { io, units } = run;
  const per = (n) => (n ?? 0) / units;
  const invocations = Object.entries(io.invocations ?? {});
  const workerRequests = invocations.filter(([k]) => k.startsWith('fetch ') || k.startsWith('queue ')).reduce((n, [, c]) => n + c, 0);
  const kv = Object.values(io.kv ?? {});
  const sumKv = (field) => kv.reduce((n, ns) => n + (ns[field] ?? 0), 0);
  const bytes = io.r2?.bytesByPrefix ?? {};
  // Result parts stay for the retention period; the upload only until the batch ends.
  const r2ByteSeconds = (bytes.results ?? 0) * run.retentionDays * DAY_S + (bytes.uploads ?? 0) * (run.heldSeconds?.uploads ?? 0);
  const d1Growth = io.d1?.sizeLast != null && io.d1?.sizeFirst != null ? Math.max(0, io.d1.sizeLast - io.d1.sizeFirst) : 0;
  // The ledger: the shard's bytes held for TRANSACTION_RETENTION_DAYS, then its gzip archive in R2
  // for ARCHIVE_DAYS (docs/security.md, "What is stored where").
  const ledgerByteSeconds = (io.durableObjects?.ledgerBytesHeld ?? 0) * (run.ledgerRetentionDays ?? 0) * DAY_S;
  const archiveByteSeconds = (bytes['ledger-archive'] ?? 0) * (run.archiveDays ?? 0) * DAY_S;
  const memoryGb = PRICES.units['do.duration'].memoryGb;
  return {
    'workers.requests': per(workerRequests),
    'workers.cpuMs': run.cpuMsPerUnit ?? 0,
    'd1.rowsRead': per(io.d1?.rowsRead),
    'd1.rowsWritten': per(io.d1?.rowsWritten),
    'kv.reads': per(sumKv('reads')),
    'kv.writes': per(sumKv('writes')),
    'kv.deletes': per(sumKv('deletes')),
    'kv.lists': per(sumKv('lists')),
    'kv.storage': per(sumKv('bytesTimesSeconds')) / GB / MONTH_S,
    'r2.classA': per(io.r2?.classA),
    'r2.classB': per(io.r2?.classB),
    'r2.storage': per(r2ByteSeconds + archiveByteSeconds) / GB / MONTH_S,
    'queues.operations': per((io.queue?.writeOps ?? 0) + (io.queue?.readOps ?? 0) + (io.queue?.deleteOps ?? 0)),
    'do.requests': per((io.durableObjects?.requests ?? 0) + (io.durableObjects?.alarms ?? 0)),
    'do.duration': (per(io.durableObjects?.busyMs) / 1000) * memoryGb,
    'do.rowsRead': per(io.durableObjects?.sqlRowsRead),
    'do.rowsWritten': per(io.durableObjects?.sqlRowsWritten),
    'do.storage': per(ledgerByteSeconds) / GB / MONTH_S,
    'rateLimiter.calls': per(io.rateLimiterCalls),
    'email.messages': per(io.email?.messages),
    // Not in the total: what D1 grew by, per month it is kept (the ledger itself is in Durable Objects).
    'd1.storage': per(d1Growth) / GB,
  };
}

/** One row of the cost table, with every unit's quantity and $ per million units of work. */
export function costRow(spec, run) {
  const quantities = quantitiesPerUnit(run);
  const lines = Object.entries(quantities).map(([unit, perUnit]) => ({
    unit,
    label: PRICES.units[unit].label,
    priceUnit: PRICES.units[unit].unit,
    perUnit,
    perMillion: perUnit * 1e6,
    usdPerMillion: priceOf(unit, perUnit * 1e6),
    priced: PRICES.units[unit].usd !== null,
    read: PRICES.units[unit].read,
    inTotal: unit !== 'd1.storage',
  }));
  const total = lines.filter((l) => l.inTotal).reduce((sum, l) => sum + l.usdPerMillion, 0);
  const floor = Object.entries(spec.floor).reduce((sum, [unit, n]) => sum + priceOf(unit, n * 1e6), 0);
  const ranked = lines.filter((l) => l.inTotal && l.usdPerMillion > 0).sort((a, b) => b.usdPerMillion - a.usdPerMillion);
  return {
    key: spec.key,
    label: spec.label,
    unit: spec.unit,
    measuredUnits: run.units,
    measuredWith: run.measuredWith,
    total,
    floor,
    floorText: spec.floorText,
    ratioToFloor: total / floor,
    dominant: ranked[0] ? { unit: ranked[0].unit, label: ranked[0].label, share: ranked[0].usdPerMillion / total } : null,
    storagePerMonthKept: lines.find((l) => l.unit === 'd1.storage')?.usdPerMillion ?? 0,
    d1ByStatement: (run.io.d1?.byStatement ?? []).map((s) => ({ ...s, rowsReadPerUnit: s.rowsRead / run.units, rowsWrittenPerUnit: s.rowsWritten / run.units })),
    lines,
  };
}

/** The cost table from the cost runs: [{ key, label, total, floor, ... }] for the runs that happened. */
export function costTable(runs) {
  return COST_ROWS.filter((spec) => runs[spec.key]?.units > 0).map((spec) => costRow(spec, runs[spec.key]));
}

/** Rows written per unit of work in every store together: D1 and the Durable Objects' SQLite (setAlarm and deleteAll included). */
export function rowsWrittenPerUnit(row) {
  const of = (unit) => row.lines.find((l) => l.unit === unit)?.perUnit ?? 0;
  return of('d1.rowsWritten') + of('do.rowsWritten');
}

/** The issue's cost goals, judged: [{ target, measured, met }]. */
export function costTargets(rows) {
  const warm = rows.find((r) => r.key === 'lookupWarm');
  const batch = rows.find((r) => r.key === 'batch');
  const out = [];
  out.push({
    target: 'batch row ≤ 2 rows written over its life, all stores (D1 + Durable Object SQLite, retention included)',
    measured: batch ? `${rowsWrittenPerUnit(batch).toPrecision(3)} (D1 ${batch.lines.find((l) => l.unit === 'd1.rowsWritten').perUnit.toPrecision(3)}, Durable Objects ${batch.lines.find((l) => l.unit === 'do.rowsWritten').perUnit.toPrecision(3)})` : 'not measured',
    met: batch ? rowsWrittenPerUnit(batch) <= 2 : null,
  });
  out.push({
    target: 'warm lookup ≤ 1.2 × floor ($ per million)',
    measured: warm ? `${usd(warm.total)} vs floor ${usd(warm.floor)} (${warm.ratioToFloor.toFixed(2)}×)` : 'not measured',
    met: warm ? warm.ratioToFloor <= 1.2 : null,
  });
  out.push({
    target: 'batch row ≤ $2 per million rows, all in',
    measured: batch ? `${usd(batch.total)} (${batch.dominant ? `${batch.dominant.label} ${Math.round(batch.dominant.share * 100)}%` : ''})` : 'not measured',
    met: batch ? batch.total <= 2 : null,
  });
  return out;
}

export const usd = (n) => (n >= 100 ? `$${n.toFixed(0)}` : n >= 0.1 ? `$${n.toFixed(2)}` : n >= 0.001 ? `$${n.toFixed(3)}` : n > 0 ? `$${n.toPrecision(2)}` : '$0');
/** "2 reads", "2 CPU ms", "2 GB-s": units that are abbreviations take no plural. */
const plural = (unit, n) => (n === 1 || /(ms|GB-s)$/.test(unit) ? unit : `${unit}s`);
const money = (usd) => `$${usd < 0.1 ? usd : usd.toFixed(2)}`;
const qty = (n) => (n === 0 ? '0' : n >= 100 ? Math.round(n).toLocaleString('en-US') : n >= 1 ? n.toFixed(2) : n.toPrecision(3));

/** The summary table (docs/performance.md): one line per row of work. */
export function costMarkdown(rows) {
  const head = '| Per million | $ all in | Floor | × floor | Dominant unit | Rows written / unit (D1 + Durable Objects) | + D1 storage per month kept |';
  const lines = rows.map((r) => {
    const written = rowsWrittenPerUnit(r);
    return `| ${r.label} | ${usd(r.total)} | ${usd(r.floor)} (${r.floorText}) | ${r.ratioToFloor.toFixed(2)}× | ${r.dominant ? `${r.dominant.label} (${Math.round(r.dominant.share * 100)}%)` : ''} | ${qty(written)} | ${usd(r.storagePerMonthKept)} |`;
  });
  return [head, '|---|---|---|---|---|---|---|', ...lines].join('\n');
}

/** The calculation of one row (docs/cost.md): every unit's quantity, price and $ per million. */
export function costDetailMarkdown(row) {
  const lines = row.lines
    .filter((l) => l.perUnit > 0 || l.unit === 'workers.requests')
    .map((l) => {
      const price = PRICES.units[l.unit];
      const priceText = price.usd === null ? 'no published price ($0)' : `${money(price.usd)} per ${price.per === 1 ? price.unit : `${price.per.toLocaleString('en-US')} ${plural(price.unit, price.per)}`}`;
      return `| ${l.label}${l.inTotal ? '' : ' (per month kept, not in the total)'} | ${qty(l.perUnit)} ${plural(l.priceUnit, l.perUnit)} | ${qty(l.perMillion)} | ${priceText} | ${usd(l.usdPerMillion)} |`;
    });
  const statements = row.d1ByStatement
    .filter((s) => s.rowsWrittenPerUnit > 0 || s.rowsReadPerUnit >= 0.01)
    .slice(0, 8)
    .map((s) => `${s.kind}: ${qty(s.rowsWrittenPerUnit)} written, ${qty(s.rowsReadPerUnit)} read`)
    .join('; ');
  return [
    `**${row.label}**: measured over ${row.measuredUnits.toLocaleString('en-US')} ${row.unit}s (${row.measuredWith}). Total ${usd(row.total)} per million; floor ${usd(row.floor)} (${row.floorText}), ${row.ratioToFloor.toFixed(2)}×.`,
    '',
    `| Unit | Per ${row.unit} | Per million | Price | $ per million |`,
    '|---|---|---|---|---|',
    ...lines,
    `| **Total** | | | | **${usd(row.total)}** |`,
    '',
    statements ? `D1 rows per ${row.unit}, by statement: ${statements}.` : '',
  ].join('\n');
}

/** The console version of the summary. */
export function printCost(rows, targets) {
  console.log('\nCost per million (Workers Paid list prices beyond the included allowances; scripts/bench/prices.json):');
  for (const r of rows) {
    console.log(`  ${r.label.padEnd(32)} ${usd(r.total).padStart(8)}  floor ${usd(r.floor).padStart(6)} (${r.ratioToFloor.toFixed(2)}×)  dominant: ${r.dominant ? `${r.dominant.label} ${Math.round(r.dominant.share * 100)}%` : '-'}`);
    for (const l of r.lines.filter((x) => x.usdPerMillion > 0 || (x.perUnit > 0 && !x.priced))) {
      console.log(`      ${l.label.padEnd(36)} ${qty(l.perUnit).padStart(10)} per ${r.unit}  ${usd(l.usdPerMillion).padStart(8)}${l.inTotal ? '' : ' per month kept (not in total)'}${l.priced ? '' : ' (no published price)'}`);
    }
  }
  for (const t of targets) console.log(`${t.met === null ? '  -   ' : t.met ? '  met ' : 'MISSED'}  ${t.target}: ${t.measured}`);
}

/**
 * What `on` used beyond `off` (two runs of the same work but for one feature): each count of the
 * probe's totals subtracted, never below zero. The receipts row is the batch with email_receipt on
 * every row less the same batch without it.
 */
export function ioDifference(on, off) {
  const minus = (a, b) => {
    if (typeof a === 'number') return Math.max(0, a - (typeof b === 'number' ? b : 0));
    if (a && typeof a === 'object' && !Array.isArray(a)) return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, minus(v, b?.[k])]));
    return a;
  };
  const io = minus(on, off);
  // Growth of D1 is a difference of sizes already: taken from each run, then subtracted.
  const growth = (run) => (run.d1?.sizeLast != null && run.d1?.sizeFirst != null ? Math.max(0, run.d1.sizeLast - run.d1.sizeFirst) : 0);
  io.d1 = { ...io.d1, sizeFirst: 0, sizeLast: Math.max(0, growth(on) - growth(off)), byStatement: [] };
  return io;
}
