/**
 * Pause, resume and cancel a running batch (POST /api/filebatch/{id}/pause|resume|cancel). The
 * batch's object decides (it owns the state machine and the window of chunks in flight); a cancel
 * ends the batch through the same transition as any failure, so the lifecycle mirrors it into D1,
 * deletes the uploaded file and sends `batch.failed`.
 */
import type { Env } from '../../env';
import { findMerchantBatch } from '../../storage/batches';
import { toRecord, type BatchRecord } from './records';
import { CANCELLED_BY_MERCHANT, hasEnded, type BatchControlOutcome, type BatchStatus } from './state';

export type BatchAction = 'pause' | 'resume' | 'cancel';

export type ControlOutcome =
  | { ok: true; batch: BatchRecord }
  /** No such batch for this merchant. */
  | { ok: false; reason: 'not_found' }
  /** The batch has ended: nothing changed. */
  | { ok: false; reason: 'ended'; status: BatchStatus };

export async function controlBatch(env: Env, merchantId: string, id: string, action: BatchAction): Promise<ControlOutcome> {
  const row = await findMerchantBatch(env.DB, merchantId, id);
  if (!row) return { ok: false, reason: 'not_found' };
  // An ended batch's D1 mirror is final; its object may already be gone with its results.
  if (hasEnded(row.status)) return { ok: false, reason: 'ended', status: row.status };
  const progress = env.BATCH_PROGRESS.getByName(id);
  let outcome: BatchControlOutcome | null;
  switch (action) {
    case 'pause':
      outcome = await progress.pause();
      break;
    case 'resume':
      outcome = await progress.resume();
      break;
    case 'cancel':
      outcome = await progress.cancel(CANCELLED_BY_MERCHANT);
      break;
  }
  // A D1 row without its object: an upload that stopped half way, never a batch the merchant saw run.
  if (!outcome) return { ok: false, reason: 'not_found' };
  if (!outcome.ok) return { ok: false, reason: 'ended', status: outcome.batch.status };
  return { ok: true, batch: toRecord(row, outcome.batch) };
}
