/**
 * POST /api/transaction: one sale, authorize or credit through the engine the batch files use.
 * GET /api/transaction/{id}: a recorded transaction of the caller's merchant.
 * POST /api/transaction/{id}/capture | void | refund: its lifecycle (services/transactions/operations.ts).
 * Each answers the transaction record inside the success envelope (docs/transactions.md).
 */
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { randomId } from '../lib/crypto';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { rateLimitPerKey } from '../middleware/key-rate-limit';
import { validate } from '../middleware/validate';
import { idempotencyHeaderSchema, transactionBodySchema, transactionIdParamSchema } from '../schemas/transaction-http';
import { getTransaction, processTransactions } from '../services/transactions/engine';
import { runOperation, transactionView, type OperationOutcome } from '../services/transactions/operations';
import { captureBodySchema, refundBodySchema, voidBodySchema } from '../schemas/settlement';
import type { OperationKind } from '../storage/ledger-shard';
import { optionalJson } from '../middleware/validate';
import { describeFieldErrors } from '../lib/field-errors';
import { resendBodySchema } from '../schemas/receipts';
import { resendReceipt, transactionReceipts } from '../services/receipts/receipts';

/** The period of TRANSACTION_RATE_LIMITER in wrangler.toml. */
const TRANSACTION_RATE_PERIOD_SECONDS = 60;

export const transaction = new Hono<AppEnv>()
  .use(requireSecretKey)
  .post(
  '/',
  // Card testers run stolen numbers through single charges: limited per key before any other work.
  rateLimitPerKey((env) => env.TRANSACTION_RATE_LIMITER, TRANSACTION_RATE_PERIOD_SECONDS),
  validate('header', idempotencyHeaderSchema),
  validate('json', transactionBodySchema),
  async (c) => {
    const { 'idempotency-key': sentKey, 'cf-connecting-ip': ipAddress } = c.req.valid('header');
    const [outcome] = await processTransactions(
      c.env,
      c.get('caller'),
      // Without a key, a generated one is recorded: the request is simply not retry-safe.
      [{ input: c.req.valid('json'), idempotencyKey: sentKey ?? randomId(24, 'auto_') }],
      { source: 'api', ipAddress: ipAddress ?? null },
      systemClock,
    );
    if (!outcome) throw new Error('transaction engine answered no outcome');
    if (!outcome.ok) {
      // Another request with this key is still with the processor: 409, and ask again shortly
      // (its answer is usually there within a second; docs/transactions.md, "Idempotency").
      if (outcome.reason === 'in_progress') {
        throw new AppError('conflict', describeFieldErrors(outcome.errors), outcome.errors, { 'Retry-After': '1' });
      }
      const code = outcome.reason === 'idempotency_conflict' ? 'conflict' : 'bad_request';
      throw new AppError(code, describeFieldErrors(outcome.errors), outcome.errors);
    }
    if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
    return c.json(success(transactionView(outcome.record, 0)), outcome.replayed ? 200 : 201);
  },
  )
  .get('/:id', validate('param', transactionIdParamSchema), async (c) => {
  const found = await getTransaction(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
  if (found.ok) {
    // Its email receipts and their state (docs/receipts.md): not result CSV columns, the JSON record's own.
    const receipts = await transactionReceipts(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
    return c.json(success({ ...found.record, receipts, amount_refunded: found.amountRefunded }));
  }
  // Past TRANSACTION_RETENTION_DAYS the record is only in the shard's archive (docs/transactions.md, "Retention").
  if (found.reason === 'archived') throw new AppError('gone', `transaction archived: ${found.archive}`);
  throw new AppError('not_found', 'transaction not found');
  })
  // Capture, void and refund (docs/transactions.md, "Lifecycle"): each body is optional, and checked
  // first (as every JSON body: its media type and fields before the resource its path names).
  .post('/:id/capture', optionalJson(captureBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) =>
    answerOperation(c, await operate(c, 'capture', c.req.valid('json').amount ?? null)),
  )
  .post('/:id/void', optionalJson(voidBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) =>
    answerOperation(c, await operate(c, 'void', null)),
  )
  .post('/:id/refund', optionalJson(refundBodySchema), validate('param', transactionIdParamSchema), validate('header', idempotencyHeaderSchema), async (c) =>
    answerOperation(c, await operate(c, 'refund', c.req.valid('json').amount ?? null)),
  )
  // Sends the receipt again, optionally to another address (docs/receipts.md, "Sending one again").
  // Limited per key as new transactions are: each call can mail a customer.
  .post(
    '/:id/receipt',
    rateLimitPerKey((env) => env.TRANSACTION_RATE_LIMITER, TRANSACTION_RATE_PERIOD_SECONDS),
    optionalJson(resendBodySchema),
    validate('param', transactionIdParamSchema),
    validate('header', idempotencyHeaderSchema),
    async (c) => {
      const id = c.req.valid('param').id;
      const { 'idempotency-key': requestKey } = c.req.valid('header');
      const result = await resendReceipt(c.env, c.get('caller').merchantId, id, { to: c.req.valid('json').email ?? null, requestKey: requestKey ?? null }, systemClock);
      if (result.ok) {
        if (result.replayed) c.header('Idempotent-Replayed', 'true');
        return c.json(success(result.receipt), 202);
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

type OperationContext = Context<AppEnv, string, { out: { param: { id: string }; header: { 'idempotency-key'?: string | undefined; 'cf-connecting-ip'?: string | undefined } } }>;

function operate(c: OperationContext, kind: OperationKind, amount: number | null): Promise<OperationOutcome> {
  const { 'idempotency-key': idempotencyKey, 'cf-connecting-ip': ipAddress } = c.req.valid('header');
  return runOperation(c.env, c.get('caller'), { transactionId: c.req.valid('param').id, kind, amount, idempotencyKey, ipAddress: ipAddress ?? null }, systemClock);
}

function answerOperation(c: Context<AppEnv>, outcome: OperationOutcome) {
  if (outcome.replayed) c.header('Idempotent-Replayed', 'true');
  if (outcome.ok) return c.json(success(outcome.record), outcome.status);
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
    case 'idempotency_conflict':
      throw new AppError('conflict', outcome.message);
    case 'declined':
      throw new AppError('payment_declined', outcome.message, undefined, outcome.replayed ? { 'Idempotent-Replayed': 'true' } : undefined);
  }
}
