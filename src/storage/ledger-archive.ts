/**
 * R2 layout of ledger archives: `ledger-archive/{merchant id}/{shard}.ndjson.gz`, one gzip file of
 * newline-delimited JSON per shard, one record per line (no card number, no CVC, no request hash).
 * Written once, when the shard passes TRANSACTION_RETENTION_DAYS, then the shard is emptied.
 */

/** R2 multipart parts must be at least 5 MiB, except the last. */
const PART_BYTES = 5 * 1024 * 1024;

export function ledgerArchiveKey(shardName: string): string {
  // The shard name starts with the merchant id (services/transactions/ledger.ts), so one merchant's
  // archives share a prefix.
  return `ledger-archive/${shardName}.ndjson.gz`;
}

/**
 * Writes the lines `next()` hands out (null: no more) gzip-compressed to `key`, holding at most
 * about one R2 part (5 MiB of compressed bytes) in memory; answers the number of lines written.
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

  const reader = gzip.readable.getReader();
  let buffered: Uint8Array[] = [];
  let size = 0;
  let upload: R2MultipartUpload | null = null;
  const parts: R2UploadedPart[] = [];
  const joined = () => {
    const out = new Uint8Array(size);
    let at = 0;
    for (const piece of buffered) {
      out.set(piece, at);
      at += piece.length;
    }
    buffered = [];
    size = 0;
    return out;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffered.push(value);
      size += value.length;
      if (size >= PART_BYTES) {
        upload ??= await bucket.createMultipartUpload(key, { httpMetadata: { contentType: 'application/x-ndjson', contentEncoding: 'gzip' } });
        parts.push(await upload.uploadPart(parts.length + 1, joined()));
      }
    }
    await feeding;
    if (upload === null) {
      await bucket.put(key, joined(), { httpMetadata: { contentType: 'application/x-ndjson', contentEncoding: 'gzip' } });
    } else {
      if (size > 0) parts.push(await upload.uploadPart(parts.length + 1, joined()));
      await upload.complete(parts);
    }
  } catch (err) {
    await upload?.abort().catch(() => undefined);
    throw err;
  }
  return lines;
}
