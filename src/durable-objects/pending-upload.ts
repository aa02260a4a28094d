/**
 * One batch upload while its bytes are being written to R2 (object named by the batch id it will
 * have). The upload registers here before its first byte is stored, records its R2 multipart
 * upload's id before its first part is written, and says when it was last active; it ends the
 * record once its batch exists (or once it refused the file and removed what it wrote).
 *
 * Why: a process that dies mid-upload (a crash, a deploy, a kill) runs none of its cleanup, and a
 * multipart upload nobody completes is invisible to everything else (no batch row names it; the
 * Workers R2 binding cannot list multipart uploads). This object's alarm is the sweep that finds it:
 * once the upload has been idle for ABANDONED_AFTER_MS and no batch row names its id, the multipart
 * upload is aborted and any object it completed is deleted, so none of the file's card data stays.
 * An alarm runs the same locally as in production. The bucket's lifecycle rule for incomplete
 * multipart uploads (docs/deploy.md) is the backstop if even this object's alarm never ran.
 *
 * Storage: one small row (the key, the upload id, two times), whatever the file's size.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';

/** Idle this long (no part written, no touch) and without a batch row, an upload is abandoned. */
export const ABANDONED_AFTER_MS = 5 * 60_000;
/** A live upload says it is active at least this often (a slow client fills a 5 MiB part slowly). */
export const TOUCH_EVERY_MS = 60_000;

export interface PendingUploadState {
  key: string;
  uploadId: string | null;
  startedAt: number;
  touchedAt: number;
}

export type SweepOutcome = 'none' | 'waiting' | 'batch_exists' | 'aborted';

export class PendingUpload extends DurableObject<Env> {
  /**
   * The upload starts: known before any byte is stored. Times are this object's own clock, the one
   * its alarm runs by (an upload under a test's clock must not look idle to a real alarm).
   */
  async begin(key: string): Promise<void> {
    const now = Date.now();
    await this.ctx.storage.put('upload', { key, uploadId: null, startedAt: now, touchedAt: now } satisfies PendingUploadState);
    await this.ctx.storage.setAlarm(now + ABANDONED_AFTER_MS);
  }

  /** Still active; `uploadId` once its multipart upload exists (recorded before its first part is written). */
  async touch(uploadId: string | null): Promise<void> {
    const now = Date.now();
    const state = await this.ctx.storage.get<PendingUploadState>('upload');
    if (!state) return;
    await this.ctx.storage.put('upload', { ...state, uploadId: uploadId ?? state.uploadId, touchedAt: Math.max(now, state.touchedAt) } satisfies PendingUploadState);
    await this.ctx.storage.setAlarm(Math.max(now, state.touchedAt) + ABANDONED_AFTER_MS);
  }

  /** The upload ended on its own terms (its batch exists, or what it wrote was removed): nothing to sweep. */
  async end(): Promise<void> {
    await this.ctx.storage.deleteAll();
    await this.ctx.storage.deleteAlarm();
  }

  async state(): Promise<PendingUploadState | null> {
    return (await this.ctx.storage.get<PendingUploadState>('upload')) ?? null;
  }

  override async alarm(): Promise<void> {
    await this.sweep(Date.now());
  }

  /**
   * The sweep at `now` (the alarm passes the clock; tests pass their own): an upload idle for
   * ABANDONED_AFTER_MS whose batch was never made is aborted and its object deleted.
   */
  async sweep(now: number): Promise<SweepOutcome> {
    const state = await this.ctx.storage.get<PendingUploadState>('upload');
    if (!state) return 'none';
    if (now < state.touchedAt + ABANDONED_AFTER_MS) {
      await this.ctx.storage.setAlarm(state.touchedAt + ABANDONED_AFTER_MS);
      return 'waiting';
    }
    const batchId = state.key.replace(/^uploads\/|\.csv$/g, '');
    const batch = await this.env.DB.prepare('SELECT 1 AS found FROM batches WHERE id = ?1').bind(batchId).first<{ found: number }>();
    if (batch) {
      // The upload made its batch and died before ending this record: the file is the batch's now.
      await this.end();
      return 'batch_exists';
    }
    if (state.uploadId !== null) {
      try {
        await this.env.FILES.resumeMultipartUpload(state.key, state.uploadId).abort();
      } catch (err) {
        // Already completed or aborted: the delete below removes a completed one.
        console.log(JSON.stringify({ level: 'info', event: 'abandoned_upload_abort', outcome: err instanceof Error ? err.name : 'error' }));
      }
    }
    await this.env.FILES.delete(state.key);
    console.log(JSON.stringify({ level: 'warn', event: 'abandoned_upload_removed', batch_id: batchId, multipart: state.uploadId !== null, idle_ms: now - state.touchedAt }));
    await this.end();
    return 'aborted';
  }
}
