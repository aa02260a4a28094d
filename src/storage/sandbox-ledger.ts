/**
 * D1 access for `sandbox_charges`: the built-in sandbox processor's own record of every charge it
 * was asked for, keyed by (processor, idempotency key), the way a gateway keeps its transactions
 * by order id. Only the sandbox processor uses it. It holds no card data: the answer is codes and
 * texts. `charge_calls` and `lookup_calls` count how often a key was sent and looked up, so tests
 * (and an operator) can see that the engine asked once.
 */
import { jsonArrayParameters } from '../lib/json-parameters';

export interface SandboxChargeEntry {
  idempotencyKey: string;
  type: string;
  /** Minor units. */
  amount: number;
  paymentType: 'card' | 'ach';
  /** The answer, as JSON. */
  result: string;
}

export interface SandboxLedgerRow extends SandboxChargeEntry {
  chargeCalls: number;
  lookupCalls: number;
  createdAt: string;
}

// A key asked again keeps its first answer (gateways deduplicate on it) and counts the call; an
// entry made before ?4 is past the key's window, and the charge under the key is a new one.
// (SET expressions read the row as it was, so each CASE sees the old created_at.)
const RECORD_SQL = `INSERT INTO sandbox_charges (processor_id, idempotency_key, type, amount, payment_type, result, created_at)
  SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
         json_extract(value, '$[3]'), json_extract(value, '$[4]'), ?2
  FROM json_each(?3) WHERE true
  ON CONFLICT (processor_id, idempotency_key) DO UPDATE SET
    type = CASE WHEN created_at < ?4 THEN excluded.type ELSE type END,
    amount = CASE WHEN created_at < ?4 THEN excluded.amount ELSE amount END,
    payment_type = CASE WHEN created_at < ?4 THEN excluded.payment_type ELSE payment_type END,
    result = CASE WHEN created_at < ?4 THEN excluded.result ELSE result END,
    charge_calls = CASE WHEN created_at < ?4 THEN 1 ELSE charge_calls + 1 END,
    lookup_calls = CASE WHEN created_at < ?4 THEN 0 ELSE lookup_calls END,
    created_at = CASE WHEN created_at < ?4 THEN excluded.created_at ELSE created_at END
  RETURNING idempotency_key, result`;

/**
 * Records charges (one statement per ~900 KB) and answers each key's stored answer: its first one
 * within the key's window, which starts at the first charge made on or after `windowStart`.
 */
export async function recordSandboxCharges(
  db: D1Database,
  processorId: string,
  entries: readonly SandboxChargeEntry[],
  createdAt: string,
  windowStart: string,
): Promise<Map<string, string>> {
  if (entries.length === 0) return new Map();
  const rows = entries.map((e) => JSON.stringify([e.idempotencyKey, e.type, e.amount, e.paymentType, e.result]));
  const results = await db.batch<{ idempotency_key: string; result: string }>(
    jsonArrayParameters(rows).map((json) => db.prepare(RECORD_SQL).bind(processorId, createdAt, json, windowStart)),
  );
  return new Map(results.flatMap((r) => r.results.map((row) => [row.idempotency_key, row.result] as const)));
}

/** The stored answers for `keys` (absent: never charged), counting one lookup on each key found. */
export async function findSandboxCharges(db: D1Database, processorId: string, keys: readonly string[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `UPDATE sandbox_charges SET lookup_calls = lookup_calls + 1
       WHERE processor_id = ?1 AND idempotency_key IN (SELECT value FROM json_each(?2))
       RETURNING idempotency_key, result`,
    )
    .bind(processorId, JSON.stringify(keys))
    .all<{ idempotency_key: string; result: string }>();
  return new Map(results.map((row) => [row.idempotency_key, row.result]));
}

/** Every entry of a processor, oldest first (tests and operators: what was charged, how often). */
export async function listSandboxLedger(db: D1Database, processorId: string): Promise<SandboxLedgerRow[]> {
  const { results } = await db
    .prepare('SELECT * FROM sandbox_charges WHERE processor_id = ?1 ORDER BY created_at, idempotency_key')
    .bind(processorId)
    .all<{
      idempotency_key: string;
      type: string;
      amount: number;
      payment_type: 'card' | 'ach';
      result: string;
      charge_calls: number;
      lookup_calls: number;
      created_at: string;
    }>();
  return results.map((row) => ({
    idempotencyKey: row.idempotency_key,
    type: row.type,
    amount: row.amount,
    paymentType: row.payment_type,
    result: row.result,
    chargeCalls: row.charge_calls,
    lookupCalls: row.lookup_calls,
    createdAt: row.created_at,
  }));
}
