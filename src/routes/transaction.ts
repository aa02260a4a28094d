/**
 * POST /api/transaction: one sale, authorize or credit through the engine the batch files use.
 * GET /api/transaction/{id}: a recorded transaction of the caller's merchant.
 * POST /api/transaction/{id}/capture | void | refund: its lifecycle (services/transactions/operations.ts).
 * Each answers the transaction record inside the success envelope (docs/transactions.md).
 */
import { Hono, type Context } from 'hono';
import type { AppEnv, Env } from '../env';
import { publishTransactionEvent } from '../services/webhooks/transaction-events';
import type { TransactionRecordView } from '../schemas/transaction-response';
import { AppError, success } from '../errors';
import { randomId } from '../lib/crypto';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { transactionRateLimit } from '../middleware/merchant-rate-limit';
import { validate } from '../middleware/validate';
import { idempotencyHeaderSchema, transactionBodySchema, transactionIdParamSchema } from '../schemas/transaction-http';
import { getTransaction, processTransactions } from '../services/transactions/engine';
import { runOperation, type OperationOutcome } from '../services/transactions/operations';
import { recordView } from '../services/transactions/fluidpay-record';
import { completeFluidPayInput } from '../services/transactions/fluidpay-request';
import { checkDetails, detailsNeedRecord, type OperationDetails } from '../services/transactions/operation-details';
import {
  fluidPayFieldOf,
  fluidPayTransactionSchema,
  isFluidPayTransactionBody,
  transactionRequestSchema,
  translateFluidPayTransaction,
  type FluidPayTransactionBody,
} from '../schemas/fluidpay-transaction';
import type { TransactionInput } from '../schemas/transaction-columns';
import { captureBodySchema, refundBodySchema, voidBodySchema } from '../schemas/settlement';
import type { OperationKind } from '../storage/ledger-shard';
import { optionalJson, validateJsonByShape } from '../middleware/validate';
import { describeFieldErrors } from '../lib/field-errors';
import { resendBodySchema } from '../schemas/receipts';
import { resendReceipt, transactionReceipts } from '../services/receipts/receipts';

export const transaction = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post(
  '/',
  // Card testers run stolen numbers through single charges: limited before any other work, per
  // merchant at its rate tier (docs/limits.md, "Rate tiers"), whichever of its keys is used.
  transactionRateLimit,
  validate('header', idempotencyHeaderSchema),
  // binbatch's flat columns or FluidPay's nested body, told apart by shape (docs/api.md, "Coming from FluidPay").
  validateJsonByShape(transactionRequestSchema, (body) => (isFluidPayTransactionBody(body) ? fluidPayTransactionSchema : transactionBodySchema)),
  async (c) => {
    const { 'idempotency-key': sentKey, 'cf-connecting-ip': callerIp } = c.req.valid('header');
    const body = c.req.valid('json');
    const caller = c.get('caller');
    let input: TransactionInput;
    let key = sentKey;
    let ipAddress = callerIp ?? null;
    // Errors name the fields the client sent: FluidPay's paths for its body.
    let rename = (field: string) => field;
    if (isFluidPayTransactionBody(body)) {
      const request = translateFluidPayTransaction(body as FluidPayTransactionBody);
      rename = fluidPayFieldOf;
      if (request.idempotencyKey !== null && sentKey !== undefined && request.idempotencyKey !== sentKey) {
        throw new AppError('bad_request', 'idempotency_key: differs from the Idempotency-Key header (send one of them)', [
          { field: 'idempotency_key', msg: 'differs from the Idempotency-Key header (send one of them)' },
        ]);
      }
      key = request.idempotencyKey ?? sentKey;
      ipAddress = request.ipAddress ?? ipAddress;
      const completed = await completeFluidPayInput(c.env, caller.merchantId, request, systemClock());
      if (!completed.ok) throw new AppError('bad_request', describeFieldErrors(completed.errors), completed.errors);
      input = completed.input;
    } else {
      input = body as TransactionInput;
    }
    const [outcome] = await processTransactions(
      c.env,
      caller,
      // Without a key, a generated one is recorded: the request is simply not retry-safe.
      [{ input, idempotencyKey: key ?? randomId(24, 'auto_') }],
      { source: 'api', ipAddress },
      systemClock,
    );
    if (!outcome) throw new Error('transaction engine answered no outcome');
    if (!outcome.ok) {
      const errors = outcome.errors.map((error) => ({ ...error, field: rename(error.field) }));
      // Another request with this key is still with the processor: 409, and ask again shortly
      // (its answer is usually there within a second; docs/transactions.md, "Idempotency").
      if (outcome.reason === 'in_progress') {
        throw new AppError('conflict', describeFieldErrors(errors), errors, { 'Retry-After': '1' });
      }
      const code = outcome.reason === 'idempotency_conflict' ? 'conflict' : 'bad_request';
      throw new AppError(code, describeFieldErrors(errors), errors);
    }
    if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
    const view = recordView(outcome.record, 0, caller.merchantId);
    // Announced by the request that created it, never by a replay (docs/webhooks.md, "transaction_create").
    if (!outcome.replayed) await announce(c.env, caller.merchantId, view);
    return c.json(success(view), outcome.replayed ? 200 : 201);
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

/**
 * FluidPay's transaction_create, for endpoints that subscribed (services/webhooks/transaction-events.ts),
 * sent after the ledger recorded the transaction and before the answer. The transaction stands
 * whatever happens here, so the answer does too: an event that could not be queued is logged
 * with its transaction id, and the endpoint's merchant finds the transaction by searching.
 */
async function announce(env: Env, merchantId: string, view: TransactionRecordView): Promise<void> {
  const unsent = (reason: string) =>
    console.error(JSON.stringify({ level: 'error', event: 'transaction_event_not_queued', merchant_id: merchantId, transaction_id: view.id, reason }));
  try {
    const published = await publishTransactionEvent({ db: env.DB, queue: env.TRANSACTION_EVENT_QUEUE }, merchantId, view);
    if ('refused' in published) unsent(`message of ${published.bytes} bytes over the budget`);
  } catch (err) {
    unsent(err instanceof Error ? err.message.slice(0, 200) : 'unknown');
  }
}

/** The details given (undefined ones dropped), or null when none was. */
function compact(details: OperationDetails): OperationDetails | null {
  const given = Object.fromEntries(Object.entries(details).filter(([, value]) => value !== undefined)) as OperationDetails;
  return Object.keys(given).length > 0 ? given : null;
}

type OperationContext = Context<AppEnv, string, { out: { param: { id: string }; header: { 'idempotency-key'?: string | undefined; 'cf-connecting-ip'?: string | undefined } } }>;

async function operate(c: OperationContext, kind: OperationKind, amount: number | null, details: OperationDetails | null): Promise<OperationOutcome> {
  const { 'idempotency-key': idempotencyKey, 'cf-connecting-ip': ipAddress } = c.req.valid('header');
  const transactionId = c.req.valid('param').id;
  const caller = c.get('caller');
  if (details && detailsNeedRecord(details)) {
    // FluidPay's amounts are parts of what the operation moves: checked against the record before the processor is asked.
    const found = await getTransaction(c.env, caller.merchantId, transactionId, systemClock);
    if (found.ok) {
      const errors = checkDetails(kind, found.record, found.amountRefunded, amount, details);
      if (errors.length > 0) throw new AppError('bad_request', describeFieldErrors(errors), errors);
    }
  }
  return runOperation(c.env, caller, { transactionId, kind, amount, idempotencyKey, ipAddress: ipAddress ?? null, ...(details ? { details } : {}) }, systemClock);
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
