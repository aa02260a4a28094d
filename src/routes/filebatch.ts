/** Batch files (upload, status, download), plus listing. Secret key only. */
import { Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { maskCardNumbersIn } from '../lib/mask';
import { MultipartError, MultipartReader, multipartBoundary } from '../lib/multipart';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { validate } from '../middleware/validate';
import { batchIdParamSchema, listQuerySchema, uploadQuerySchema } from '../schemas/filebatch';
import { batchLimits } from '../services/batches/limits';
import { getBatch, listBatches } from '../services/batches/records';
import { openDownload } from '../services/batches/results';
import { acceptUpload, type UploadSource } from '../services/batches/upload';

/**
 * Declares the upload's form (one part named "file") to the typed client without reading it: the
 * route streams the body itself, so no framework validator may parse it.
 */
const fileForm = createMiddleware<AppEnv, string, { in: { form: { file: Blob } } }>((_c, next) => next());

export const filebatch = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post('/', validate('query', uploadQuerySchema), fileForm, async (c) => {
  const maxBytes = batchLimits(c.env).maxBytes;
  // Refuse a body that announces itself too large before reading it (a multipart wrapper adds a little).
  const announced = Number(c.req.header('Content-Length') ?? '0');
  if (announced > maxBytes + 64 * 1024) throw new AppError('payload_too_large', `the file exceeds the limit of ${maxBytes} bytes`);
  const { source, reader } = await openUpload(c.req.raw, c.req.valid('query').file_name);

  let outcome: Awaited<ReturnType<typeof acceptUpload>>;
  try {
    const ip = c.req.header('CF-Connecting-IP') ?? null;
    // Chunk messages go out after the answer, in waitUntil.
    outcome = await acceptUpload(c.env, c.get('caller'), source, ip, systemClock, (work) => c.executionCtx.waitUntil(work));
  } catch (err) {
    if (err instanceof MultipartError) throw new AppError('bad_request', err.message);
    throw err;
  } finally {
    // Whatever was not read of the request (a rejected file, parts after "file") is dropped.
    await reader?.cancel().catch(() => undefined);
  }
  if (!outcome.ok) throw new AppError(outcome.reason === 'too_large' ? 'payload_too_large' : 'bad_request', outcome.msg);
  return c.json(success(outcome.batch), 200);
  })
  .get('/', validate('query', listQuerySchema), async (c) => {
  const { limit, offset } = c.req.valid('query');
  const { batches, total } = await listBatches(c.env, c.get('caller').merchantId, { limit, offset });
  return c.json({ ...success(batches), total_count: total, limit, offset });
  })
  .get('/:id', validate('param', batchIdParamSchema), async (c) => {
  const batch = await getBatch(c.env, c.get('caller').merchantId, c.req.valid('param').id);
  if (!batch) throw new AppError('not_found', 'batch not found');
  return c.json(batch);
  })
  .get('/:id/download', validate('param', batchIdParamSchema), async (c) => {
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

/** The uploaded file: the raw body (text/csv), or the form's part named "file" (multipart). */
export async function openUpload(
  request: Request,
  queryFileName: string | undefined,
): Promise<{ source: UploadSource; reader: MultipartReader | null }> {
  const body = request.body;
  if (body === null) throw new AppError('bad_request', 'the file is empty');
  const contentType = request.headers.get('Content-Type') ?? '';
  if (/^text\/csv\b/i.test(contentType)) {
    if (queryFileName === undefined) throw new AppError('bad_request', 'file_name: a text/csv upload names its file with ?file_name=');
    return { source: { fileName: cleanFileName(queryFileName), bytes: body }, reader: null };
  }
  const boundary = multipartBoundary(contentType);
  if (boundary === null) {
    throw new AppError('bad_request', 'Content-Type must be multipart/form-data (a part named "file") or text/csv');
  }
  const reader = new MultipartReader(body, boundary);
  return { source: await fileSource(reader), reader };
}

/** Advances the form to its part named "file"; other parts before it are skipped. */
async function fileSource(reader: MultipartReader): Promise<UploadSource> {
  try {
    for (let part = await reader.nextPart(); part !== null; part = await reader.nextPart()) {
      if (part.name === 'file') return { fileName: cleanFileName(part.filename ?? 'upload.csv'), bytes: reader.body() };
    }
  } catch (err) {
    if (err instanceof MultipartError) throw new AppError('bad_request', err.message);
    throw err;
  }
  throw new AppError('bad_request', 'file: the multipart form has no part named "file"');
}

/** The last path segment, without control characters, at most 255 characters. */
function cleanFileName(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  // The name is stored and answered as given: a card number in it is masked first.
  const clean = maskCardNumbersIn(base.replace(/[\x00-\x1f\x7f]/g, '')).trim().slice(0, 255);
  return clean === '' ? 'upload.csv' : clean;
}

export function resultFileName(fileName: string): string {
  return `${fileName.replace(/\.csv$/i, '')}-results.csv`;
}
