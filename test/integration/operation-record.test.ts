/**
 * What a capture, void or refund hands to what follows it (services/recorded.ts: the search index):
 * the transaction as its ledger shard wrote it, the same record and refunded amount a read of the
 * transaction answers afterwards, so the index needs no second look-up; a replay hands nothing (the
 * index then reads the transaction back, which repairs an earlier failure).
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { systemClock } from '../../src/lib/time';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/recorded';
import { getTransaction } from '../../src/services/transactions/engine';
import { operate, type OperationInput } from '../../src/services/transactions/operations';
import { admin, createMerchant } from '../helpers/api';

const VISA = '4111111111111111';

async function newCaller(): Promise<Caller> {
  const merchant = await createMerchant();
  const caller = await authenticateKey(env, merchant.secretKey);
  if (!caller) throw new Error('unknown key');
  return caller;
}

/** Settles the merchant's captured money now (a refund needs a settled sale). */
async function settleNow(caller: Caller): Promise<void> {
  const response = await admin('POST', `/admin/merchants/${caller.merchantId}/settle`);
  if (response.status !== 200) throw new Error(`settlement failed: ${response.status}`);
}

async function charge(caller: Caller, type: 'sale' | 'authorize', amount: number): Promise<string> {
  const [outcome] = await processTransactions(
    env,
    caller,
    [{ input: { transaction_type: type, cc_number: VISA, cc_expiration: '12/30', amount: String(amount) }, idempotencyKey: crypto.randomUUID() }],
    { source: 'api', ipAddress: null },
    systemClock,
  );
  if (!outcome?.ok) throw new Error(`transaction failed: ${JSON.stringify(outcome)}`);
  return String(outcome.record.id);
}

/** The operation's run, and the transaction as a read answers it right after. */
async function runAndRead(caller: Caller, input: OperationInput) {
  const run = await operate(env, caller, input, systemClock);
  const read = await getTransaction(env, caller.merchantId, input.transactionId, systemClock);
  if (!read.ok) throw new Error(`transaction ${input.transactionId} not found after the operation`);
  return { run, read };
}

describe('an operation hands on the transaction its shard wrote', () => {
  it('a capture, a partial refund and a void: the record and refunded amount a read answers next', async () => {
    const caller = await newCaller();
    const authorized = await charge(caller, 'authorize', 1200);
    const sold = await charge(caller, 'sale', 3000);
    const voided = await charge(caller, 'authorize', 800);
    await settleNow(caller);

    const operations: OperationInput[] = [
      { transactionId: authorized, kind: 'capture', amount: null, idempotencyKey: 'cap-1', ipAddress: null },
      { transactionId: sold, kind: 'refund', amount: 1000, idempotencyKey: 'ref-1', ipAddress: null },
      { transactionId: voided, kind: 'void', amount: null, idempotencyKey: 'void-1', ipAddress: null },
    ];
    const seen: { status: unknown; amountRefunded: number }[] = [];
    for (const input of operations) {
      const { run, read } = await runAndRead(caller, input);
      expect(run.outcome.ok).toBe(true);
      expect(run.current).toEqual({ record: read.record, amountRefunded: read.amountRefunded });
      seen.push({ status: run.current?.record.status, amountRefunded: run.current?.amountRefunded ?? -1 });
    }
    // The refund's transaction is the sale (its record, 1,000 refunded), not the refund's own record.
    expect(seen).toEqual([
      { status: 'pending_settlement', amountRefunded: 0 },
      { status: 'partially_refunded', amountRefunded: 1000 },
      { status: 'voided', amountRefunded: 0 },
    ]);
  });

  it('a replay hands nothing on: its answer was written by the first call', async () => {
    const caller = await newCaller();
    const authorized = await charge(caller, 'authorize', 2500);
    const input: OperationInput = { transactionId: authorized, kind: 'capture', amount: null, idempotencyKey: 'cap-again', ipAddress: null };
    const first = await operate(env, caller, input, systemClock);
    const again = await operate(env, caller, input, systemClock);
    expect(first.current?.record.status).toBe('pending_settlement');
    expect(again.outcome).toMatchObject({ ok: true, replayed: true, status: 200 });
    expect(again.current).toBeNull();
  });
});
