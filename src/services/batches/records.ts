/**
 * A batch as the API shows it: the D1 row (ownership, file name) with the live state of its Durable
 * Object laid over it while the batch runs.
 */
import type { Env } from '../../env';
import { findMerchantBatch, listMerchantBatches, type BatchRow } from '../../storage/batches';
import type { BatchRecord } from '../../schemas/filebatch-response';
import type { BatchSnapshot } from './state';

export type { BatchRecord };

export function toRecord(row: BatchRow, live: BatchSnapshot | null): BatchRecord {
  const status = live?.status ?? row.status;
  const record: BatchRecord = {
    id: row.id,
    user_id: row.merchant_id,
    file_name: row.file_name,
    status,
    num_lines: row.num_lines,
    processed_lines: live?.processedLines ?? row.processed_lines,
    created_at: row.created_at,
    updated_at: live?.updatedAt ?? row.updated_at,
  };
  const reason = live?.failureReason ?? row.failure_reason;
  if (status === 'failed' && reason) record.failure_reason = reason;
  return record;
}

/** The live record of a merchant's batch; null for an unknown id or another merchant's batch. */
export async function getBatch(env: Env, merchantId: string, id: string): Promise<BatchRecord | null> {
  const row = await findMerchantBatch(env.DB, merchantId, id);
  if (!row) return null;
  // An ended batch's mirror is final, and its object is deleted with its results: not woken.
  if (row.status === 'completed' || row.status === 'failed') return toRecord(row, null);
  return toRecord(row, await env.BATCH_PROGRESS.getByName(id).snapshot());
}

/** A page of the merchant's batches, newest first. Only batches still running ask their object. */
export async function listBatches(
  env: Env,
  merchantId: string,
  page: { limit: number; offset: number },
): Promise<{ batches: BatchRecord[]; total: number }> {
  const { batches, total } = await listMerchantBatches(env.DB, merchantId, page.limit, page.offset);
  const records = await Promise.all(
    batches.map(async (row) =>
      row.status === 'completed' || row.status === 'failed'
        ? toRecord(row, null)
        : toRecord(row, await env.BATCH_PROGRESS.getByName(row.id).snapshot()),
    ),
  );
  return { batches: records, total };
}

