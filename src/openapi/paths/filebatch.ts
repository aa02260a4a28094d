import { batchIdParamSchema, downloadQuerySchema, listQuerySchema, uploadHeaderSchema, uploadQuerySchema, validateQuerySchema } from '../../schemas/filebatch';
import { batchControlResponseSchema, batchListResponseSchema, batchRecordSchema, uploadResponseSchema } from '../../schemas/filebatch-response';
import { z } from 'zod';
import { validateOnlyResponseSchema } from '../../schemas/filebatch-validate';
import { RESULT_COLUMNS } from '../../schemas/transaction-columns';
import { errors, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Batch files'];

/**
 * The upload is streamed by the route itself (never parsed by the framework), so its body is
 * described by plain OpenAPI schemas here rather than by a validating zod schema.
 */
const CSV_LAYOUT = 'The batch CSV: a header row, every field double-quoted, `\\n` line ends.';
/**
 * The file's bytes, as OpenAPI 3.1 says a file is: `format: binary` is what generators map to a
 * Blob or File (openapi-typescript's documented `transform`, openapi-generator, orval...), and the
 * media type names what the bytes are.
 */
const csvFile = { type: 'string' as const, format: 'binary', contentMediaType: 'text/csv', description: CSV_LAYOUT };

/** Pause, resume and cancel: what each does, shared with the console's copies of them (paths/console.ts). */
export const BATCH_CONTROLS = {
  pause: {
    operationId: 'pauseBatch',
    summary: 'Pause a running batch: no new chunk starts; chunks already running finish',
    description:
      'The batch keeps its `status` and shows `paused: true`; `processed_lines` stops moving once the chunks already running ' +
      '(at most BATCH_CHUNKS_IN_FLIGHT of 500 rows) are recorded. Pausing a paused batch changes nothing (200). ' +
      'A paused batch is not stalled; one left paused for BATCH_RETENTION_DAYS (10) days is cancelled ' +
      '(`failed`, "cancelled: paused for 10 days without being resumed").',
  },
  resume: {
    operationId: 'resumeBatch',
    summary: 'Resume a paused batch: its chunks are sent again from where it stopped',
    description: 'Resuming a batch that is not paused changes nothing (200).',
  },
  cancel: {
    operationId: 'cancelBatch',
    summary: 'Cancel a running (or paused) batch: it ends `failed`, "cancelled by the merchant"',
    description:
      'No new chunk starts; the batch ends at once with `failure_reason` "cancelled by the merchant", and `batch.failed` is sent to ' +
      'webhook endpoints. Chunks already running (at most BATCH_CHUNKS_IN_FLIGHT) finish: their rows are charged and reported, ' +
      'but no longer counted in `processed_lines`. `GET …/download?partial=true` answers one line per row: the rows that ran ' +
      'with their results, every other row "not processed: the batch was cancelled; nothing was charged".',
  },
} as const;

const noBody = 'No request body: one is ignored.';

export function registerFilebatch(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/filebatch',
    operationId: 'uploadBatch',
    tags,
    summary: 'Upload a batch CSV; it is checked while it streams, then processed in the background',
    description:
      'Multipart form data with one part named `file`, or the raw CSV as a `text/csv` body naming the file with `?file_name=`. ' +
      'A structural problem rejects the whole file with the line (400); nothing is kept. Success is the envelope with status `pending`. ' +
      'With an `Idempotency-Key`, the same key and file within 24 hours answer the first batch again (200, `Idempotent-Replayed: true`), another file under the key is a 409. ' +
      'The same bytes as a file uploaded in the last 24 hours are a 409 naming that batch, unless `?allow_duplicate=true`. Rate-limited per key (120 per 60 s). ' +
      'Rows are sale, authorize and credit, and capture, void and refund naming their transaction in `transaction_id` (an id this service answered, or `line:N` for a row of the same file; ' +
      'a file naming one transaction twice is a 400). `?validate_only=true` makes this call `POST /api/filebatch/validate` (its answer is that operation\'s `FileReport`).',
    security: SECRET_KEY,
    request: {
      query: uploadQuerySchema,
      headers: uploadHeaderSchema,
      body: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              properties: { file: { ...csvFile, description: `${CSV_LAYOUT} Send it as a file part (a filename; any Content-Type).` } },
              required: ['file'],
              additionalProperties: false,
            },
            encoding: { file: { contentType: 'text/csv, application/octet-stream' } },
          },
          // A raw body: a client sends the bytes as they are (openapi-fetch needs `bodySerializer: (csv) => csv`, docs/api-decisions.md).
          'text/csv': { schema: csvFile },
        },
      },
    },
    responses: {
      200: {
        ...ok(
          'Accepted: the batch record, status `pending`; or, under an Idempotency-Key used with the same file, the first upload\'s answer again. ' +
            '(With `?validate_only=true` the answer is `POST /api/filebatch/validate`\'s.)',
          uploadResponseSchema,
        ),
        headers: { 'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } } },
      },
      ...errors([400, 401, 409, 413, 429], {
        400: 'A bad file (`line 7: expected 12 fields, found 11`), a missing `file` part, or a text/csv body without `?file_name=`.',
        409: 'The same file was uploaded in the last 24 hours (`msg` names its batch; `?allow_duplicate=true` uploads it anyway), or the Idempotency-Key was used for another file.',
        413: 'Over BATCH_MAX_BYTES or BATCH_MAX_ROWS; nothing is kept.',
      }),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/filebatch/validate',
    operationId: 'validateBatchFile',
    tags,
    summary: 'Check a batch file as an upload would, storing and charging nothing (also `POST /api/filebatch?validate_only=true`)',
    description:
      'The same body as an upload (a multipart part named `file`, or a `text/csv` body with `?file_name=`), streamed and checked the same way: ' +
      'a structural problem is the same 400. The answer lists the rows a run would refuse (row, column, message; the first 1,000, with the total), ' +
      'the rows it would run by type and the totals by currency. Whether a named transaction exists or is in the right state is known only when the row runs. ' +
      'Rate-limited with uploads (120 per 60 s per key).',
    security: SECRET_KEY,
    request: {
      query: validateQuerySchema,
      body: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: { type: 'object', properties: { file: { ...csvFile, description: `${CSV_LAYOUT} Send it as a file part.` } }, required: ['file'], additionalProperties: false },
            encoding: { file: { contentType: 'text/csv, application/octet-stream' } },
          },
          'text/csv': { schema: csvFile },
        },
      },
    },
    responses: {
      200: ok('The file\'s report; no batch was made.', validateOnlyResponseSchema),
      ...errors([400, 401, 413, 429], {
        400: 'A bad file (`line 7: expected 12 fields, found 11`), a missing `file` part, or a text/csv body without `?file_name=`.',
        413: 'Over BATCH_MAX_BYTES or BATCH_MAX_ROWS.',
      }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/filebatch',
    operationId: 'listBatches',
    tags,
    summary: "The merchant's batches, newest first",
    security: SECRET_KEY,
    request: { query: listQuerySchema },
    responses: { 200: ok('A page of batch records.', batchListResponseSchema), ...errors([400, 401]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/filebatch/{id}',
    operationId: 'getBatch',
    tags,
    summary: 'Status of a batch (the bare batch record)',
    security: SECRET_KEY,
    request: { params: batchIdParamSchema },
    responses: { 200: ok('The batch record.', batchRecordSchema), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/filebatch/{id}/download',
    operationId: 'downloadBatch',
    tags,
    summary: 'Download the results of a completed batch (streamed CSV), or with partial=true what a failed batch did',
    description:
      'With `partial=true` a failed batch streams one line per data row in file order: the rows that ran with their results, ' +
      'every other row as `response` `error` with "not processed: the batch failed before this row ran; nothing was charged" ' +
      '(for a cancelled batch: "not processed: the batch was cancelled; nothing was charged") ' +
      '(file name `…-partial-results.csv`). Rows are always recorded before they are charged, so nothing charged is left out.',
    security: SECRET_KEY,
    request: { params: batchIdParamSchema, query: downloadQuerySchema },
    responses: {
      200: {
        description: `The result CSV: a header row and one row per data row, in input order; every field quoted. Columns: ${RESULT_COLUMNS.join(', ')}.`,
        headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; the file name ends in -results.csv' } },
        // Text, not JSON: openapi-fetch reads it with `parseAs: 'text'` (docs/api-decisions.md).
        content: { 'text/csv': { schema: { type: 'string', contentMediaType: 'text/csv' } } },
      },
      ...errors([400, 401, 404, 409, 410], {
        409:
          'The batch is not in completed status (`batch is not in completed status`); with partial=true, the batch is still running, ' +
          'or some rows are still being settled with the processor (retry after `Retry-After`).',
        410: 'The results are past retention (`batch results expired`).',
      }),
    },
  });
  for (const [action, doc] of Object.entries(BATCH_CONTROLS)) {
    registry.registerPath({
      method: 'post',
      path: `/api/filebatch/{id}/${action}`,
      operationId: doc.operationId,
      tags,
      summary: doc.summary,
      description: `${doc.description} ${noBody}`,
      security: SECRET_KEY,
      request: { params: batchIdParamSchema },
      responses: {
        200: ok('The success envelope with the batch record after the action.', batchControlResponseSchema),
        ...errors([400, 401, 404, 409], {
          409: 'The batch has ended: `msg` names its status (`batch is completed: only a running batch can be paused`).',
        }),
      },
    });
  }
}
