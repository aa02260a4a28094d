/**
 * Filling a ledger shard fast for tests of its limits: records copied from a real transaction of the
 * merchant (each with its own id and key), written through the shard's own `claim` and `complete`,
 * as the engine writes them, many per call.
 */
import { env } from 'cloudflare:workers';
import type { Caller } from '../../src/env';
import { processTransactions } from '../../src/services/recorded';
import { apiShardName } from './ledger';
import { shardEntryList } from './ledger';
import { chunkPage, shardFor, utcDay, type Shard, type ShardKey } from '../../src/services/transactions/ledger';
import { answerOf, CLAIMED_STATUS, type StoredTransaction } from '../../src/storage/ledger-shard';
import type { TransactionInput } from '../../src/schemas/transaction-columns';

/** A real API sale of the caller at `at`, as its day shard stores it. */
export async function templateRecord(caller: Caller, at: Date, input: TransactionInput): Promise<StoredTransaction> {
  const [outcome] = await processTransactions(env, caller, [{ input, idempotencyKey: crypto.randomUUID() }], { source: 'api', ipAddress: null }, () => at);
  if (!outcome?.ok) throw new Error(`template transaction failed: ${JSON.stringify(outcome)}`);
  const stored = (await shardEntryList(apiShardName(caller.merchantId, utcDay(at)))).find((s) => s.record.id === outcome.record.id);
  if (!stored) throw new Error('template not stored');
  return stored;
}

/** `count` copies of `template`, each with its own id, key and amount (`fill` changes more). */
export function likeRecords(template: StoredTransaction, count: number, prefix: string, fill: (record: StoredTransaction['record'], i: number) => void = () => {}): StoredTransaction[] {
  return Array.from({ length: count }, (_, i) => {
    const record = { ...template.record, id: `txn_${prefix}${String(i).padStart(7, '0')}`, idempotency_key: `${prefix}-${i}`, amount: 100 + i, amount_authorized: 100 + i, amount_captured: 100 + i };
    fill(record, i);
    return { ...template, record, line: i + 1 };
  });
}

/** A shard of the caller's merchant, named by `key`, whose period began at `periodStart`. */
export function shardOf(key: ShardKey, periodStart: string): Shard {
  return shardFor(env, key, periodStart);
}

/**
 * Writes `records` into `shard` through its claim and complete, `perCall` at a time: one page per
 * record in an API shard, one per call (a chunk) in a batch shard.
 */
export async function seedShard(shard: Shard, records: readonly StoredTransaction[], perCall: number): Promise<void> {
  const api = shard.identity.name.includes('/api/');
  for (let from = 0; from < records.length; from += perCall) {
    const part = records.slice(from, from + perCall);
    const claims = part.map((stored) => ({ ...stored, record: { ...stored.record, status: CLAIMED_STATUS } }));
    const requests = api ? claims.map((stored) => ({ page: String(stored.record.id), entries: [stored] })) : [{ page: chunkPage(from + 1), entries: claims }];
    const claimed = await shard.stub.claim(shard.identity, requests, String(part[0]?.record.created_at));
    if (!Array.isArray(claimed) || claimed.length !== part.length) throw new Error(`claim failed: ${JSON.stringify(claimed).slice(0, 300)}`);
    const done = await shard.stub.complete(shard.identity, part.map(answerOf));
    if (!Array.isArray(done) || done.length !== part.length) throw new Error(`complete failed: ${JSON.stringify(done).slice(0, 300)}`);
  }
}

/** `length` random characters of base32: text gzip cannot shrink much (5 bits of 8 per character). */
export function randomText(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let text = '';
  for (const byte of bytes) text += alphabet[byte & 31];
  return text;
}
