// Bench-only Worker entry for `npm run bench -- --only bigday` (never used by `npm run dev` or a
// deploy): the largest group's entry (the service unchanged, plus its settle and retention steps),
// and the SQLite size of each of a merchant's objects, so the bench can print each object's size
// and its projection to the design volume:
//   POST /__bench/bigday/sizes   { merchantId, processorId, days, weeks, shards } → bytes per object
import largest, { LedgerShard } from './largest-entry.mjs';
import {
  MerchantSettlement as ServiceSettlement,
  SandboxAcquirer as ServiceAcquirer,
  SearchDay as ServiceSearchDay,
  SearchDirectory as ServiceSearchDirectory,
  SearchKeys as ServiceSearchKeys,
} from '../../src/index.ts';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox.ts';
import { SEARCH_PARTS, searchDayName, searchKeysName } from '../../src/services/search/names.ts';

export * from './largest-entry.mjs';
export { LedgerShard };

const sized = (Base) =>
  class extends Base {
    /** The object's SQLite size (bench only). */
    async benchSize() {
      return this.ctx.storage.sql.databaseSize;
    }
  };
export const MerchantSettlement = sized(ServiceSettlement);
export const SandboxAcquirer = sized(ServiceAcquirer);
export const SearchDay = sized(ServiceSearchDay);
export const SearchKeys = sized(ServiceSearchKeys);
export const SearchDirectory = sized(ServiceSearchDirectory);

async function sizes({ merchantId, processorId, days, weeks, shards }, env) {
  const out = {};
  out[`MerchantSettlement ${merchantId}`] = await env.MERCHANT_SETTLEMENT.getByName(merchantId).benchSize();
  out[`SearchDirectory ${merchantId}`] = await env.SEARCH_DIRECTORY.getByName(merchantId).benchSize();
  for (const day of days) {
    // Each part of the day's index is an object of its own (services/search/names.ts): each sized.
    for (let part = 0; part < SEARCH_PARTS; part++) out[`SearchDay ${day}${part === 0 ? '' : `/${part}`}`] = await env.SEARCH_DAY.getByName(searchDayName(merchantId, day, part)).benchSize();
    out[`SandboxAcquirer ${day}`] = await env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(processorId, day)).benchSize();
  }
  for (const week of weeks) {
    for (let part = 0; part < SEARCH_PARTS; part++) out[`SearchKeys ${week}${part === 0 ? '' : `/${part}`}`] = await env.SEARCH_KEYS.getByName(searchKeysName(merchantId, week, part)).benchSize();
  }
  for (const shard of shards) out[`LedgerShard ${shard}`] = (await env.LEDGER_SHARD.getByName(shard).benchInfo()).bytes;
  return out;
}

export default {
  ...largest,
  async fetch(request, env, ctx) {
    if (request.method === 'POST' && new URL(request.url).pathname === '/__bench/bigday/sizes') {
      try {
        return Response.json(await sizes(await request.json(), env));
      } catch (error) {
        return Response.json({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, { status: 500 });
      }
    }
    return largest.fetch(request, env, ctx);
  },
};
