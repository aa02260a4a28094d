// Scenarios 2-4: POST /api/lookup/bin/protected under load, with country/state (so the surcharge
// rules are consulted too), all with the demo merchant's secret key.
//  - warm: 1,000 distinct imported BINs, each asked once before the run (so all are cached);
//  - warm, KV: 10,000 distinct BINs, more than the isolate's in-memory record cache (2,000), so
//    each answer comes from KV rather than from the isolate's memory;
//  - cold: BINs never asked before, each sent once: every request misses the cache and reaches D1;
//  - temp_token and customer_id: tokens and vault customers created first, then looked up warm.
import { measure } from '../load.mjs';
import { callJson, mapLimit, requireRoute, SECRET_KEY } from '../http.mjs';
import { cardNumber, random, shuffled } from '../dataset.mjs';
import { DEMO } from '../../local-state.mjs';
import { profiledCpu } from './cost.mjs';

const PATH = '/api/lookup/bin/protected';
const REGIONS = [['US', 'TX'], ['US', 'CA'], ['US', 'CT'], ['CA', 'ON'], ['CA', 'QC'], ['GB', 'LND'], ['DE', 'BY'], ['US', 'CO']];
const withRegion = (body, i) => ({ ...body, country: REGIONS[i % REGIONS.length][0], state: REGIONS[i % REGIONS.length][1] });

/** Asks every body once (8 at a time): fills the caches, and checks the answers look right. */
async function prewarm(ctx, bodies, label) {
  const answers = await mapLimit(bodies, 8, (body) => callJson(ctx, 'POST', PATH, body));
  requireRoute(answers[0], `POST ${PATH}`);
  const bad = answers.filter((a) => a.status !== 200);
  if (bad.length > 0) throw new Error(`${label}: ${bad.length} of ${answers.length} prewarm lookups failed, first: ${bad[0].status} ${JSON.stringify(bad[0].body)}`);
  const withCountry = answers.filter((a) => a.body.country).length;
  const withSurcharge = answers.filter((a) => typeof a.body.is_surchargeable === 'boolean').length;
  return { count: answers.length, withCountry, withSurcharge, sample: answers[0].body };
}

/** Lazily splits the imported BINs into disjoint, shuffled sets, so no scenario warms another's. */
function binSets(ctx) {
  if (ctx.data.binSets) return ctx.data.binSets;
  const bins = ctx.data.bins;
  if (!bins || bins.length === 0) throw new Error('no imported BINs (the import step did not run)');
  // Prefer BINs with a country: their answers carry the full record.
  const pool = shuffled(bins.filter((b) => b.country).map((b) => b.bin), random(7));
  const warmSize = 1_000;
  const kvSize = ctx.settings.quick ? 3_000 : 10_000;
  ctx.data.binSets = {
    warm: pool.slice(0, warmSize),
    kv: pool.slice(warmSize, warmSize + kvSize),
    cold: pool.slice(warmSize + kvSize),
    cards: pool.slice(0, 200),
  };
  return ctx.data.binSets;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * Measures the scenario right after a GET /healthz run of the same length, `rounds` times, and
 * reports the round with the median ratio. Other processes on a 2-core machine make throughput
 * drift by tens of percent within minutes; a ratio taken side by side is far steadier than one
 * against a baseline measured minutes earlier.
 */
async function loadRow(ctx, scenario, bodies, { warmupBodies, note, extra = {}, rounds = 1 }) {
  const { settings } = ctx;
  const common = { tool: settings.tool, connections: settings.connections, durationS: settings.durationS, warmupS: settings.warmupS };
  ctx.rss.reset();
  const measured = [];
  for (let round = 0; round < rounds; round += 1) {
    const healthz = await measure({ ...common, url: `${ctx.url}/healthz` });
    const result = await measure({ ...common, url: `${ctx.url}${PATH}`, method: 'POST', auth: SECRET_KEY, bodies, warmupBodies });
    measured.push({ result, healthz, ratio: result.rps / healthz.rps });
  }
  const chosen = [...measured].sort((a, b) => a.ratio - b.ratio)[Math.floor((measured.length - 1) / 2)];
  return {
    scenario, unit: 'req/s', ...chosen.result,
    ratioToBaseline: chosen.ratio,
    p99Ratio: chosen.result.p99Ms / chosen.healthz.p99Ms,
    pairedHealthz: { rps: chosen.healthz.rps, p50Ms: chosen.healthz.p50Ms, p99Ms: chosen.healthz.p99Ms },
    rounds: measured.map((m) => ({ rps: m.result.rps, p99Ms: m.result.p99Ms, healthzRps: m.healthz.rps, healthzP99Ms: m.healthz.p99Ms, ratio: m.ratio })),
    medianRps: median(measured.map((m) => m.result.rps)),
    peakRssMb: ctx.rss.peakMb(), note, ...extra,
  };
}

export const lookupScenarios = [
  {
    name: 'lookup warm',
    group: 'lookup',
    async run(ctx) {
      const { warm } = binSets(ctx);
      const bodies = warm.map((bin, i) => withRegion({ bin }, i));
      const check = await prewarm(ctx, bodies, 'lookup warm');
      return [await loadRow(ctx, 'lookup warm', bodies, {
        rounds: ctx.settings.rounds,
        note: `${warm.length.toLocaleString('en-US')} distinct BINs, all cached (isolate memory + KV); ${check.withCountry} with country, ${check.withSurcharge} with is_surchargeable`,
        extra: { distinct: warm.length },
      })];
    },
  },
  {
    name: 'lookup warm (KV)',
    group: 'lookup',
    async run(ctx) {
      const { kv } = binSets(ctx);
      const bodies = kv.map((bin, i) => withRegion({ bin }, i));
      await prewarm(ctx, bodies, 'lookup warm (KV)');
      return [await loadRow(ctx, 'lookup warm (KV)', bodies, {
        note: `${kv.length.toLocaleString('en-US')} distinct cached BINs: more than the isolate keeps (2,000), so answers come from KV`,
        extra: { distinct: kv.length },
      })];
    },
  },
  {
    name: 'lookup cold',
    group: 'lookup',
    async run(ctx) {
      const { cold } = binSets(ctx);
      // The warm-up takes its own never-asked BINs, so the measured run starts on a cold cache too.
      const warmupCount = Math.min(Math.floor(cold.length / 5), 5_000);
      const warmupBodies = cold.slice(0, warmupCount).map((bin, i) => withRegion({ bin }, i));
      const bodies = cold.slice(warmupCount).map((bin, i) => withRegion({ bin }, i));
      const probe = await callJson(ctx, 'POST', PATH, { bin: '000000' });
      requireRoute(probe, `POST ${PATH}`);
      const row = await loadRow(ctx, 'lookup cold', bodies, { warmupBodies, extra: { distinct: bodies.length } });
      const repeated = Math.max(0, row.requests - bodies.length);
      row.note = `each request a BIN never asked before (KV miss → D1 → KV write)${repeated > 0 ? `; ${repeated} requests repeated a BIN (list wrapped)` : ''}`;
      return [row];
    },
  },
  {
    name: 'lookup by temp_token',
    group: 'lookup',
    async run(ctx) {
      const { cards } = binSets(ctx);
      const next = random(11);
      const first = await callJson(ctx, 'POST', '/api/tokenizer/token', { cc_number: cardNumber(cards[0], next), cc_expiration: '12/30' }, { auth: DEMO.publicKey });
      requireRoute(first, 'POST /api/tokenizer/token');
      const created = await mapLimit(cards.slice(1), 8, (bin) =>
        callJson(ctx, 'POST', '/api/tokenizer/token', { cc_number: cardNumber(bin, next), cc_expiration: '12/30', cc_cvc: '123' }, { auth: DEMO.publicKey }));
      const tokens = [first, ...created].map((r) => {
        if (r.status !== 201 && r.status !== 200) throw new Error(`tokenizer: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body.data.temp_token;
      });
      const bodies = tokens.map((temp_token, i) => withRegion({ temp_token }, i));
      await prewarm(ctx, bodies, 'lookup by temp_token');
      return [await loadRow(ctx, 'lookup by temp_token', bodies, {
        note: `${tokens.length} temp tokens (KV read + AES-GCM open per request), BINs cached`,
        extra: { distinct: tokens.length },
      })];
    },
  },
  {
    name: 'lookup by customer_id',
    group: 'lookup',
    async run(ctx) {
      const { cards } = binSets(ctx);
      const next = random(13);
      const ids = cards.map((_, i) => `bench${String(i).padStart(5, '0')}`);
      const created = await mapLimit(ids, 8, (id, i) =>
        callJson(ctx, 'POST', '/api/vault/customer', { id, payment_method: { card: { number: cardNumber(cards[i], next), expiration: '12/30' } } }));
      requireRoute(created[0], 'POST /api/vault/customer');
      for (const r of created) if (r.status !== 201 && r.status !== 200) throw new Error(`vault: ${r.status} ${JSON.stringify(r.body)}`);
      const bodies = ids.map((customer_id, i) => withRegion({ customer_id }, i));
      await prewarm(ctx, bodies, 'lookup by customer_id');
      return [await loadRow(ctx, 'lookup by customer_id', bodies, {
        note: `${ids.length} vault customers (D1 read + AES-GCM open per request), BINs cached`,
        extra: { distinct: ids.length },
      })];
    },
  },
];

/**
 * The warm lookup again, on a second fresh server whose entry answers the rate limiter from the
 * isolate's memory (scripts/bench/limiter-in-isolate-entry.mjs) instead of wrangler dev's simulator,
 * a Durable Object round trip per call that production does not make. Measured against healthz on
 * that same server, rounds as for "lookup warm": the best local estimate of the production ratio.
 */
export async function runLimiterInIsolate(ctx, { startServer, RssSampler, importScenario }) {
  const { root, log, settings } = ctx;
  log('lookup warm (limiter in isolate): starting a server with the in-isolate limiter entry...');
  const server = await startServer({ root, logDir: `${root}bench/results`, log, entry: `${root}scripts/bench/limiter-in-isolate-entry.mjs` });
  const lctx = { ...ctx, url: server.url, adminToken: server.adminToken, server, data: {}, rss: new RssSampler(() => server.workerdPids()).start() };
  try {
    await importScenario.run(lctx);
    const { warm } = binSets(lctx);
    const bodies = warm.map((bin, i) => withRegion({ bin }, i));
    await prewarm(lctx, bodies, 'lookup warm (limiter in isolate)');
    const row = await loadRow(lctx, 'lookup warm (limiter in isolate)', bodies, {
      rounds: settings.rounds,
      note: 'the same warm lookup, the rate limiter answered from isolate memory (bench-only entry): the closer estimate of production, where limit() is a local counter',
      extra: { distinct: warm.length, limiterInIsolate: true },
    });
    // CPU per warm lookup without the simulator's round trip (no probe on this server).
    const seconds = settings.quick ? 3 : 5;
    const { cpu, workerdCpuMsPerUnit } = await profiledCpu(lctx, 'lookup-warm-limiter-in-isolate', () =>
      measure({ tool: settings.tool, url: `${lctx.url}${PATH}`, method: 'POST', auth: SECRET_KEY, bodies, connections: settings.connections, durationS: seconds, warmupS: 0 }),
      (result) => result.requests);
    row.cpu = { ...cpu, workerdMsPerUnit: workerdCpuMsPerUnit };
    // Its ratio is to the healthz run beside it on this server, not to the main run's baseline.
    return [row];
  } finally {
    lctx.rss.stop();
    await server.stop();
  }
}
