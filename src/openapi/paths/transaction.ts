import { successEnvelopeSchema } from '../../schemas/envelope';
import { idempotencyHeaderSchema, transactionBodySchema, transactionIdParamSchema } from '../../schemas/transaction-http';
import { transactionRecordSchema } from '../../schemas/transaction-response';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

const tags = ['Transactions'];
const record = successEnvelopeSchema(transactionRecordSchema);

export function registerTransaction(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/transaction',
    operationId: 'createTransaction',
    tags,
    summary: 'One sale, authorize or credit (the batch rows use the same engine)',
    description:
      'The body uses the batch CSV column names; amounts are integers in minor units (or strings of digits), flags booleans. ' +
      'A declined or failed transaction is a 201 too: read `response`. Rate-limited per key (600 per 60 s).',
    security: SECRET_KEY,
    request: {
      // CF-Connecting-IP is validated too, but Cloudflare sets it, not the client: not a parameter here.
      headers: idempotencyHeaderSchema.pick({ 'idempotency-key': true }),
      body: {
        required: true,
        content: json(transactionBodySchema, { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/29', amount: 1000 }),
      },
    },
    responses: {
      201: ok('Processed now and recorded.', record),
      200: {
        description: 'Replay: the same Idempotency-Key with the same body answers the original record; nothing is charged again.',
        headers: { 'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } } },
        content: json(record),
      },
      ...errors([400, 401, 409, 413, 429], { 409: 'The Idempotency-Key was used before with a different body.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/transaction/{id}',
    operationId: 'getTransaction',
    tags,
    summary: 'A recorded transaction',
    description:
      'The id names the ledger shard that holds the record (txn_b…: a batch row, txn_a{YYYYMMDD}…: an API transaction of that UTC day). ' +
      'Records are kept TRANSACTION_RETENTION_DAYS (548) after their day or batch, then archived: 410 with the archive\'s location in msg.',
    security: SECRET_KEY,
    request: { params: transactionIdParamSchema },
    responses: {
      200: ok('The record.', record),
      ...errors([400, 401, 404, 410], { 410: 'transaction archived: {R2 key of the archive} (past TRANSACTION_RETENTION_DAYS).' }),
    },
  });
}
