/**
 * The shapes of a batch's live state, shared by its Durable Object (which keeps them) and the
 * services that read or move them. Kept here, below both, so neither imports the other for a type.
 */
import type { BatchInit, ChunkLines, ProgressState } from '../../storage/batch-progress';
import type { BatchStatus } from '../../storage/batches';

export type { BatchInit, BatchStatus, ChunkLines };

/** The batch as its object answers it: the stored state less the object's own bookkeeping. */
export interface BatchSnapshot
  extends Pick<ProgressState, 'batchId' | 'status' | 'numLines' | 'processedLines' | 'numChunks' | 'chunksDone' | 'failureReason' | 'createdAt' | 'updatedAt'> {
  /** Paused by the merchant: no chunk is sent until resumed. Always false once the batch has ended. */
  paused: boolean;
}

export interface ChunkRecorded {
  /** False when this chunk had been recorded before (a redelivery) or the batch had ended. */
  counted: boolean;
  batch: BatchSnapshot;
}

/** A chunk the object could not record; the message is the failure's, for the caller's log. */
export interface ChunkNotRecorded {
  failed: string;
}

/** What a partial download reads from the batch's object. */
export interface PartialView {
  /** False while chunks that were running when the batch failed may still land (and be counted). */
  settled: boolean;
  chunks: ChunkLines[];
}

/** What the object answers of its stored state. */
export function toSnapshot(state: ProgressState): BatchSnapshot {
  return {
    batchId: state.batchId,
    status: state.status,
    numLines: state.numLines,
    processedLines: state.processedLines,
    numChunks: state.numChunks,
    chunksDone: state.chunksDone,
    paused: state.paused && !hasEnded(state.status),
    failureReason: state.failureReason,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
  };
}

export const ENDED_STATUSES: ReadonlySet<BatchStatus> = new Set(['completed', 'failed']);

export function hasEnded(status: BatchStatus): boolean {
  return ENDED_STATUSES.has(status);
}

/** The failure reason of a batch the merchant cancelled (POST /api/filebatch/{id}/cancel). */
export const CANCELLED_BY_MERCHANT = 'cancelled by the merchant';

/** The failure reason of a batch left paused for `days` days: it is cancelled (docs/batch.md, "Pause, resume, cancel"). */
export function cancelledAfterPause(days: number): string {
  return `cancelled: paused for ${days} days without being resumed`;
}

/** Whether a failed batch was cancelled (by the merchant, or after a long pause) rather than failing. */
export function wasCancelled(failureReason: string | null): boolean {
  return failureReason !== null && failureReason.startsWith('cancelled');
}

/** What pause, resume and cancel answer: the batch, or that it has ended (then nothing changed). */
export type BatchControlOutcome = { ok: true; batch: BatchSnapshot } | { ok: false; reason: 'ended'; batch: BatchSnapshot };
