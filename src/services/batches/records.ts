/**
 * A batch as the API shows it: the D1 row (ownership, file name) with the live state of its Durable
 * Object laid over it while the batch runs.
 */
import type { Env } from '../../env';
import { isoTimestamp, type Clock } from '../../lib/time';
import { deleteBatchesCreatedBefore, findMerchantBatch, listMerchantBatches, type BatchRow } from '../../storage/batches';
import { retentionDays } from '../transactions/ledger';
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
    // Only the object knows; an ended batch (answered from D1 alone) is never paused.
    paused: live?.paused ?? false,
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


/** Batch records deleted per statement. */
const RECORDS_PER_STATEMENT = 500;

/**
 * Retention of batch records: a batch's D1 row is deleted one day after its ledger shard passed
 * TRANSACTION_RETENTION_DAYS and was archived (its transaction ids then answer "archived" by the day
 * they carry). Bounded like every maintenance job: at most `maxStatements` statements, then the next run.
 */
export async function deleteExpiredBatchRecords(env: Env, clock: Clock, maxStatements = Infinity): Promise<{ removed: number; finished: boolean }> {
  const cutoff = isoTimestamp(new Date(clock().getTime() - (retentionDays(env) + 1) * 86_400_000));
  let removed = 0;
  for (let statements = 0; statements < maxStatements; statements++) {
    const deleted = await deleteBatchesCreatedBefore(env.DB, cutoff, RECORDS_PER_STATEMENT);
    removed += deleted;
    if (deleted < RECORDS_PER_STATEMENT) return { removed, finished: true };
  }
  return { removed, finished: false };
}
