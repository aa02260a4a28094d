// Bench-only Worker entry for `npm run bench -- --only shardrate` (never used by `npm run dev` or a
// deploy): the service's own src/index.ts, unchanged, plus one endpoint that drives API sales into
// ONE ledger shard through the shard's own claim and complete, one sale per call as the engine
// makes them for POST /api/transaction (a claim, then its answer), `concurrency` at once:
//   POST /__bench/shardrate/step { merchantId, templateId, templateDay, day, from, count, concurrency }
import worker from '../../src/index.ts';
import { shardFor } from '../../src/services/transactions/ledger.ts';
import { answerOf, CLAIMED_STATUS } from '../../src/storage/ledger-shard/index.ts';

export * from '../../src/index.ts';

const ALPHABET = '0123456789abcdefghijklmnopqrstuv';

/** An API transaction id of `day` made from a number (sub-shard 0's form). */
function apiId(day, n) {
  let tail = '';
  for (let i = 0, v = n; i < 20; i += 1, v = Math.floor(v / 32)) tail = ALPHABET[v % 32] + tail;
  return `txn_a${day.replaceAll('-', '')}${tail}`;
}

async function step(body, env) {
  const { merchantId, templateId, templateDay, day, from, count, concurrency = 8 } = body;
  const source = shardFor(env, { kind: 'api', merchantId, day: templateDay }, `${templateDay}T00:00:00.000Z`);
  const [template] = await source.stub.find(source.identity, { ids: [templateId], exact: [templateId], floor: [] });
  if (!template) throw new Error('template not found');
  const shard = shardFor(env, { kind: 'api', merchantId, day }, `${day}T00:00:00.000Z`);
  const start = Date.parse(`${day}T00:00:00.000Z`);
  let next = from;
  let done = 0;
  const began = Date.now();
  async function one(i) {
    const id = apiId(day, i);
    const amount = 100 + (i % 99_900);
    const created = new Date(start + (i % 72_000_000)).toISOString();
    const stored = {
      ...template,
      requestHash: template.requestHash || 'f'.repeat(64),
      record: { ...template.record, id, idempotency_key: `rate-${i}`, amount, amount_authorized: amount, amount_captured: amount, created_at: created, captured_at: created },
    };
    const claimed = await shard.stub.claim(shard.identity, [{ page: id, entries: [{ ...stored, record: { ...stored.record, status: CLAIMED_STATUS } }] }], created);
    if (!Array.isArray(claimed) || claimed.length !== 1) throw new Error(`claim: ${JSON.stringify(claimed)}`);
    const answered = await shard.stub.complete(shard.identity, [answerOf(stored)]);
    if (!Array.isArray(answered) || answered.length !== 1) throw new Error(`complete: ${JSON.stringify(answered)}`);
    done += 1;
  }
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < from + count) await one(next++);
    }),
  );
  return { done, ms: Date.now() - began, shard: shard.identity.name };
}

const routes = { '/__bench/shardrate/step': step };

export default {
  ...worker,
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    const route = request.method === 'POST' ? routes[path] : undefined;
    if (!route) return worker.fetch(request, env, ctx);
    try {
      return Response.json(await route(await request.json(), env));
    } catch (error) {
      return Response.json({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, { status: 500 });
    }
  },
};
