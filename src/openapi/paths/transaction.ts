import { successEnvelopeSchema } from '../../schemas/envelope';
import { idempotencyHeaderSchema, PAYMENT_SOURCE_COLUMNS, transactionIdParamSchema } from '../../schemas/transaction-http';
import { transactionRequestSchema } from '../../schemas/fluidpay-transaction';
import { transactionRecordSchema } from '../../schemas/transaction-response';
import { captureBodySchema, refundBodySchema, voidBodySchema } from '../../schemas/settlement';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';
import { receiptStateSchema, resendBodySchema } from '../../schemas/receipts';

const tags = ['Transactions'];
const record = successEnvelopeSchema(transactionRecordSchema);

const replayHeaders = { 'Idempotent-Replayed': { description: 'true: a replay of the first answer under this Idempotency-Key.', schema: { type: 'string' as const, enum: ['true'] } } };

const OPERATIONS = [
  {
    kind: 'capture',
    operationId: 'captureTransaction',
    summary: 'Capture an authorization (all of it, or part: the rest is released)',
    body: captureBodySchema,
    status: 200,
    answer: 'The transaction, status pending_settlement, with amount_captured and captured_at.',
    rules: "Only while authorized (an authorization expires after AUTHORIZATION_EXPIRY_DAYS, 7), and not a zero-amount authorization (an account check: 409). `amount` ≤ amount_authorized, default all of it. FluidPay's optional order_id, po_number, tax_amount, shipping_amount, tax_exempt and ip_address replace what the authorization recorded (tax + shipping + surcharge ≤ the amount captured).",
  },
  {
    kind: 'void',
    operationId: 'voidTransaction',
    summary: 'Void an authorization, or a sale or credit before it settles',
    body: voidBodySchema,
    status: 200,
    answer: 'The transaction, status voided.',
    rules: 'Only while authorized or pending_settlement. No body (or {}).',
  },
  {
    kind: 'refund',
    operationId: 'refundTransaction',
    summary: 'Refund a settled sale or capture, in whole or in part',
    body: refundBodySchema,
    status: 201,
    answer: 'The new refund transaction (type refund, referenced_transaction_id the original); the original becomes partially_refunded or refunded.',
    rules: "Only once settled. `amount` ≤ what is left to refund (amount_settled − amount_refunded), default all of it; several partial refunds allowed. FluidPay's `surcharge`: the part of it that returns surcharge (the refund's service_fee), at most what the refunds before it left of the surcharge charged (400 otherwise).",
  },
] as const;

export function registerTransaction(registry: Registry): void {
  for (const op of OPERATIONS) {
    registry.registerPath({
      method: 'post',
      path: `/api/transaction/{id}/${op.kind}`,
      operationId: op.operationId,
      tags,
      summary: op.summary,
      description:
        `${op.rules} Idempotency-Key as for POST /api/transaction (scoped to this transaction and operation): the same key and body answer the first answer, ` +
        'with no second processor call; another body is a 409. Operations on one transaction run one at a time. ' +
        'Sandbox: an amount of 303 (for a void, the transaction\'s amount) is declined (402).',
      security: SECRET_KEY,
      request: { params: transactionIdParamSchema, headers: idempotencyHeaderSchema.pick({ 'idempotency-key': true }), body: { required: false, content: json(op.body) } },
      responses: {
        [op.status]: { description: op.answer, headers: replayHeaders, content: json(record) },
        // A refund's replay creates nothing: 200 with Idempotent-Replayed, as POST /api/transaction answers its replays.
        ...(op.status === 201 ? { 200: { description: 'A replay of the first answer under this Idempotency-Key (Idempotent-Replayed: true).', headers: replayHeaders, content: json(record) } } : {}),
        ...errors([400, 401, 402, 404, 409, 410, 413], {
          400: op.kind === 'void' ? 'Malformed id or body.' : 'Malformed id or body, or `amount` over the limit (the message names it).',
          402: `The processor declined the ${op.kind}: msg says what it answered. Nothing changed.`,
          409: 'The transaction\'s status does not allow it (the message names the status and what is allowed); the Idempotency-Key was used with another body; the transaction has had 10,000 captures, voids and refunds (the most one may have); or another operation on it is in progress (Retry-After: 1).',
        }),
      },
    });
  }

  registry.registerPath({
    method: 'post',
    path: '/api/transaction',
    operationId: 'createTransaction',
    tags,
    summary: 'One sale, authorize, credit or verification (the batch rows use the same engine)',
    description:
      'Two bodies, told apart by shape: the batch CSV column names (amounts integers in minor units or strings of digits, flags booleans), ' +
      "or FluidPay's (`type`, a nested `payment_method`: card, ach, customer or token; address objects; `idempotency_key` in the body). " +
      'verification: a zero-amount authorization that checks a card (status verified). An unknown field is a 400 naming it. ' +
      'A declined or failed transaction is a 201 too: read `response`. Rate-limited per key (600 per 60 s).',
    security: SECRET_KEY,
    request: {
      // CF-Connecting-IP is validated too, but Cloudflare sets it, not the client: not a parameter here.
      headers: idempotencyHeaderSchema.pick({ 'idempotency-key': true }),
      body: {
        required: true,
        content: json(transactionRequestSchema, { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/29', amount: 1000 }),
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
      'The id names the ledger shard that holds the record (txn_b…: a batch row, txn_a{YYYYMMDD}…: an API transaction of that UTC day); an id of FluidPay\'s form (20 characters) is a 404. ' +
      'Records are kept TRANSACTION_RETENTION_DAYS (548) after their day or batch, then archived: 410 with the archive\'s location in msg.',
    security: SECRET_KEY,
    request: { params: transactionIdParamSchema },
    responses: {
      200: ok('The record.', record),
      ...errors([400, 401, 404, 410], { 410: 'transaction archived: {R2 key of the archive} (past TRANSACTION_RETENTION_DAYS).' }),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/transaction/{id}/receipt',
    operationId: 'resendReceipt',
    tags,
    summary: 'Send the email receipt again, optionally to another address',
    description:
      'Queues the receipt of the transaction as it is now (a voided one: a void receipt; a refund: its refund receipt) for its email_address ' +
      '(else billing_email), or for `email`. It is sent within seconds, paced with every other receipt (docs/receipts.md); GET /api/transaction/{id} ' +
      'shows its state in `receipts`. Works whether or not the transaction asked for email_receipt. At most 10 receipts per transaction. ' +
      'Idempotency-Key: the same key answers the receipt it queued (Idempotent-Replayed: true), nothing more is sent. Rate-limited per key with POST /api/transaction.',
    security: SECRET_KEY,
    request: {
      params: transactionIdParamSchema,
      headers: idempotencyHeaderSchema.pick({ 'idempotency-key': true }),
      body: { required: false, content: json(resendBodySchema, { email: 'customer@example.com' }) },
    },
    responses: {
      202: { description: 'Queued: the receipt and its state (status queued).', content: json(successEnvelopeSchema(receiptStateSchema)) },
      200: { description: 'A replay of the first answer under this Idempotency-Key (Idempotent-Replayed: true): nothing more is queued.', headers: replayHeaders, content: json(successEnvelopeSchema(receiptStateSchema)) },
      ...errors([400, 401, 404, 409, 410, 413, 429], {
        400: 'Malformed id or `email`, or the transaction has no address and no `email` was given (errors names `email`).',
        409: 'Only an approved transaction has a receipt; or this transaction has had 10 receipts.',
      }),
    },
  });
}

type SchemaObject = Record<string, unknown>;

/**
 * Writes out the flat body's payment-source alternatives, which its schema names by reference
 * (schemas/transaction-http.ts, PAYMENT_SOURCE_COLUMNS): each is the generated body's own closed
 * object (the same properties, so one zod schema stays their only source) with its source's
 * columns required. Run on the generated document: zod-to-openapi writes no component that is
 * only referred to by name.
 */
export function addPaymentSourceAlternatives(schemas: Record<string, unknown>): void {
  const { properties, additionalProperties } = schemas.TransactionColumnsRequest as SchemaObject;
  for (const { id, title, required } of PAYMENT_SOURCE_COLUMNS) {
    schemas[id] = { type: 'object', title, properties, additionalProperties, required: [...required] };
  }
}
