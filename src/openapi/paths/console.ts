/**
 * The batch console's routes (/console/*): the session the page signs in to, and the batch
 * operations it makes with the session cookie. Not for servers: they use /api/filebatch.
 */
import { z } from 'zod';
import { batchSummaryResponseSchema, consoleSessionResponseSchema, consoleSignedOutResponseSchema, consoleSignInSchema } from '../../schemas/console';
import { batchIdParamSchema, consoleUploadQuerySchema, listQuerySchema, uploadHeaderSchema } from '../../schemas/filebatch';
import { batchControlResponseSchema, batchListResponseSchema, uploadResponseSchema } from '../../schemas/filebatch-response';
import { validateOnlyResponseSchema } from '../../schemas/filebatch-validate';
import { BATCH_CONTROLS } from './filebatch';
import { errors, json, ok, type Registry } from './common';

const tags = ['Console'];
const SESSION = [{ consoleSession: [] }];
const CSRF = {
  headers: z.object({
    'X-CSRF-Token': z.string().meta({ description: 'The `csrf_token` of the session (POST /console/session or GET /console/session).' }),
  }),
};
const FORBIDDEN = { 403: 'Another origin (the `Origin` header), or a missing or wrong `X-CSRF-Token`.' };

export function registerConsole(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/console/session',
    operationId: 'consoleSignIn',
    tags,
    summary: 'Exchange the secret API key for a console session',
    description:
      'Sets the `binbatch_console` cookie (HttpOnly, SameSite=Strict, Path=/, two hours; Secure except on http://localhost and ' +
      'http://127.0.0.1). The session is stored in KV under the hash of its id; the key is not stored. Refused from another origin.',
    security: [],
    request: { body: { required: true, content: json(consoleSignInSchema) } },
    responses: {
      201: ok('Signed in: the session, with the CSRF token for later POSTs and DELETEs.', consoleSessionResponseSchema),
      ...errors([400, 401, 403, 413], { 401: 'Unknown or revoked key, or a public key.', 403: 'Sent from another origin.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/session',
    operationId: 'consoleSession',
    tags,
    summary: 'The current session (the page asks after a reload, for its CSRF token)',
    security: SESSION,
    responses: { 200: ok('The session.', consoleSessionResponseSchema), ...errors([401]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/console/session',
    operationId: 'consoleSignOut',
    tags,
    summary: 'Sign out: the session is deleted server-side and the cookie cleared',
    security: SESSION,
    request: CSRF,
    responses: { 200: ok('Signed out.', consoleSignedOutResponseSchema), ...errors([401, 403], FORBIDDEN) },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/batches',
    operationId: 'consoleUpload',
    tags,
    summary: 'Upload a batch file (multipart/form-data, a part named "file"), as POST /api/filebatch',
    security: SESSION,
    request: {
      query: consoleUploadQuerySchema,
      headers: CSRF.headers.extend(uploadHeaderSchema.shape),
      body: { required: true, content: { 'multipart/form-data': { schema: z.strictObject({ file: z.string().meta({ format: 'binary', contentMediaType: 'text/csv' }) }) } } },
    },
    responses: {
      200: {
        ...ok('The batch, pending (or the first upload\'s answer again, under a repeated Idempotency-Key).', uploadResponseSchema),
        headers: { 'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } } },
      },
      ...errors([400, 401, 403, 409, 413, 429], {
        ...FORBIDDEN,
        400: 'The file was refused: `msg` names the line and the problem.',
        409: 'The same file was uploaded in the last 24 hours (`msg` names its batch; `?allow_duplicate=true` uploads it anyway), or the Idempotency-Key was used for another file.',
      }),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/batches/check',
    operationId: 'consoleCheckFile',
    tags,
    summary: 'Check a batch file before uploading it, as POST /api/filebatch?validate_only=true: nothing is stored or charged',
    security: SESSION,
    request: {
      headers: CSRF.headers,
      body: { required: true, content: { 'multipart/form-data': { schema: z.strictObject({ file: z.string().meta({ format: 'binary', contentMediaType: 'text/csv' }) }) } } },
    },
    responses: {
      200: ok("The file's report: row errors, rows by type, totals by currency.", validateOnlyResponseSchema),
      ...errors([400, 401, 403, 413, 429], { ...FORBIDDEN, 400: 'The file was refused: `msg` names the line and the problem.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/batches',
    operationId: 'consoleListBatches',
    tags,
    summary: "The merchant's batches, newest first (as GET /api/filebatch)",
    security: SESSION,
    request: { query: listQuerySchema },
    responses: { 200: ok('A page of batches.', batchListResponseSchema), ...errors([400, 401]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/batches/{id}/summary',
    operationId: 'consoleBatchSummary',
    tags,
    summary: 'Counts of a completed batch by result, and its first refused rows with their lines and reasons',
    description:
      'Computed by the Worker from the result parts as it streams them; the browser never loads the file. ' +
      '`receipts`: its email receipts by state as of now (sent, queued, failed); receipts are sent paced behind processing (docs/receipts.md).',
    security: SESSION,
    request: { params: batchIdParamSchema },
    responses: {
      200: ok('The summary.', batchSummaryResponseSchema),
      ...errors([400, 401, 404, 409, 410], { 409: 'The batch is not completed.', 410: 'Results expired.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/batches/{id}/download',
    operationId: 'consoleDownload',
    tags,
    summary: 'The result CSV of a completed batch, streamed (as GET /api/filebatch/{id}/download)',
    security: SESSION,
    request: { params: batchIdParamSchema },
    responses: {
      200: {
        description: 'The result CSV.',
        headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; the file name ends in -results.csv' } },
        content: { 'text/csv': { schema: z.string().meta({ contentMediaType: 'text/csv' }) } } },
      ...errors([400, 401, 404, 409, 410], { 409: 'The batch is not completed.', 410: 'Results expired.' }),
    },
  });
  for (const [action, doc] of Object.entries(BATCH_CONTROLS)) {
    registry.registerPath({
      method: 'post',
      path: `/console/batches/{id}/${action}`,
      operationId: `console${doc.operationId[0]?.toUpperCase()}${doc.operationId.slice(1)}`,
      tags,
      summary: `${doc.summary} (as POST /api/filebatch/{id}/${action})`,
      description: 'No request body: one is ignored.',
      security: SESSION,
      request: { params: batchIdParamSchema, headers: CSRF.headers },
      responses: {
        200: ok('The batch record after the action.', batchControlResponseSchema),
        ...errors([400, 401, 403, 404, 409], { ...FORBIDDEN, 409: 'The batch has ended: `msg` names its status.' }),
      },
    });
  }
}
