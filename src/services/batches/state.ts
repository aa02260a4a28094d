/**
 * The shapes of a batch's live state, shared by its Durable Object (which keeps them) and the
 * services that read or move them. Kept here, below both, so neither imports the other for a type.
 */
import type { CsvChunk } from '../../lib/batch-csv';
import type { BatchStatus } from '../../storage/batches';

export type { BatchStatus };

export interface BatchSnapshot {
  batchId: string;
  status: BatchStatus;
  numLines: number;
  processedLines: number;
  numChunks: number;
  chunksDone: number;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface BatchInit {
  batchId: string;
  numLines: number;
  chunks: CsvChunk[];
  createdAt: string;
}

export interface ChunkRecorded {
  /** False when this chunk had been recorded before (a redelivery) or the batch had ended. */
  counted: boolean;
  batch: BatchSnapshot;
}

/** Where a chunk's rows are in the file, by line (a partial download reports the rows of chunks without results). */
export interface ChunkLines {
  chunk: number;
  firstLine: number;
  rows: number;
}

export const ENDED_STATUSES: ReadonlySet<BatchStatus> = new Set(['completed', 'failed']);

export function hasEnded(status: BatchStatus): boolean {
  return ENDED_STATUSES.has(status);
}
