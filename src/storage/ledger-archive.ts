/**
 * R2 layout of ledger archives: `ledger-archive/{merchant id}/{shard}/{part}.ndjson.gz`, numbered
 * from 00001, each a gzip file of newline-delimited JSON, one record per line (no card number, no
 * CVC, no request hash). A shard is archived in bounded steps, one file per step, when it passes
 * TRANSACTION_RETENTION_DAYS, then emptied; read its files in order (a later line for an id wins:
 * transactions changed since processed, and refunds, come last).
 */
import { R2 } from '../lib/platform-limits';
import { R2UploadWriter, UPLOAD_PART_BYTES } from './batch-files';

// R2 multipart parts must all be the same size but the last, and at least R2.minPartBytes:
// R2UploadWriter cuts exactly UPLOAD_PART_BYTES per part.
if (UPLOAD_PART_BYTES < R2.minPartBytes) throw new Error('archive parts below R2 minimum');

/** Where a shard's archive files are (the shard name starts with the merchant id, so one merchant's archives share a prefix). */
export function ledgerArchiveKey(shardName: string): string {
  return `ledger-archive/${shardName}/`;
}

/** Whether a shard's archive was begun in R2 (one list call of one key): an id past retention is "archived" only then. */
export async function hasLedgerArchive(bucket: R2Bucket, shardName: string): Promise<boolean> {
  // Only files directly under it: an API day's sub-shards archive under `{day}/{k}/`, inside the day's own prefix.
  const listed = await bucket.list({ prefix: ledgerArchiveKey(shardName), delimiter: '/', limit: 1 });
  return listed.objects.length > 0;
}

export function ledgerArchivePartKey(shardName: string, part: number): string {
  return `${ledgerArchiveKey(shardName)}${String(part).padStart(5, '0')}.ndjson.gz`;
}

/**
 * Writes the lines `next()` hands out (null: no more) gzip-compressed to `key`, holding at most one
 * R2 part (5 MiB of compressed bytes) and the lines of one call in memory; answers the number of
 * lines written. Writing the same key again replaces it.
 */
export async function writeArchive(bucket: R2Bucket, key: string, next: () => Promise<string[] | null>): Promise<number> {
  const gzip = new CompressionStream('gzip');
  const writer = gzip.writable.getWriter();
  const encoder = new TextEncoder();
  let lines = 0;
  const feeding = (async () => {
    try {
      for (let batch = await next(); batch !== null; batch = await next()) {
        if (batch.length === 0) continue;
        lines += batch.length;
        await writer.write(encoder.encode(`${batch.join('\n')}\n`));
      }
      await writer.close();
    } catch (err) {
      // The reader below then fails too, instead of waiting for bytes that never come.
      await writer.abort(err).catch(() => undefined);
      throw err;
    }
  })();
  feeding.catch(() => undefined);

  const upload = new R2UploadWriter(bucket, key, { contentType: 'application/x-ndjson', contentEncoding: 'gzip' });
  const reader = gzip.readable.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await upload.write(value);
    }
    await feeding;
    await upload.finish();
  } catch (err) {
    await upload.abort().catch(() => undefined);
    throw err;
  }
  return lines;
}
