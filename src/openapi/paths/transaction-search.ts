import { transactionSearchResponseSchema, transactionSearchSchema } from '../../schemas/transaction-search';
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
      ...errors([400, 401, 413], { 400: 'A malformed filter (the message names it), a card number in a value, a cursor of another search.' }),
    },
  });
}
