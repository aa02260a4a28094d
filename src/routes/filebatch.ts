/**
 * Batch files (upload, status, download), plus listing. Secret key only. The upload and download
 * answers are shared with the console's routes (routes/console.ts), which reach them by cookie.
 */
import { Hono, type Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv, Env } from '../env';
import { AppError, success } from '../errors';
import { BodyReader, BodyTooLargeError } from '../lib/body-reader';
import { maskCardNumbersIn } from '../lib/card-number';
import { MultipartError, MultipartReader, multipartBoundary } from '../lib/multipart';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { uploadRateLimit } from '../middleware/key-rate-limit';
import { check, validate } from '../middleware/validate';
import { clientIpHeaderSchema } from '../schemas/client-ip';
import { batchIdParamSchema, downloadQuerySchema, listQuerySchema, uploadHeaderSchema, uploadQuerySchema, validateQuerySchema } from '../schemas/filebatch';
import { batchLimits } from '../services/batches/limits';
import { controlBatch, type BatchAction } from '../services/batches/control';
import { getBatch, listBatches } from '../services/batches/records';
import { batchReceiptCounts } from '../services/receipts/receipts';
import { openPartialDownload, type PartialDownloadOutcome } from '../services/batches/partial-results';
import { openDownload } from '../services/batches/results';
import { acceptUpload, type UploadedBatch, type UploadOptions, type UploadSource } from '../services/batches/upload';
import { validateUpload } from '../services/batches/validate-upload';
import { LedgerCheck } from '../services/batches/validate-ledger';

/**
 * Declares the upload's form (one part named "file") to the typed client without reading it: the
 * route streams the body itself, so no framework validator may parse it.
 */
const fileForm = createMiddleware<AppEnv, string, { in: { form: { file: Blob } } }>((_c, next) => next());

/** Bytes of a form allowed before the file part's content: the preamble, other parts, part headers. */
export const MAX_FORM_BYTES_BEFORE_FILE = 64 * 1024;
/** Bytes allowed after the file part: its closing delimiter, the final "--", a short epilogue. */
const MAX_FORM_BYTES_AFTER_FILE = 4 * 1024;

export const filebatch = new Hono<AppEnv>()
  .use(requireSecretKey)
  // The address check comes before the Idempotency-Key's validator: the last header validator's
  // output is what c.req.valid('header') answers.
  .post('/', uploadRateLimit, validate('query', uploadQuerySchema), check('header', clientIpHeaderSchema), validate('header', uploadHeaderSchema), fileForm, async (c) => {
    const { file_name: fileName, allow_duplicate: allowDuplicate, validate_only: validateOnly } = c.req.valid('query');
    // Its answer is typed on its own (the typed client's `validateFile`): the route's type stays the upload's.
    if (validateOnly) return new Response(JSON.stringify(success(await receiveValidateOnly(c, fileName))), { headers: { 'Content-Type': 'application/json' } }) as never;
    return uploadAnswer(c, await receiveUpload(c, fileName, { idempotencyKey: c.req.valid('header')['idempotency-key'], allowDuplicate }));
  })
  // The same check under a path of its own, so a client generated from the OpenAPI document types
  // each answer on its own (the upload's answer is not a union with the report's).
  .post('/validate', uploadRateLimit, validate('query', validateQuerySchema), fileForm, async (c) => c.json(success(await receiveValidateOnly(c, c.req.valid('query').file_name)), 200))
  .get('/', validate('query', listQuerySchema), async (c) => {
    const { limit, offset } = c.req.valid('query');
    const { batches, total } = await listBatches(c.env, c.get('caller').merchantId, { limit, offset });
    return c.json({ ...success(batches), total_count: total, limit, offset });
  })
  .get('/:id', validate('param', batchIdParamSchema), async (c) => {
    const batch = await getBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id);
    if (!batch) throw new AppError('not_found', 'batch not found');
    // Its email receipts by state, once a row asked for one (docs/receipts.md): one call to the batch's shard.
    const receipts = await batchReceiptCounts(c.env, c.get('caller').merchantId, batch);
    return c.json(receipts.queued + receipts.sent + receipts.failed > 0 ? { ...batch, receipts } : batch);
  })
  .get('/:id/download', validate('param', batchIdParamSchema), validate('query', downloadQuerySchema), async (c) => {
    const id = c.req.valid('param').id;
    const outcome = c.req.valid('query').partial
      ? await openPartialDownload(c.env, c.get('caller'), id, systemClock)
      : await openDownload(c.env, c.get('caller').merchantId, id, systemClock);
    return downloadAnswer(c, outcome);
  })
  .post('/:id/pause', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'pause')), 200),
  )
  .post('/:id/resume', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'resume')), 200),
  )
  .post('/:id/cancel', validate('param', batchIdParamSchema), async (c) =>
    c.json(success(await controlled(c.env, c.get('caller').merchantId, c.req.valid('param').id, 'cancel')), 200),
  );

/** Pause, resume or cancel the merchant's batch: its record after, or the 404 / 409 that says why not. */
export async function controlled(env: Env, merchantId: string, id: string, action: BatchAction) {
  const outcome = await controlBatch(env, merchantId, id, action);
  if (!outcome.ok) {
    if (outcome.reason === 'not_found') throw new AppError('not_found', 'batch not found');
    throw new AppError('conflict', `batch is ${outcome.status}: only a running batch can be ${ACTION_PAST[action]}`);
  }
  return outcome.batch;
}

const ACTION_PAST = { pause: 'paused', resume: 'resumed', cancel: 'cancelled' } as const;

/** Streams an upload into a new batch, or throws the 4xx that says what is wrong (`withUploadSource`). */
export async function receiveUpload<E extends AppEnv>(
  c: Context<E>,
  queryFileName: string | undefined,
  options: UploadOptions,
): Promise<{ batch: UploadedBatch; replayed: boolean }> {
  const ip = c.req.header('CF-Connecting-IP') || null; // checked by the route: an IP address or absent
  // Chunk messages go out after the answer, in waitUntil.
  const outcome = await withUploadSource(c, queryFileName, (source) =>
    acceptUpload(c.env, c.get('caller'), source, ip, systemClock, (work) => c.executionCtx.waitUntil(work), options),
  );
  if (!outcome.ok) throw new AppError(UPLOAD_REFUSALS[outcome.reason], outcome.msg);
  return outcome;
}

/** A validate-only upload: the same body, read the same way; its report, or the 4xx a real upload would get. */
export async function receiveValidateOnly<E extends AppEnv>(c: Context<E>, queryFileName: string | undefined) {
  const outcome = await withUploadSource(c, queryFileName, (source) =>
    validateUpload(batchLimits(c.env), source, systemClock, new LedgerCheck(c.env, c.get('caller').merchantId, systemClock())),
  );
  if (!outcome.ok) throw new AppError(UPLOAD_REFUSALS[outcome.reason], outcome.msg);
  return outcome.report;
}

/**
 * Streams an upload's file (the raw text/csv body, or a form's part named "file") into `work`, or
 * throws the 4xx that says what is wrong with the body. Every byte of the body counts against the
 * limits, and a body that was started is read to its end before answering, so the answer reaches
 * the client.
 */
async function withUploadSource<E extends AppEnv, T>(c: Context<E>, queryFileName: string | undefined, work: (source: UploadSource) => Promise<T>): Promise<T> {
  const maxBytes = batchLimits(c.env).maxBytes;
  const contentType = c.req.header('Content-Type') ?? '';
  const raw = /^text\/csv\b/i.test(contentType);
  const boundary = raw ? null : multipartBoundary(contentType);
  if (!raw && boundary === null) {
    // A media type this route does not take: 415, as for every body route (docs/api-decisions.md).
    throw new AppError('unsupported_media_type', 'Content-Type must be multipart/form-data (a part named "file") or text/csv');
  }
  if (raw && queryFileName === undefined) throw new AppError('bad_request', 'file_name: a text/csv upload names its file with ?file_name=');
  // Every byte of the body counts: the file, and for a form whatever surrounds it.
  const bodyLimit = raw ? maxBytes : maxBytes + MAX_FORM_BYTES_BEFORE_FILE + MAX_FORM_BYTES_AFTER_FILE;
  const tooLarge = raw
    ? `the file exceeds the limit of ${maxBytes} bytes`
    : `the request body exceeds ${bodyLimit} bytes (the file's limit of ${maxBytes} and ${bodyLimit - maxBytes} for the form around it)`;
  // A body that announces itself too large is refused unread (the runtime drains an untouched body).
  if (Number(c.req.header('Content-Length') ?? '0') > bodyLimit) throw new AppError('payload_too_large', tooLarge);
  if (c.req.raw.body === null) throw new AppError('bad_request', 'the file is empty');
  const body = new BodyReader(c.req.raw.body, bodyLimit);
  try {
    const source: UploadSource =
      boundary === null
        ? { fileName: cleanFileName(queryFileName ?? ''), bytes: body.chunks() }
        : await formFileSource(new MultipartReader(body, boundary, { maxBytesBeforePart: MAX_FORM_BYTES_BEFORE_FILE }));
    return await work(source);
  } catch (err) {
    if (err instanceof MultipartError) throw new AppError('bad_request', err.message);
    if (err instanceof BodyTooLargeError) throw new AppError('payload_too_large', tooLarge);
    throw err;
  } finally {
    // A body we started reading is read to its end before answering (see BodyReader): whatever
    // was left (a rejected file, the form after "file") is dropped, so the answer reaches the client.
    await body.discardRest();
  }
}

const UPLOAD_REFUSALS = {
  invalid_file: 'bad_request',
  too_large: 'payload_too_large',
  duplicate_file: 'conflict',
  key_reused: 'conflict',
} as const;

/** An upload's answer: 200 with the batch, marked `Idempotent-Replayed` when it is an earlier upload's. */
export function uploadAnswer(c: Context, { batch, replayed }: { batch: UploadedBatch; replayed: boolean }) {
  if (replayed) c.header('Idempotent-Replayed', 'true');
  return c.json(success(batch), 200);
}

/** The result file as an attachment, or the 4xx that says why there is none. */
export function downloadAnswer(c: Context, outcome: PartialDownloadOutcome): Response {
  if (!outcome.ok) {
    switch (outcome.reason) {
      case 'not_found':
        throw new AppError('not_found', 'batch not found');
      case 'not_completed':
        throw new AppError('conflict', 'batch is not in completed status');
      case 'not_ended':
        throw new AppError('conflict', 'batch is still running: partial=true downloads a failed batch');
      case 'settling':
        throw new AppError(
          'conflict',
          'some rows are still being settled with the processor; retry after the Retry-After seconds',
          undefined,
          { 'Retry-After': String(outcome.retryAfterSeconds) },
        );
      case 'expired':
        throw new AppError('gone', 'batch results expired');
    }
  }
  const name = `${outcome.fileName.replace(/\.csv$/i, '')}-${'partial' in outcome ? 'partial-' : ''}results.csv`;
  return c.body(outcome.body, 200, {
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
  });
}

/** Advances the form to its part named "file" (other parts before it are skipped) and streams it. */
async function formFileSource(reader: MultipartReader): Promise<UploadSource> {
  const part = await reader.findPart('file');
  if (part === null) throw new AppError('bad_request', 'file: the multipart form has no part named "file"');
  return { fileName: cleanFileName(part.filename ?? 'upload.csv'), bytes: reader.body() };
}

/** The last path segment, without control characters, at most 255 characters. */
function cleanFileName(name: string): string {
  // The name is stored and answered as given: a card number in it is masked first, before `/`
  // (one of its separators) is read as a path.
  const base = maskCardNumbersIn(name).split(/[/\\]/).pop() ?? '';
  const clean = maskCardNumbersIn(base.replace(/[\x00-\x1f\x7f]/g, '')).trim().slice(0, 255);
  return clean === '' ? 'upload.csv' : clean;
}
