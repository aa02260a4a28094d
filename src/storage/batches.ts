/** D1 access for the `batches` table: ownership, listing and retention (live state is in the Durable Object). */
import type { Caller } from '../env';

export type BatchStatus = 'pending' | 'queued' | 'processing' | 'completed' | 'failed';

export interface BatchRow {
  id: string;
  merchant_id: string;
  key_id: string;
  file_name: string;
  status: BatchStatus;
  num_lines: number;
  num_chunks: number;
  processed_lines: number;
  columns: string[];
  ip_address: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
  results_deleted_at: string | null;
  /** The upload's keyed fingerprint and Idempotency-Key (absent on rows made before them). */
  upload_sha256?: string | null;
  upload_idempotency_key?: string | null;
}

type StoredBatchRow = Omit<BatchRow, 'columns'> & { columns: string };

function toBatch(row: StoredBatchRow): BatchRow {
  return { ...row, columns: JSON.parse(row.columns) as string[] };
}

const BATCH_COLUMNS = `id, merchant_id, key_id, file_name, status, num_lines, num_chunks, processed_lines,
                       columns, ip_address, failure_reason, created_at, updated_at, ended_at, results_deleted_at,
                       upload_sha256, upload_idempotency_key`;

function batchValues(batch: BatchRow): unknown[] {
  return [
    batch.id,
    batch.merchant_id,
    batch.key_id,
    batch.file_name,
    batch.status,
    batch.num_lines,
    batch.num_chunks,
    batch.processed_lines,
    JSON.stringify(batch.columns),
    batch.ip_address,
    batch.failure_reason,
    batch.created_at,
    batch.updated_at,
    batch.ended_at,
    batch.results_deleted_at,
    batch.upload_sha256 ?? null,
    batch.upload_idempotency_key ?? null,
  ];
}

export function insertBatchStatement(db: D1Database, batch: BatchRow): D1PreparedStatement {
  return db
    .prepare(`INSERT INTO batches (${BATCH_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)`)
    .bind(...batchValues(batch));
}

/** Who holds a file's duplicate window: the batch the merchant's last upload of these bytes made. */
export interface FingerprintClaim {
  merchantId: string;
  fingerprint: string;
  /** An older claim than this (created at or before it) has lapsed and is taken over. */
  lapsedAtOrBefore: string;
  /** `?allow_duplicate=true`: the upload takes the claim whatever its age. */
  takeOver: boolean;
}

/**
 * Inserts the batch row only if it can hold its file's fingerprint (`upload_fingerprints`, one row
 * per merchant and fingerprint): in one D1 transaction, a lapsed claim (or any, when taking over)
 * is removed, the claim is inserted unless another live one exists, and the batch row is inserted
 * only if the claim is its own. So any number of concurrent uploads of the same bytes make one
 * batch: D1 runs them one at a time, and the primary key lets one claim stand. Answers whether the
 * batch was inserted. The Idempotency-Key's unique index may still refuse it (then it throws, and
 * nothing of the transaction stays).
 */
export async function insertBatchHoldingFingerprint(db: D1Database, batch: BatchRow, claim: FingerprintClaim): Promise<boolean> {
  const [, , inserted] = await db.batch([
    db
      .prepare('DELETE FROM upload_fingerprints WHERE merchant_id = ?1 AND fingerprint = ?2 AND (created_at <= ?3 OR ?4 = 1)')
      .bind(claim.merchantId, claim.fingerprint, claim.lapsedAtOrBefore, claim.takeOver ? 1 : 0),
    db
      .prepare(
        `INSERT INTO upload_fingerprints (merchant_id, fingerprint, batch_id, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (merchant_id, fingerprint) DO NOTHING`,
      )
      .bind(claim.merchantId, claim.fingerprint, batch.id, batch.created_at),
    db
      .prepare(
        `INSERT INTO batches (${BATCH_COLUMNS})
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17
         WHERE EXISTS (SELECT 1 FROM upload_fingerprints WHERE merchant_id = ?2 AND fingerprint = ?16 AND batch_id = ?1)`,
      )
      .bind(...batchValues({ ...batch, upload_sha256: claim.fingerprint })),
  ]);
  return (inserted?.meta.changes ?? 0) === 1;
}

/** The batch holding this fingerprint's duplicate window for the merchant, if any. */
export async function findFingerprintHolder(db: D1Database, merchantId: string, fingerprint: string): Promise<string | null> {
  const row = await db
    .prepare('SELECT batch_id FROM upload_fingerprints WHERE merchant_id = ?1 AND fingerprint = ?2')
    .bind(merchantId, fingerprint)
    .first<{ batch_id: string }>();
  return row?.batch_id ?? null;
}

/** Takes back a batch row and its claim whose upload failed before the batch existed (its object never made). */
export async function deleteUnstartedBatch(db: D1Database, batch: Pick<BatchRow, 'id' | 'merchant_id' | 'upload_sha256'>): Promise<void> {
  const batchId = batch.id;
  await db.batch([
    db
      .prepare('DELETE FROM upload_fingerprints WHERE merchant_id = ?1 AND fingerprint = ?2 AND batch_id = ?3')
      .bind(batch.merchant_id, batch.upload_sha256 ?? '', batchId),
    db.prepare("DELETE FROM batches WHERE id = ?1 AND status = 'pending'").bind(batchId),
  ]);
}

/** Removes lapsed fingerprint claims, `limit` at most; answers how many (maintenance). */
export async function deleteFingerprintsBefore(db: D1Database, cutoff: string, limit: number): Promise<number> {
  const { results } = await db
    .prepare(
      `DELETE FROM upload_fingerprints WHERE (merchant_id, fingerprint) IN
         (SELECT merchant_id, fingerprint FROM upload_fingerprints WHERE created_at <= ?1 LIMIT ?2)
       RETURNING batch_id`,
    )
    .bind(cutoff, limit)
    .all<{ batch_id: string }>();
  return results.length;
}

/** The merchant's batch uploaded under this Idempotency-Key after `since`, if any. */
export async function findBatchByUploadKey(db: D1Database, merchantId: string, key: string, since: string): Promise<BatchRow | null> {
  const row = await db
    .prepare('SELECT * FROM batches WHERE merchant_id = ?1 AND upload_idempotency_key = ?2 AND created_at > ?3')
    .bind(merchantId, key, since)
    .first<StoredBatchRow>();
  return row ? toBatch(row) : null;
}

/**
 * Frees an Idempotency-Key whose upload is not after `before`, so a new upload can take it
 * (the unique index holds one batch per merchant and key).
 */
export async function releaseUploadKey(db: D1Database, merchantId: string, key: string, before: string): Promise<void> {
  await db
    .prepare('UPDATE batches SET upload_idempotency_key = NULL WHERE merchant_id = ?1 AND upload_idempotency_key = ?2 AND created_at <= ?3')
    .bind(merchantId, key, before)
    .run();
}

/** The merchant's latest batch after `since` whose file had this fingerprint, if any. */
export async function findBatchByUploadFingerprint(db: D1Database, merchantId: string, fingerprint: string, since: string): Promise<BatchRow | null> {
  const row = await db
    .prepare('SELECT * FROM batches WHERE merchant_id = ?1 AND upload_sha256 = ?2 AND created_at > ?3 ORDER BY created_at DESC LIMIT 1')
    .bind(merchantId, fingerprint, since)
    .first<StoredBatchRow>();
  return row ? toBatch(row) : null;
}

/** The batch if it belongs to this merchant; null for an unknown id or another merchant's batch. */
export async function findMerchantBatch(db: D1Database, merchantId: string, id: string): Promise<BatchRow | null> {
  const row = await db
    .prepare('SELECT * FROM batches WHERE id = ?1 AND merchant_id = ?2')
    .bind(id, merchantId)
    .first<StoredBatchRow>();
  return row ? toBatch(row) : null;
}

/** A batch with the caller who uploaded it, rebuilt for the chunk consumer (one query per chunk). */
export async function findBatchWithCaller(
  db: D1Database,
  id: string,
): Promise<{ batch: BatchRow; caller: Caller } | null> {
  const row = await db
    .prepare(
      `SELECT b.*, m.name AS merchant_name, m.enhanced_bin_lookup, m.surcharge_rate_bps, m.max_credit_amount, k.type AS key_type
       FROM batches b JOIN merchants m ON m.id = b.merchant_id JOIN api_keys k ON k.id = b.key_id
       WHERE b.id = ?1`,
    )
    .bind(id)
    .first<StoredBatchRow & { merchant_name: string; enhanced_bin_lookup: number; surcharge_rate_bps: number; max_credit_amount: number; key_type: Caller['keyType'] }>();
  if (!row) return null;
  const { merchant_name, enhanced_bin_lookup, surcharge_rate_bps, max_credit_amount, key_type, ...batch } = row;
  return {
    batch: toBatch(batch),
    caller: {
      merchantId: row.merchant_id,
      merchantName: merchant_name,
      keyId: row.key_id,
      keyType: key_type,
      enhancedBinLookup: enhanced_bin_lookup === 1,
      surchargeRateBps: surcharge_rate_bps,
      maxCreditAmount: max_credit_amount,
    },
  };
}

/** One page of a merchant's batches, newest first, and how many there are in all. */
export async function listMerchantBatches(
  db: D1Database,
  merchantId: string,
  limit: number,
  offset: number,
): Promise<{ batches: BatchRow[]; total: number }> {
  const [page, count] = await db.batch([
    db
      .prepare('SELECT * FROM batches WHERE merchant_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2 OFFSET ?3')
      .bind(merchantId, limit, offset),
    db.prepare('SELECT COUNT(*) AS total FROM batches WHERE merchant_id = ?1').bind(merchantId),
  ]);
  const rows = (page?.results ?? []) as StoredBatchRow[];
  const total = ((count?.results ?? [])[0] as { total: number } | undefined)?.total ?? 0;
  return { batches: rows.map(toBatch), total };
}

export interface BatchStateChange {
  status: BatchStatus;
  processedLines: number;
  updatedAt: string;
  /** Set when the batch completes or fails. */
  endedAt: string | null;
  failureReason: string | null;
}

/**
 * Mirrors the Durable Object's state (called at each transition). Mirror writes of one batch can
 * land out of order; a row that has ended is never moved back by a late one. Once ended, only
 * `processed_lines` may still rise: the rows of chunks that were running when the batch failed (a
 * cancel), counted as they land.
 */
export async function updateBatchState(db: D1Database, id: string, change: BatchStateChange): Promise<void> {
  await db
    .prepare(
      `UPDATE batches SET status = ?2, processed_lines = MAX(processed_lines, ?3), updated_at = ?4,
              ended_at = COALESCE(ended_at, ?5), failure_reason = COALESCE(failure_reason, ?6)
       WHERE id = ?1 AND (ended_at IS NULL OR (status = ?2 AND processed_lines < ?3))`,
    )
    .bind(id, change.status, change.processedLines, change.updatedAt, change.endedAt, change.failureReason)
    .run();
}

/** Ended batches (completed or failed) whose results are still stored and ended before `cutoff`. */
export async function listBatchesEndedBefore(db: D1Database, cutoff: string, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT id FROM batches WHERE results_deleted_at IS NULL AND ended_at IS NOT NULL AND ended_at < ?1
       ORDER BY ended_at LIMIT ?2`,
    )
    .bind(cutoff, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

/** One statement for the whole list (the ids travel as one JSON parameter, clear of D1's 100-parameter limit). */
export async function markResultsDeleted(db: D1Database, ids: string[], at: string): Promise<void> {
  if (ids.length === 0) return;
  await db
    .prepare('UPDATE batches SET results_deleted_at = ?2 WHERE id IN (SELECT value FROM json_each(?1))')
    .bind(JSON.stringify(ids), at)
    .run();
}

/**
 * Deletes up to `limit` batch records created before `cutoff` (their ledger shards archived, their
 * results long gone); answers how many. Uses `batches_created`.
 */
export async function deleteBatchesCreatedBefore(db: D1Database, cutoff: string, limit: number): Promise<number> {
  const { results } = await db
    .prepare('DELETE FROM batches WHERE id IN (SELECT id FROM batches WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING id')
    .bind(cutoff, limit)
    .all<{ id: string }>();
  return results.length;
}
