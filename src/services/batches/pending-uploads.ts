/**
 * The record an upload keeps while its bytes are written to R2 (durable-objects/pending-upload.ts):
 * begun before the first byte, told the multipart upload's id before its first part, touched while
 * bytes arrive, ended once the batch exists or the upload removed what it wrote. A process that dies
 * between begin and end leaves the record, and its alarm aborts what was written.
 */
import type { Env } from '../../env';
import { TOUCH_EVERY_MS } from '../../durable-objects/pending-upload';
import type { Clock } from '../../lib/time';

export class PendingUploadRecord {
  readonly #stub: DurableObjectStub<import('../../durable-objects/pending-upload').PendingUpload>;
  readonly #clock: Clock;
  #lastTouch = 0;

  constructor(env: Pick<Env, 'PENDING_UPLOAD'>, batchId: string, clock: Clock) {
    this.#stub = env.PENDING_UPLOAD.get(env.PENDING_UPLOAD.idFromName(batchId));
    this.#clock = clock;
  }

  async begin(key: string): Promise<void> {
    await this.#stub.begin(key);
    this.#lastTouch = this.#clock().getTime();
  }

  /** Called by the R2 writer once its multipart upload exists, before that upload's first part. */
  readonly multipartCreated = async (uploadId: string): Promise<void> => {
    await this.#stub.touch(uploadId);
    this.#lastTouch = this.#clock().getTime();
  };

  /** Bytes arrived: says so at most once a TOUCH_EVERY_MS (or always, with `force`). */
  async active(force = false): Promise<void> {
    const now = this.#clock().getTime();
    if (!force && now - this.#lastTouch < TOUCH_EVERY_MS) return;
    await this.#stub.touch(null);
    this.#lastTouch = now;
  }

  async end(): Promise<void> {
    await this.#stub.end();
  }
}
