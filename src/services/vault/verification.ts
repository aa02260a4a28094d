/**
 * FluidPay's `?validate=true` on a vault create: the card is verified by a zero-amount
 * verification transaction (recorded like any other, type `verification`) before it is stored.
 */
import type { Caller, Env } from '../../env';
import { randomId } from '../../lib/crypto';
import { describeFieldErrors } from '../../lib/field-errors';
import type { Clock } from '../../lib/time';
import { processTransactions } from '../transactions/engine';
import type { VerifyCard } from './payment-methods';

export function cardVerifier(env: Env, caller: Caller, clock: Clock): VerifyCard {
  return async (card) => {
    const [outcome] = await processTransactions(
      env,
      caller,
      [{ input: { transaction_type: 'verification', cc_number: card.number, cc_expiration: card.expiration }, idempotencyKey: randomId(24, 'vault_') }],
      { source: 'api', ipAddress: null },
      clock,
    );
    if (!outcome) throw new Error('transaction engine answered no outcome');
    if (!outcome.ok) return { approved: false, msg: describeFieldErrors(outcome.errors) };
    const { record } = outcome;
    if (record.response === 'approved') return { approved: true };
    return { approved: false, msg: `transaction ${String(record.id)}: response_code ${String(record.response_code)}, ${String(record.processor_response_text)}` };
  };
}
