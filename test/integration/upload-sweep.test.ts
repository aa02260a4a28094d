/**
 * An upload leaves nothing when it dies: the upload is recorded (its own object) before its first
 * byte is stored, its multipart upload's id before its first part; a process that dies mid-upload
 * runs none of its cleanup, and the record's sweep aborts the unfinished multipart upload once it
 * has been idle for ABANDONED_AFTER_MS and no batch was made of it. The sweep takes its clock as an
 * argument (the alarm passes the real one), so the test moves time instead of waiting.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { ABANDONED_AFTER_MS } from '../../src/durable-objects/pending-upload';
import { PendingUploadRecord } from '../../src/services/batches/pending-uploads';
import { R2UploadWriter, UPLOAD_PART_BYTES, uploadKey } from '../../src/storage/batch-files';
import { createMerchant } from '../helpers/api';
import { csv, saleRows, uploadOk } from '../helpers/batch';

const stubOf = (batchId: string) => env.PENDING_UPLOAD.get(env.PENDING_UPLOAD.idFromName(batchId));

/** A file's first 6 MiB, as a crashed upload left them: more than one multipart part. */
function cardRows(): Uint8Array {
  const line = '"sale","101","4111111111111111","12/30","123"\n';
  return new TextEncoder().encode(line.repeat(Math.ceil((UPLOAD_PART_BYTES + 1024 * 1024) / line.length)));
}

describe('an upload that dies leaves nothing in R2', () => {
  it('aborts a multipart upload a crash left unfinished, once it has been idle, and only then', async () => {
    const batchId = 'bat_crashedupload0001';
    const key = uploadKey(batchId);
    // What uploadBatch does up to the crash: the record, then the writer, then bytes; no finish, no abort, no end.
    const record = new PendingUploadRecord(env, batchId, () => new Date());
    await record.begin(key);
    const writer = new R2UploadWriter(env.FILES, key, undefined, record.multipartCreated);
    await writer.write(cardRows());
    const state = await stubOf(batchId).state();
    expect(state).toMatchObject({ key, uploadId: expect.any(String) });
    const uploadId = state?.uploadId ?? '';

    // Still active a minute later: nothing is touched.
    const touchedAt = state?.touchedAt ?? 0;
    expect(await stubOf(batchId).sweep(touchedAt + 60_000)).toBe('waiting');
    const alive = env.FILES.resumeMultipartUpload(key, uploadId);
    const probe = await alive.uploadPart(2, new TextEncoder().encode('"sale","1","4111111111111111","12/30"\n'));
    expect(probe.partNumber).toBe(2);

    // Idle past the limit with no batch: aborted, nothing left, the record gone.
    expect(await stubOf(batchId).sweep(touchedAt + ABANDONED_AFTER_MS)).toBe('aborted');
    await expect(env.FILES.resumeMultipartUpload(key, uploadId).complete([probe])).rejects.toThrow();
    expect(await env.FILES.head(key)).toBeNull();
    expect(await stubOf(batchId).state()).toBeNull();
  });

  it('deletes a file stored whole by an upload that died before making its batch', async () => {
    const batchId = 'bat_crashedupload0002';
    const key = uploadKey(batchId);
    const record = new PendingUploadRecord(env, batchId, () => new Date());
    await record.begin(key);
    await env.FILES.put(key, '"sale","101","4111111111111111","12/30","123"\n');
    const state = await stubOf(batchId).state();
    expect(await stubOf(batchId).sweep((state?.touchedAt ?? 0) + ABANDONED_AFTER_MS)).toBe('aborted');
    expect(await env.FILES.head(key)).toBeNull();
  });

  it('keeps the file of an upload that made its batch (and ends its record as the upload ends)', async () => {
    const shop = await createMerchant({ name: 'Sweep Shop' });
    const id = await uploadOk(shop.secretKey, csv(['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'order_id'], saleRows(3)));
    // The upload ended its own record.
    expect(await stubOf(id).state()).toBeNull();
    // A record left by an upload that died after making its batch: the sweep keeps the batch's file.
    await new PendingUploadRecord(env, id, () => new Date()).begin(uploadKey(id));
    const state = await stubOf(id).state();
    const before = await env.FILES.head(uploadKey(id));
    expect(before).not.toBeNull();
    expect(await stubOf(id).sweep((state?.touchedAt ?? 0) + ABANDONED_AFTER_MS)).toBe('batch_exists');
    expect((await env.FILES.head(uploadKey(id)))?.size).toBe(before?.size);
  });
});
