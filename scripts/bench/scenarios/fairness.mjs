// Fair sharing of the one chunk queue between merchants (issue 22; docs/batch.md, "Fair sharing"),
// each side by side in one run on one fresh server:
//
// - a small file behind a big one: merchant B's 100-row file alone (three times, the median), then
//   merchant A's 20,000-row file and, 1 s after its upload was answered, B's file again. B's
//   upload → completed with A running is compared with B alone (the goal: at most 3×).
// - five merchants' 10,000-row files uploaded together: each file's upload → completed, and the
//   last one's time over the first one's (the goal: at most 1.5×).
//
// Every merchant is created through the admin API with its own vault customers before anything is
// timed; files are the batch scenario's generated ones.
import { callJson, requireRoute } from '../http.mjs';
import { generateBatchCsv, ensureCustomers, fileBins } from './batch.mjs';

async function newMerchant(ctx, name) {
  const merchant = await callJson(ctx, 'POST', '/admin/merchants', { name }, { auth: ctx.adminToken });
  requireRoute(merchant, 'POST /admin/merchants');
  if (merchant.status !== 201) throw new Error(`admin: ${merchant.status} ${JSON.stringify(merchant.body)}`);
  const auth = merchant.body.data.secret_key;
  await ensureCustomers(ctx, fileBins(ctx), auth);
  return auth;
}

/** Uploads a generated file (built before the clock starts); answers { id, started, done() → seconds from the upload's start to `completed` }. */
async function upload(ctx, auth, rows, seed) {
  const bins = fileBins(ctx);
  const customers = await ensureCustomers(ctx, bins, auth);
  const { text } = generateBatchCsv(rows, { bins, customers, seed });
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/csv' }), `fair-${rows}-${seed}.csv`);
  const started = performance.now();
  const response = await fetch(`${ctx.url}/api/filebatch?allow_duplicate=true`, { method: 'POST', headers: { authorization: auth }, body: form, signal: AbortSignal.timeout(600_000) });
  const body = await response.json().catch(() => null);
  if (body?.status !== 'success') throw new Error(`upload of ${rows} rows: HTTP ${response.status} ${JSON.stringify(body)}`);
  const id = body.data.id;
  const answered = (performance.now() - started) / 1000;
  return {
    id,
    started,
    answered,
    async done(pollMs = 50) {
      const deadline = Date.now() + 60_000 + rows * 20;
      for (;;) {
        const record = (await callJson(ctx, 'GET', `/api/filebatch/${id}`, undefined, { auth })).body;
        if (record?.status === 'completed') return (performance.now() - started) / 1000;
        if (record?.status === 'failed' || Date.now() > deadline) throw new Error(`batch ${id}: ${JSON.stringify(record)}`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export const fairnessScenarios = [
  {
    name: 'fairness: a small file behind a big one',
    group: 'fairness',
    async run(ctx) {
      if (ctx.freshServer) await ctx.freshServer('fairness: a small file behind a big one');
      const a = await newMerchant(ctx, 'Fairness Merchant A');
      const b = await newMerchant(ctx, 'Fairness Merchant B');
      const alone = [];
      for (let i = 0; i < 3; i++) alone.push(await (await upload(ctx, b, 100, 100 + i)).done());
      const big = await upload(ctx, a, 20_000, 20_000);
      await new Promise((r) => setTimeout(r, 1_000));
      const small = await upload(ctx, b, 100, 200);
      const smallSeconds = await small.done();
      const bigSeconds = await big.done(200);
      const aloneSeconds = median(alone);
      const ratio = smallSeconds / aloneSeconds;
      return [
        { scenario: 'fairness: B 100 rows alone', unit: 's', seconds: aloneSeconds, runs: alone, note: `median of ${alone.map((s) => s.toFixed(2)).join(', ')} s` },
        {
          scenario: "fairness: B 100 rows, 1 s after A's 20,000 rows",
          unit: 's',
          seconds: smallSeconds,
          ratioToAlone: ratio,
          goal: 3,
          met: ratio <= 3,
          bigSeconds,
          note: `${ratio.toFixed(2)}× B alone (goal ≤ 3×); A's 20,000 rows took ${bigSeconds.toFixed(1)} s`,
        },
      ];
    },
  },
  {
    name: "fairness: five merchants' 10,000-row files together",
    group: 'fairness',
    async run(ctx) {
      if (ctx.freshServer) await ctx.freshServer("fairness: five merchants' files together");
      const merchants = [];
      for (let i = 0; i < 5; i++) merchants.push(await newMerchant(ctx, `Fairness Merchant ${i + 1}`));
      const origin = performance.now();
      const uploads = await Promise.all(merchants.map((auth, i) => upload(ctx, auth, 10_000, 10_000 + i)));
      const finished = await Promise.all(uploads.map(async (u) => (await u.done(100)) + (u.started - origin) / 1000));
      const answered = uploads.map((u) => u.answered + (u.started - origin) / 1000);
      const sorted = [...finished].sort((x, y) => x - y);
      const first = sorted[0];
      const last = sorted[sorted.length - 1];
      const ratio = last / first;
      return [
        {
          scenario: "fairness: five merchants' 10,000 rows together",
          unit: 's',
          seconds: last,
          firstSeconds: first,
          finishedSeconds: finished,
          uploadAnsweredSeconds: answered,
          ratioLastToFirst: ratio,
          goal: 1.5,
          met: ratio <= 1.5,
          note:
            `uploads answered at ${answered.map((s) => s.toFixed(1)).join(', ')} s; finished at ${finished.map((s) => s.toFixed(1)).join(', ')} s ` +
            `(same order); last/first ${ratio.toFixed(2)} (goal ≤ 1.5)`,
        },
      ];
    },
  },
];
