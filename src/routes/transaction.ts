/**
 * POST /api/transaction: one sale, authorize or credit through the engine the batch files use.
 * GET /api/transaction/{id}: a recorded transaction of the caller's merchant.
 * POST /api/transaction/{id}/capture | void | refund: its lifecycle (services/transactions/operations.ts).
 * Each answers the transaction record inside the success envelope (docs/transactions.md); the work
 * is services/api-transaction.ts.
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { describeFieldErrors } from '../lib/field-errors';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { transactionRateLimit } from '../middleware/merchant-rate-limit';
import { optionalJson, validate, validateJsonByShape } from '../middleware/validate';
import { transactionRequestSchema } from '../schemas/fluidpay-transaction';
import { resendBodySchema } from '../schemas/receipts';
import { captureBodySchema, refundBodySchema, voidBodySchema } from '../schemas/settlement';
import { idempotencyHeaderSchema, transactionIdParamSchema } from '../schemas/transaction-http';
import type { OperationKind } from '../storage/ledger-shard';
import { createTransaction, operateOnTransaction } from '../services/api-transaction';
import { recordView } from '../services/fluidpay/record';
import { transactionRequestSchemaFor } from '../services/fluidpay/request';
import { resendReceipt, transactionReceipts } from '../services/receipts/receipts';
import { getTransaction } from '../services/transactions/engine';
import type { OperationDetails } from '../services/transactions/operation-details';
import type { OperationOutcome } from '../services/transactions/operations';

export const transaction = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post(
  '/',
  // Card testers run stolen numbers through single charges: limited before any other work, per
  // merchant at its rate tier (docs/limits.md, "Rate tiers"), whichever of its keys is used.
  transactionRateLimit,
  validate('header', idempotencyHeaderSchema),
  // binbatch's flat columns or FluidPay's nested body, told apart by shape (docs/api.md, "Coming from FluidPay").
  validateJsonByShape(transactionRequestSchema, transactionRequestSchemaFor),
  async (c) => {
    const { 'idempotency-key': idempotencyKey, 'cf-connecting-ip': callerIp } = c.req.valid('header');
    const outcome = await createTransaction(c.env, c.get('caller'), c.req.valid('json'), { idempotencyKey, callerIp: callerIp ?? null }, systemClock);
    if (!outcome.ok) {
      const message = describeFieldErrors(outcome.errors);
      // Another request with this key is still with the processor: 409, and ask again shortly
      // (its answer is usually there within a second; docs/transactions.md, "Idempotency").
      if (outcome.reason === 'in_progress') throw new AppError('conflict', message, outcome.errors, { 'Retry-After': '1' });
      throw new AppError(outcome.reason === 'idempotency_conflict' ? 'conflict' : 'bad_request', message, outcome.errors);
    }
    if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
    return c.json(success(outcome.record), outcome.replayed ? 200 : 201);
  },
  )
  .get('/:id', validate('param', transactionIdParamSchema), async (c) => {
  const found = await getTransaction(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
  if (found.ok) {
    // Its email receipts and their state (docs/receipts.md): not result CSV columns, the JSON record's own.
    const receipts = await transactionReceipts(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
    return c.json(success({ ...recordView(found.record, found.amountRefunded, c.get('caller').merchantId), receipts }));
  }
  // Past TRANSACTION_RETENTION_DAYS the record is only in the shard's archive (docs/transactions.md, "Retention").
  if (found.reason === 'archived') throw new AppError('gone', `transaction archived: ${found.archive}`);
  throw new AppError('not_found', 'transaction not found');
  })
  // Capture, void and refund (docs/transactions.md, "Lifecycle"): each body is optional, and checked
  // first (as every JSON body: its media type and fields before the resource its path names).
  .post('/:id/capture', optionalJson(captureBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) => {
    const { amount, ...fields } = c.req.valid('json');
    const details = compact({
      taxAmount: fields.tax_amount,
      taxExempt: fields.tax_exempt,
      shippingAmount: fields.shipping_amount,
      orderId: fields.order_id,
      poNumber: fields.po_number,
      ipAddress: fields.ip_address,
    });
    return answerOperation(c, await operate(c, 'capture', amount ?? null, details));
  })
  .post('/:id/void', optionalJson(voidBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) =>
    answerOperation(c, await operate(c, 'void', null, null)),
  )
  .post('/:id/refund', optionalJson(refundBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) => {
    const { amount, surcharge } = c.req.valid('json');
    return answerOperation(c, await operate(c, 'refund', amount ?? null, compact({ surcharge })));
  })
  // Sends the receipt again, optionally to another address (docs/receipts.md, "Sending one again").
  // Limited as new transactions are: each call can mail a customer.
  .post(
    '/:id/receipt',
    transactionRateLimit,
    optionalJson(resendBodySchema),
    validate('param', transactionIdParamSchema),
    validate('header', idempotencyHeaderSchema),
    async (c) => {
      const id = c.req.valid('param').id;
      const { 'idempotency-key': requestKey } = c.req.valid('header');
      const result = await resendReceipt(c.env, c.get('caller').merchantId, id, { to: c.req.valid('json').email ?? null, requestKey: requestKey ?? null }, systemClock);
      if (result.ok) {
        if (result.replayed) c.header('Idempotent-Replayed', 'true');
        // A replay queues nothing: 200, as every route answers its replays (202: queued now).
        return c.json(success(result.receipt), result.replayed ? 200 : 202);
      }
      switch (result.reason) {
        case 'not_found':
          throw new AppError('not_found', result.message);
        case 'archived':
          throw new AppError('gone', result.message);
        case 'no_address':
          throw new AppError('bad_request', result.message, [{ field: 'email', msg: 'is required: the transaction has no email_address or billing_email' }]);
        case 'no_receipt':
        case 'limit':
          throw new AppError('conflict', result.message);
      }
    },
  );

/** The details given (undefined ones dropped), or null when none was. */
function compact(details: OperationDetails): OperationDetails | null {
  const given = Object.fromEntries(Object.entries(details).filter(([, value]) => value !== undefined)) as OperationDetails;
  return Object.keys(given).length > 0 ? given : null;
}

type OperationContext = Context<AppEnv, string, { out: { param: { id: string }; header: { 'idempotency-key'?: string | undefined; 'cf-connecting-ip'?: string | undefined } } }>;

async function operate(c: OperationContext, kind: OperationKind, amount: number | null, details: OperationDetails | null): Promise<OperationOutcome> {
  const { 'idempotency-key': idempotencyKey, 'cf-connecting-ip': ipAddress } = c.req.valid('header');
  const transactionId = c.req.valid('param').id;
  const input = { transactionId, kind, amount, idempotencyKey, ipAddress: ipAddress ?? null, ...(details ? { details } : {}) };
  const outcome = await operateOnTransaction(c.env, c.get('caller'), input, systemClock);
  if (!outcome.ok && outcome.reason === 'invalid') throw new AppError('bad_request', describeFieldErrors(outcome.errors), outcome.errors);
  return outcome;
}

function answerOperation(c: Context<AppEnv>, outcome: OperationOutcome) {
  if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
  if (outcome.ok) return c.json(success(recordView(outcome.record, outcome.record.amount_refunded, c.get('caller').merchantId)), outcome.status);
  switch (outcome.reason) {
    case 'not_found':
      throw new AppError('not_found', outcome.message);
    case 'archived':
      throw new AppError('gone', outcome.message);
    case 'amount':
      throw new AppError('bad_request', outcome.message, [{ field: 'amount', msg: outcome.message }]);
    case 'surcharge':
      throw new AppError('bad_request', outcome.message, [{ field: 'surcharge', msg: outcome.message.replace(/^surcharge: /, '') }]);
    case 'in_progress':
      throw new AppError('conflict', outcome.message, undefined, { 'Retry-After': '1' });
    case 'wrong_state':
    case 'limit':
    case 'idempotency_conflict':
      throw new AppError('conflict', outcome.message);
    case 'declined':
      throw new AppError('payment_declined', outcome.message, undefined, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : undefined);
  }
}
