/** D1 access for the `api_keys` table. Only SHA-256 hashes of keys are stored. */
import type { Caller, KeyType } from '../env';
import { scheduleOfRow } from './api-shards';

export interface ApiKeyRecord {
  id: string;
  merchant_id: string;
  type: KeyType;
  key_hash: string;
  key_prefix: string;
  created_at: string;
}

export function insertApiKeyStatement(db: D1Database, key: ApiKeyRecord): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO api_keys (id, merchant_id, type, key_hash, key_prefix, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
    )
    .bind(key.id, key.merchant_id, key.type, key.key_hash, key.key_prefix, key.created_at);
}

interface CallerRow {
  key_id: string;
  key_type: KeyType;
  merchant_id: string;
  merchant_name: string;
  enhanced_bin_lookup: number;
  surcharge_rate_bps: number;
  max_credit_amount: number;
  rate_tier: 'standard' | 'high' | 'max';
  api_shards: number | null;
  api_shards_from: string | null;
  api_shards_before: number | null;
}

const CALLER_SELECT = `SELECT k.key_hash, k.id AS key_id, k.type AS key_type, m.id AS merchant_id, m.name AS merchant_name,
              m.enhanced_bin_lookup, m.surcharge_rate_bps, m.max_credit_amount, COALESCE(t.rate_tier, 'standard') AS rate_tier,
              s.api_shards, s.api_shards_from, s.api_shards_before
       FROM api_keys k JOIN merchants m ON m.id = k.merchant_id LEFT JOIN merchant_rate_tiers t ON t.merchant_id = m.id
       LEFT JOIN merchant_api_shards s ON s.merchant_id = m.id`;

function toCaller(row: CallerRow): Caller {
  const apiShards = scheduleOfRow(row);
  return {
    keyId: row.key_id,
    keyType: row.key_type,
    merchantId: row.merchant_id,
    merchantName: row.merchant_name,
    enhancedBinLookup: row.enhanced_bin_lookup === 1,
    surchargeRateBps: row.surcharge_rate_bps,
    maxCreditAmount: row.max_credit_amount,
    rateTier: row.rate_tier,
    ...(apiShards ? { apiShards } : {}),
  };
}

/** The caller behind an active (not revoked) key, or null. */
export async function findCallerByKeyHash(db: D1Database, keyHash: string): Promise<Caller | null> {
  const row = await db.prepare(`${CALLER_SELECT} WHERE k.key_hash = ?1 AND k.revoked_at IS NULL`).bind(keyHash).first<CallerRow>();
  return row ? toCaller(row) : null;
}

/** The callers behind those of the keys that are active, by key hash (one statement: the hashes travel as one JSON parameter). */
export async function findCallersByKeyHashes(db: D1Database, keyHashes: readonly string[]): Promise<Map<string, Caller>> {
  if (keyHashes.length === 0) return new Map();
  const { results } = await db
    .prepare(`${CALLER_SELECT} WHERE k.key_hash IN (SELECT value FROM json_each(?1)) AND k.revoked_at IS NULL`)
    .bind(JSON.stringify(keyHashes))
    .all<CallerRow & { key_hash: string }>();
  return new Map(results.map((row) => [row.key_hash, toCaller(row)]));
}

/**
 * Marks a key revoked. Answers its hash (to drop cached auth) and whether this call revoked it;
 * null when no key has that id. A key revoked before answers its hash too: dropping its cache entry
 * again is how a revocation whose drop failed is completed.
 */
export async function revokeApiKey(db: D1Database, id: string, revokedAt: string): Promise<{ keyHash: string; revoked: boolean } | null> {
  const [updated, existing] = await db.batch([
    db.prepare('UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL RETURNING key_hash').bind(id, revokedAt),
    db.prepare('SELECT key_hash FROM api_keys WHERE id = ?1').bind(id),
  ]);
  const keyHash = ((existing?.results ?? [])[0] as { key_hash: string } | undefined)?.key_hash;
  if (keyHash === undefined) return null;
  return { keyHash, revoked: (updated?.results ?? []).length === 1 };
}

/** The ids of a merchant's active (not revoked) keys of one type. */
export async function listActiveKeyIds(db: D1Database, merchantId: string, type: KeyType): Promise<string[]> {
  const { results } = await db
    .prepare('SELECT id FROM api_keys WHERE merchant_id = ?1 AND type = ?2 AND revoked_at IS NULL')
    .bind(merchantId, type)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

export async function listActiveKeyHashes(db: D1Database, merchantId: string): Promise<string[]> {
  const { results } = await db
    .prepare('SELECT key_hash FROM api_keys WHERE merchant_id = ?1 AND revoked_at IS NULL')
    .bind(merchantId)
    .all<{ key_hash: string }>();
  return results.map((row) => row.key_hash);
}
