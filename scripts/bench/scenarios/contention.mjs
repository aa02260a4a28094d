// Single requests while a batch runs: warm lookups and single transactions measured idle, then
// again while a 100,000-row file (10,000 with --quick) is being processed, in the same run on the
// same server. Before the ledger moved to Durable Object shards, a transaction's writes waited
// behind the batch's on the one D1 database; now a batch writes to its own shard and D1 only holds
// what is small and shared, so what is left is the one local isolate being busy.
import { measure } from '../load.mjs';
import { callJson, mapLimit, SECRET_KEY } from '../http.mjs';
import { cardNumber, random, shuffled } from '../dataset.mjs';
import { startBatchFile } from './batch.mjs';

const LOOKUP = '/api/lookup/bin/protected';

function transactionBodies(bins, count) {
  const next = random(41);
  const cards = bins.filter((bin) => /^(4|5[1-5])/.test(bin));
  return Array.from({ length: count }, (_, i) => ({
    transaction_type: 'sale',
    cc_number: cardNumber(cards[i % cards.length], next),
    cc_expiration: '12/30',
    cc_cvc: '123',
    amount: 100 + (i % 9_000),
    billing_postal_code: '73301',
  }));
}

export const contentionScenarios = [
  {
    name: 'idle vs during a batch',
    group: 'contention',
    async run(ctx) {
      const { settings } = ctx;
      if (ctx.freshServer) await ctx.freshServer('single requests idle, then during a batch');
      const rows = settings.quick ? 10_000 : 100_000;
      const pool = shuffled((ctx.data.bins ?? []).filter((b) => b.country).map((b) => b.bin), random(43));
      const lookups = pool.slice(0, 1_000).map((bin) => ({ bin, country: 'US', state: 'TX' }));
      await mapLimit(lookups, 8, (body) => callJson(ctx, 'POST', LOOKUP, body));
      const sales = transactionBodies(pool, 20_000);
      // The merchant's first transaction creates its sandbox processor: once, before measuring.
      await callJson(ctx, 'POST', '/api/transaction', sales[0]);
      const seconds = Math.max(3, Math.min(settings.durationS, 5));
      const run = (path, bodies) =>
        measure({ tool: settings.tool, url: `${ctx.url}${path}`, method: 'POST', auth: SECRET_KEY, bodies, connections: settings.connections, durationS: seconds, warmupS: 0 });

      const idle = { lookup: await run(LOOKUP, lookups), transaction: await run('/api/transaction', sales.slice(1, 10_000)) };
      const batch = await startBatchFile(ctx, rows);
      // Measured once the batch is being processed (its first chunk recorded).
      for (let i = 0; i < 600; i++) {
        const record = await batch.status();
        if (record?.status === 'processing' || record?.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const during = { lookup: await run(LOOKUP, lookups), transaction: await run('/api/transaction', sales.slice(10_000)) };
      const after = await batch.status();
      const stillRunning = after?.status !== 'completed';
      await batch.done();
      const note = (phase) =>
        phase === 'idle'
          ? 'no batch running'
          : `while a ${rows.toLocaleString('en-US')}-row batch ran (${stillRunning ? 'still running at the end of both measurements' : `it completed before the measurements ended: ${after?.processed_lines} rows done`})`;
      const row = (label, phase, result) => ({ scenario: `${label}, ${phase}`, unit: 'req/s', ...result, batchRows: rows, phase, note: note(phase) });
      return [
        row('contention: warm lookup', 'idle', idle.lookup),
        row('contention: warm lookup', 'during batch', during.lookup),
        row('contention: single transaction', 'idle', idle.transaction),
        row('contention: single transaction', 'during batch', during.transaction),
      ];
    },
  },
];
