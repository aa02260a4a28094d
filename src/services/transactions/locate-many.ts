/**
 * `locateTransaction` for many ids at once (a batch chunk's capture, void and refund rows): a
 * transaction made by a batch file is found through its batch's D1 row, read once per batch here
 * rather than once per id (a file capturing another file's 500 rows makes one D1 read, not 500).
 */
import type { Env } from '../../env';
import { locateTransaction, type TransactionLocation } from './engine';
import { chunkPage, parseTransactionId } from './ledger';

export async function locateMany(env: Env, merchantId: string, ids: readonly string[], now: Date): Promise<TransactionLocation[]> {
  const batches = new Map<string, Promise<TransactionLocation>>();
  return Promise.all(
    ids.map(async (id) => {
      const named = parseTransactionId(id);
      const parsed = named?.kind === 'refund' ? named.original : named;
      if (parsed?.kind !== 'batch' || named === null) return locateTransaction(env, merchantId, id, now);
      // Every transaction of a batch is in its batch's shard: the first id's location names it.
      let first = batches.get(parsed.batchId);
      if (!first) {
        first = locateTransaction(env, merchantId, id, now);
        batches.set(parsed.batchId, first);
      }
      const located = await first;
      if (!located.ok) return located;
      const query = named.kind === 'refund' ? { ids: [id], exact: [], floor: [] } : { ids: [id], exact: [], floor: [chunkPage(parsed.line)] };
      return { ...located, query };
    }),
  );
}
