/**
 * What a chunk's capture, void and refund rows act on, written before they run, so that the partial
 * download of a batch that failed mid-chunk can report them. A charge row is found by its key in
 * the batch's own ledger shard; an operation is recorded in the shard of the transaction it acts on,
 * which the row names only in the uploaded file, and that file is deleted when the batch fails. The
 * manifest holds transaction ids and line numbers only (no card data), sits beside the result parts
 * (`results/{batch}/ops-{chunk}.json`) and is deleted with them.
 */
import type { OperationKind } from '../../storage/ledger-shard';

export interface ManifestEntry {
  line: number;
  kind: OperationKind;
  transactionId: string;
}

function manifestKey(batchId: string, chunk: number): string {
  return `results/${batchId}/ops-${String(chunk).padStart(6, '0')}.json`;
}

/** At most one chunk's rows (500 entries, ~60 bytes each): one R2 write per chunk with lifecycle rows. */
export async function putOperationManifest(bucket: R2Bucket, batchId: string, chunk: number, entries: readonly ManifestEntry[]): Promise<void> {
  await bucket.put(manifestKey(batchId, chunk), JSON.stringify(entries), { httpMetadata: { contentType: 'application/json' } });
}

export async function getOperationManifest(bucket: R2Bucket, batchId: string, chunk: number): Promise<ManifestEntry[]> {
  const object = await bucket.get(manifestKey(batchId, chunk));
  return object ? ((await object.json()) as ManifestEntry[]) : [];
}

/** What a partial download says of a lifecycle row of a chunk that did not finish. */
export const OPERATION_UNFINISHED_TEXT =
  'the batch failed before this row\'s result was written: the transaction it names is shown as it is now (it may or may not have been acted on)';
