import { successEnvelopeSchema } from '../../schemas/envelope';
import { RESULT_COLUMNS } from '../../schemas/transaction-columns';
import { z } from 'zod';
import { transactionIdParamSchema } from '../../schemas/transaction-http';
import {
  exportIdParamSchema,
  transactionDetailSchema,
  transactionExportSchema,
  transactionExportStateSchema,
  transactionSearchResponseSchema,
  transactionSearchSchema,
} from '../../schemas/transaction-search';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Transactions'];

export function registerTransactionSearch(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/transaction/search',
    operationId: 'searchTransactions',
    tags,
    summary: "Find the merchant's transactions (FluidPay's search)",
    description:
      "FluidPay's filters, each an object: strings `{operator: '=' | '!=', value}`, integers `{operator: '=' | '!=' | '<' | '>', value}`, " +
      'dates `{start_date, end_date}` (RFC 3339); beyond FluidPay `batch_id`, `card_brand`, `last_four`. Without `created_at` the last four ' +
      'months are searched, and `window` says so. Newest first; `limit` 1–100 (default 20) with `offset` (≤ 10,000), or `cursor` (the ' +
      "previous answer's `next_cursor`, stable while new transactions arrive). A transaction is found as soon as its answer was sent (a batch " +
      'row: once its chunk counts in processed_lines); a capture, void, refund or settlement as soon as it answered. A card number in a ' +
      'filter is a 400. docs/transactions.md, "Search".',
    security: SECRET_KEY,
    request: {
      body: {
        required: true,
        content: json(transactionSearchSchema, {
          created_at: { start_date: '2026-11-01T00:00:00Z', end_date: '2026-11-30T23:59:59Z' },
          status: { operator: '=', value: 'settled' },
          amount: { operator: '>', value: 1000 },
          limit: 20,
        }),
      },
    },
    responses: {
      200: ok('A page of the matches, how many match, the window searched and the next page\'s cursor.', transactionSearchResponseSchema),
      ...errors([400, 401, 413, 429], { 400: 'A malformed filter (the message names it), a card number in a value, a cursor of another search, altered, or issued to another merchant (cursors are signed).', 429: 'The merchant\'s searches are over their rate (docs/limits.md): retry after `Retry-After` seconds.' }),
    },
  });
  const exportRecord = successEnvelopeSchema(transactionExportStateSchema);
  registry.registerPath({
    method: 'post',
    path: '/api/transaction/export',
    operationId: 'exportTransactions',
    tags,
    summary: 'Export every transaction a search finds to a CSV, in the background',
    description:
      "The search's filters (no paging), the window defaulting as a search's. 202 with the export (`status` running); " +
      'GET /api/transaction/export/{id} shows its progress, and its download is the CSV once completed. Any size: written in steps ' +
      "with the search's cursor (each transaction once however many arrive), memory flat. `export.completed` goes to the webhook " +
      'endpoints subscribed to it. A settlement batch\'s transactions: `settlement_batch_id` `=` its id. Kept 10 days (BATCH_RETENTION_DAYS).',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(transactionExportSchema, { settlement_batch_id: { operator: '=', value: 'stl_20261124_sandbox_demo0000000000000000' } }) } },
    responses: { 202: ok('The export, started.', exportRecord), ...errors([400, 401, 413, 429], { 429: 'Over the merchant\'s export rate, or 3 of its exports are running (docs/limits.md): retry after `Retry-After` seconds.' }) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/transaction/export/{id}',
    operationId: 'getTransactionExport',
    tags,
    summary: "An export's progress",
    security: SECRET_KEY,
    request: { params: exportIdParamSchema },
    responses: { 200: ok('The export: rows written, total, status, and once completed its download_url and expires_at.', exportRecord), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/transaction/export/{id}/download',
    operationId: 'downloadTransactionExport',
    tags,
    summary: "A completed export's CSV (streamed from R2)",
    security: SECRET_KEY,
    request: { params: exportIdParamSchema },
    responses: {
      200: {
        description: `The CSV: the result file's header and one row per transaction, newest first, every field quoted; the transactions as they were when the export read them. Columns: ${RESULT_COLUMNS.join(', ')}.`,
        headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="transactions-{id}.csv"' } },
        content: { 'text/csv': { schema: { type: 'string', contentMediaType: 'text/csv' } } },
      },
      ...errors([400, 401, 404, 409, 410], { 409: 'The export is still running (or failed).', 410: 'The export is past its 10 days (`export expired`).' }),
    },
  });
}

const CONSOLE_SESSION = [{ consoleSession: [] }];
const CSRF = { headers: z.object({ 'X-CSRF-Token': z.string().meta({ description: 'The `csrf_token` of the session.' }) }) };

/** The console's Transactions page's routes (session cookie; CSRF token on POST). */
export function registerConsoleTransactions(registry: Registry): void {
  const tags = ['Console'];
  const exportRecord = successEnvelopeSchema(transactionExportStateSchema);
  registry.registerPath({
    method: 'post',
    path: '/console/transactions/search',
    operationId: 'consoleSearchTransactions',
    tags,
    summary: 'The console\'s search: the same request and answer as POST /api/transaction/search',
    security: CONSOLE_SESSION,
    request: { ...CSRF, body: { required: true, content: json(transactionSearchSchema) } },
    responses: { 200: ok('A page of the matches.', transactionSearchResponseSchema), ...errors([400, 401, 403, 413, 429], { 403: 'Another origin, or a missing or wrong X-CSRF-Token.' }) },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/transactions/{id}',
    operationId: 'consoleTransactionDetail',
    tags,
    summary: 'A transaction with its refunds and the events of its life (created, captured, settled, refunded, voided, expired)',
    security: CONSOLE_SESSION,
    request: { params: transactionIdParamSchema },
    responses: { 200: ok('The transaction as it is now, its refunds and its lifecycle.', successEnvelopeSchema(transactionDetailSchema)), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/console/transactions/export',
    operationId: 'consoleExportTransactions',
    tags,
    summary: 'The console\'s export: the same as POST /api/transaction/export',
    security: CONSOLE_SESSION,
    request: { ...CSRF, body: { required: true, content: json(transactionExportSchema) } },
    responses: { 202: ok('The export, started.', exportRecord), ...errors([400, 401, 403, 413, 429], { 403: 'Another origin, or a missing or wrong X-CSRF-Token.' }) },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/transactions/export/{id}',
    operationId: 'consoleTransactionExport',
    tags,
    summary: "An export's progress (as GET /api/transaction/export/{id})",
    security: CONSOLE_SESSION,
    request: { params: exportIdParamSchema },
    responses: { 200: ok('The export.', exportRecord), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/transactions/export/{id}/download',
    operationId: 'consoleDownloadTransactionExport',
    tags,
    summary: "A completed export's CSV (as GET /api/transaction/export/{id}/download)",
    security: CONSOLE_SESSION,
    request: { params: exportIdParamSchema },
    responses: {
      200: {
        description: 'The CSV.',
        headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="transactions-{id}.csv"' } },
        content: { 'text/csv': { schema: { type: 'string', contentMediaType: 'text/csv' } } },
      },
      ...errors([400, 401, 404, 409, 410]),
    },
  });
}
