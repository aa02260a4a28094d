/**
 * R2 layout of batch files (FILES bucket):
 *   uploads/{batchId}.csv            the uploaded file, as sent; deleted when the batch ends
 *   results/{batchId}/{chunk}.csv    one result part per chunk (chunk zero-padded to 6 digits),
 *                                    deleted by the retention cron
 */

/** R2 multipart parts must all be the same size (except the last) and at least 5 MiB. */
export const UPLOAD_PART_BYTES = 5 * 1024 * 1024;

export function uploadKey(batchId: string): string {
  return `uploads/${batchId}.csv`;
}

export function resultPartKey(batchId: string, chunk: number): string {
  return `results/${batchId}/${String(chunk).padStart(6, '0')}.csv`;
}

/**
 * Writes a stream of unknown length to R2 with bounded memory: bytes are gathered into one part
 * buffer (at most 5 MiB); a file that fits in it is one `put`, a larger one becomes a multipart upload
 * (`put` of a stream would need the length up front, which a multipart form does not give).
 */
export class R2UploadWriter {
  readonly #bucket: R2Bucket;
  readonly #key: string;
  readonly #httpMetadata: R2HTTPMetadata | undefined;
  /** Grows by doubling up to one part, so a small file never costs a 5 MiB allocation. */
  #buffer = new Uint8Array(64 * 1024);
  #filled = 0;
  #upload: R2MultipartUpload | null = null;
  #parts: R2UploadedPart[] = [];

  /** Awaited once the multipart upload exists and before its first part is written (so it can be found and aborted). */
  readonly #onMultipartCreated: ((uploadId: string) => Promise<void>) | undefined;

  constructor(bucket: R2Bucket, key: string, httpMetadata?: R2HTTPMetadata, onMultipartCreated?: (uploadId: string) => Promise<void>) {
    this.#bucket = bucket;
    this.#key = key;
    this.#httpMetadata = httpMetadata;
    this.#onMultipartCreated = onMultipartCreated;
  }

  async write(bytes: Uint8Array): Promise<void> {
    let from = 0;
    while (from < bytes.length) {
      const take = Math.min(bytes.length - from, UPLOAD_PART_BYTES - this.#filled);
      if (this.#filled + take > this.#buffer.length) this.#grow(this.#filled + take);
      this.#buffer.set(bytes.subarray(from, from + take), this.#filled);
      this.#filled += take;
      from += take;
      if (this.#filled === UPLOAD_PART_BYTES) await this.#flushPart();
    }
  }

  /** Stores what was written; the object exists once this resolves. */
  async finish(): Promise<void> {
    if (this.#upload === null) {
      await this.#bucket.put(this.#key, this.#buffer.subarray(0, this.#filled), this.#httpMetadata ? { httpMetadata: this.#httpMetadata } : undefined);
      return;
    }
    if (this.#filled > 0) await this.#flushPart();
    await this.#upload.complete(this.#parts);
  }

  /** Drops everything written so far: nothing of the file stays in R2. */
  async abort(): Promise<void> {
    if (this.#upload !== null) await this.#upload.abort();
  }

  #grow(needed: number): void {
    let size = this.#buffer.length;
    while (size < needed) size *= 2;
    const bigger = new Uint8Array(Math.min(size, UPLOAD_PART_BYTES));
    bigger.set(this.#buffer.subarray(0, this.#filled));
    this.#buffer = bigger;
  }

  async #flushPart(): Promise<void> {
    if (this.#upload === null) {
      this.#upload = await this.#bucket.createMultipartUpload(this.#key, this.#httpMetadata ? { httpMetadata: this.#httpMetadata } : undefined);
      await this.#onMultipartCreated?.(this.#upload.uploadId);
    }
    const part = await this.#upload.uploadPart(this.#parts.length + 1, this.#buffer.subarray(0, this.#filled));
    this.#parts.push(part);
    this.#filled = 0;
  }
}

/** A chunk's bytes as text, or null when the uploaded file is gone (the batch has ended). */
export async function readUploadRange(
  bucket: R2Bucket,
  batchId: string,
  offset: number,
  length: number,
): Promise<string | null> {
  const object = await bucket.get(uploadKey(batchId), { range: { offset, length } });
  return object ? object.text() : null;
}

export async function deleteUpload(bucket: R2Bucket, batchId: string): Promise<void> {
  await bucket.delete(uploadKey(batchId));
}

export async function putResultPart(bucket: R2Bucket, batchId: string, chunk: number, csv: string): Promise<void> {
  await bucket.put(resultPartKey(batchId, chunk), csv, { httpMetadata: { contentType: 'text/csv' } });
}

export async function getResultPart(bucket: R2Bucket, batchId: string, chunk: number): Promise<R2ObjectBody | null> {
  return bucket.get(resultPartKey(batchId, chunk));
}

/** Deletes every result part of a batch (R2 deletes up to 1,000 keys per call). */
/** Deletes every result part of a batch; answers how many R2 calls that took (a listing and a delete per 1,000 parts). */
export async function deleteResultParts(bucket: R2Bucket, batchId: string): Promise<number> {
  let cursor: string | undefined;
  let calls = 0;
  do {
    const listing = await bucket.list({ prefix: `results/${batchId}/`, limit: 1000, ...(cursor ? { cursor } : {}) });
    calls++;
    if (listing.objects.length > 0) {
      await bucket.delete(listing.objects.map((object) => object.key));
      calls++;
    }
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
  return calls;
}

/** The chunks of a batch that have a result part. */
export async function listResultParts(bucket: R2Bucket, batchId: string): Promise<Set<number>> {
  const prefix = `results/${batchId}/`;
  const chunks = new Set<number>();
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, limit: 1000, ...(cursor ? { cursor } : {}) });
    for (const object of listing.objects) chunks.add(Number(object.key.slice(prefix.length).replace(/\.csv$/, '')));
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
  return chunks;
}
