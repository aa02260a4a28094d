/** Batch files (SPEC.md "POST /api/filebatch" and the two GETs), plus listing. Secret key only. */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { BodyReader, BodyTooLargeError } from '../lib/body-reader';
import { maskCardNumbersIn } from '../lib/card-number';
import { MultipartError, MultipartReader, multipartBoundary } from '../lib/multipart';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { clientIpHeaderSchema } from '../schemas/client-ip';
import { batchIdParamSchema, listQuerySchema, uploadQuerySchema } from '../schemas/filebatch';
import { batchLimits, enqueueBatch, getBatch, listBatches, openDownload, uploadBatch, type UploadOutcome, type UploadSource } from '../services/batches';

export const filebatch = new Hono<AppEnv>();

filebatch.use(requireSecretKey);

/** Bytes of a form allowed before the file part's content: the preamble, other parts, part headers. */
export const MAX_FORM_BYTES_BEFORE_FILE = 64 * 1024;
/** Bytes allowed after the file part: its closing delimiter, the final "--", a short epilogue. */
const MAX_FORM_BYTES_AFTER_FILE = 4 * 1024;

filebatch.post('/', validate('query', uploadQuerySchema), validate('header', clientIpHeaderSchema), async (c) => {
  const maxBytes = batchLimits(c.env).maxBytes;
  const contentType = c.req.header('Content-Type') ?? '';
  const raw = /^text\/csv\b/i.test(contentType);
  const boundary = raw ? null : multipartBoundary(contentType);
  const queryFileName = c.req.valid('query').file_name;
  if (!raw && boundary === null) {
    throw new AppError('bad_request', 'Content-Type must be multipart/form-data (a part named "file") or text/csv');
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

  let outcome: UploadOutcome;
  try {
    const source: UploadSource =
      boundary === null
        ? { fileName: cleanFileName(queryFileName ?? ''), bytes: body.chunks() }
        : await formFileSource(new MultipartReader(body, boundary, { maxBytesBeforePart: MAX_FORM_BYTES_BEFORE_FILE }));
    outcome = await uploadBatch(c.env, c.get('caller'), source, c.req.valid('header')['cf-connecting-ip'] ?? null, systemClock);
  } catch (err) {
    if (err instanceof MultipartError) throw new AppError('bad_request', err.message);
    if (err instanceof BodyTooLargeError) throw new AppError('payload_too_large', tooLarge);
    throw err;
  } finally {
    // A body we started reading is read to its end before answering (see BodyReader): whatever
    // was left (a rejected file, the form after "file") is dropped, so the answer reaches the client.
    await body.discardRest();
  }
  if (!outcome.ok) throw new AppError(outcome.reason === 'too_large' ? 'payload_too_large' : 'bad_request', outcome.msg);
  // Queueing happens after the answer; the stall watchdog re-sends chunks if this is lost.
  c.executionCtx.waitUntil(enqueueBatch(c.env, outcome.batch.id, outcome.messages));
  return c.json(success(outcome.batch), 200);
});

filebatch.get('/', validate('query', listQuerySchema), async (c) => {
  const { limit, offset } = c.req.valid('query');
  const { batches, total } = await listBatches(c.env, c.get('caller').merchantId, { limit, offset });
  return c.json({ ...success(batches), total_count: total, limit, offset });
});

filebatch.get('/:id', validate('param', batchIdParamSchema), async (c) => {
  const batch = await getBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id);
  if (!batch) throw new AppError('not_found', 'batch not found');
  return c.json(batch);
});

filebatch.get('/:id/download', validate('param', batchIdParamSchema), async (c) => {
  const outcome = await openDownload(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
  if (!outcome.ok) {
    switch (outcome.reason) {
      case 'not_found':
        throw new AppError('not_found', 'batch not found');
      case 'not_completed':
        throw new AppError('conflict', 'batch is not in completed status');
      case 'expired':
        throw new AppError('gone', 'batch results expired');
    }
  }
  const name = resultFileName(outcome.fileName);
  return c.body(outcome.body, 200, {
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Disposition': `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
  });
});

/** Advances the form to its part named "file" (other parts before it are skipped) and streams it. */
async function formFileSource(reader: MultipartReader): Promise<UploadSource> {
  const part = await reader.findPart('file');
  if (part === null) throw new AppError('bad_request', 'file: the multipart form has no part named "file"');
  return { fileName: cleanFileName(part.filename ?? 'upload.csv'), bytes: reader.body() };
}

/** The last path segment, without control characters, at most 255 characters. */
function cleanFileName(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  // The name is stored and answered as given: a card number in it is masked first.
  const clean = maskCardNumbersIn(base.replace(/[\x00-\x1f\x7f]/g, '')).trim().slice(0, 255);
  return clean === '' ? 'upload.csv' : clean;
}

function resultFileName(fileName: string): string {
  return `${fileName.replace(/\.csv$/i, '')}-results.csv`;
}
