/**
 * POST /api/transaction: one sale, authorize or credit through the engine the batch files use.
 * GET /api/transaction/{id}: a recorded transaction of the caller's merchant.
 * Both answer the transaction record inside the success envelope (docs/transactions.md).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { AppError, success } from '../errors';
import { randomId } from '../lib/crypto';
import { systemClock } from '../lib/time';
import { requireSecretKey } from '../middleware/auth';
import { rateLimitPerKey } from '../middleware/key-rate-limit';
import { validate } from '../middleware/validate';
import { idempotencyHeaderSchema, transactionBodySchema, transactionIdParamSchema } from '../schemas/transaction-http';
import { getTransaction, processTransactions } from '../services/transactions/engine';
import { describeFieldErrors } from '../lib/field-errors';

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
    return c.json(success(outcome.record), outcome.replayed ? 200 : 201);
  },
  )
  .get('/:id', validate('param', transactionIdParamSchema), async (c) => {
  const found = await getTransaction(c.env, c.get('caller').merchantId, c.req.valid('param').id, systemClock);
  if (found.ok) return c.json(success(found.record));
  // Past TRANSACTION_RETENTION_DAYS the record is only in the shard's archive (docs/transactions.md, "Retention").
  if (found.reason === 'archived') throw new AppError('gone', `transaction archived: ${found.archive}`);
  throw new AppError('not_found', 'transaction not found');
  });
