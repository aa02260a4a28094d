// Bench-only Worker entry for `npm run bench -- --only largest` (never used by `npm run dev` or a
// deploy): the service's own src/index.ts, unchanged and unwrapped (so the CPU and heap measured are
// the service's), plus endpoints that let the bench drive the largest workloads one invocation at
// a time, as the alarms and "settle now" would:
//   POST /__bench/largest/seed            writes API transactions into a merchant's day shard through
//                                         the shard's own claim and complete (copies of a template)
//   POST /__bench/largest/settle-step     one step of the merchant's settlement (settleNow)
//   POST /__bench/largest/retention-step  one step of a shard's retention (runRetention)
//   POST /__bench/largest/shard-info      a shard's row counts and SQLite size
import worker, { LedgerShard as ServiceLedgerShard } from '../../src/index.ts';
import { shardFor } from '../../src/services/transactions/ledger.ts';
import { answerOf, CLAIMED_STATUS } from '../../src/storage/ledger-shard/index.ts';

export * from '../../src/index.ts';

export class LedgerShard extends ServiceLedgerShard {
  /** Rows per table and the SQLite size (bench only). */
  async benchInfo() {
    const sql = this.ctx.storage.sql;
    const tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'").toArray();
    const rows = Object.fromEntries(tables.map(({ name }) => [name, sql.exec(`SELECT COUNT(*) AS n FROM "${name}"`).one().n]));
    return { rows, bytes: sql.databaseSize };
  }
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuv';

/** An API transaction id of `day` (txn_a{YYYYMMDD}{20 base32}) made from a number. */
function apiId(day, n) {
  let tail = '';
  for (let i = 0, v = n; i < 20; i += 1, v = Math.floor(v / 32)) tail = ALPHABET[v % 32] + tail;
  return `txn_a${day.replaceAll('-', '')}${tail}`;
}

/**
 * { merchantId, templateId, templateDay, day, from, count, perCall }: `count` copies of the template
 * transaction (its own id, key, amount and time within `day`), claimed and completed in calls of
 * `perCall`, as the engine writes API transactions (a page each).
 */
async function seed(body, env) {
  const { merchantId, templateId, templateDay, day, from, count, perCall = 2_000 } = body;
  const source = shardFor(env, { kind: 'api', merchantId, day: templateDay }, `${templateDay}T00:00:00.000Z`);
  const [template] = await source.stub.find(source.identity, { ids: [templateId], exact: [templateId], floor: [] });
  if (!template) throw new Error('template not found');
  const shard = shardFor(env, { kind: 'api', merchantId, day }, `${day}T00:00:00.000Z`);
  const start = Date.parse(`${day}T00:00:00.000Z`);
  for (let at = from; at < from + count; at += perCall) {
    const stored = [];
    for (let i = at; i < Math.min(at + perCall, from + count); i += 1) {
      const id = apiId(day, i);
      const amount = 100 + (i % 99_900);
      // Spread over the day's first 20 hours, so every one is before the cutoff that ends the day.
      const created = new Date(start + Math.floor((i / 1_000_000) * 72_000_000)).toISOString();
      stored.push({
        ...template,
        requestHash: template.requestHash || 'f'.repeat(64),
        record: { ...template.record, id, idempotency_key: `bench-${i}`, amount, amount_authorized: amount, amount_captured: amount, created_at: created, captured_at: created },
      });
    }
    const claims = stored.map((s) => ({ page: String(s.record.id), entries: [{ ...s, record: { ...s.record, status: CLAIMED_STATUS } }] }));
    const claimed = await shard.stub.claim(shard.identity, claims, String(stored[0].record.created_at));
    if (!Array.isArray(claimed)) throw new Error(`claim: ${JSON.stringify(claimed)}`);
    const done = await shard.stub.complete(shard.identity, stored.map(answerOf));
    if (!Array.isArray(done)) throw new Error(`complete: ${JSON.stringify(done)}`);
  }
  return { shard: shard.identity };
}

const routes = {
  '/__bench/largest/seed': seed,
  '/__bench/largest/settle-step': ({ merchantId, now }, env) => env.MERCHANT_SETTLEMENT.getByName(merchantId).settleNow(merchantId, now),
  '/__bench/largest/retention-step': ({ shard, now }, env) => env.LEDGER_SHARD.getByName(shard).runRetention(now),
  '/__bench/largest/shard-info': ({ shard }, env) => env.LEDGER_SHARD.getByName(shard).benchInfo(),
};

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
