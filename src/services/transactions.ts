/**
 * TEMPORARY stand-in for the transaction engine (branch `engine`), so the batch pipeline runs end
 * to end before the engine lands. Same signature as the real one; it checks transaction_type and
 * amount only, stores nothing and charges nothing. Replaced wholesale by main's version on merge.
 */
import type { Caller, Env } from '../env';
import { isoTimestamp, type Clock } from '../lib/time';
import {
  RESULT_COLUMNS,
  type RowError,
  type TransactionContext,
  type TransactionOutcome,
  type TransactionRecord,
  type TransactionRequest,
} from '../schemas/transaction';

const TYPES = new Set(['sale', 'authorize', 'credit']);

function emptyRecord(): TransactionRecord {
  const record = {} as TransactionRecord;
  for (const column of RESULT_COLUMNS) record[column] = null;
  return record;
}

export async function processTransactions(
  _env: Env,
  caller: Caller,
  requests: TransactionRequest[],
  context: TransactionContext,
  clock: Clock,
): Promise<TransactionOutcome[]> {
  const now = isoTimestamp(clock());
  return requests.map((request, index): TransactionOutcome => {
    const { input } = request;
    const errors: RowError[] = [];
    if (!input.transaction_type || !TYPES.has(input.transaction_type)) {
      errors.push({ field: 'transaction_type', msg: 'must be one of sale, authorize, credit' });
    }
    const amount = input.amount ?? input.base_amount;
    if (amount === undefined || !/^\d+$/.test(amount)) {
      errors.push({ field: 'amount', msg: 'must be an integer in minor units' });
    }
    const record = emptyRecord();
    record.id = `tmp_${index}`;
    record.user_name = caller.merchantName;
    record.idempotency_key = request.idempotencyKey;
    record.type = input.transaction_type ?? null;
    record.transaction_source = context.source;
    record.ip_address = context.ipAddress;
    record.amount = amount !== undefined && /^\d+$/.test(amount) ? Number(amount) : null;
    record.created_at = now;
    if (errors.length > 0) {
      record.response = 'error';
      record.response_code = 300;
      record.processor_response_text = errors.map((e) => `${e.field}: ${e.msg}`).join('; ');
      return { ok: false, reason: 'invalid', errors, record };
    }
    record.response = 'approved';
    record.response_code = 100;
    record.status = 'pending_settlement';
    return { ok: true, record, replayed: false };
  });
}
