/** A ledger shard's `operations` table (storage/ledger-shard/schema.ts): captures, voids and refunds under their keys. */
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { ShardQuery } from './pages';
import type { OperationDetails } from '../../schemas/settlement';

export type OperationKind = 'capture' | 'void' | 'refund';

/** A capture, void or refund under its key: a claim while `answer` is null, then its answer (JSON). */
export interface OperationRow {
  key: string;
  transactionId: string;
  kind: OperationKind;
  requestHash: string;
  amount: number;
  refundId: string | null;
  createdAt: string;
  answer: string | null;
}

type OperationSql = { key: string; transaction_id: string; kind: OperationKind; request_hash: string; amount: number; refund_id: string | null; created_at: string; answer: string | null };

function operationFromSql(row: OperationSql): OperationRow {
  return {
    key: row.key,
    transactionId: row.transaction_id,
    kind: row.kind,
    requestHash: row.request_hash,
    amount: row.amount,
    refundId: row.refund_id,
    createdAt: row.created_at,
    answer: row.answer,
  };
}

export function findOperation(sql: SqlStorage, key: string): OperationRow | null {
  const row = sql.exec<OperationSql>('SELECT * FROM operations WHERE key = ?', key).toArray()[0];
  return row ? operationFromSql(row) : null;
}

export function operationsOf(sql: SqlStorage, transactionId: string): OperationRow[] {
  return sql.exec<OperationSql>('SELECT * FROM operations WHERE transaction_id = ? ORDER BY created_at', transactionId).toArray().map(operationFromSql);
}

export function insertOperation(sql: SqlStorage, op: OperationRow): void {
  sql.exec(
    'INSERT INTO operations (key, transaction_id, kind, request_hash, amount, refund_id, created_at, answer) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)',
    op.key,
    op.transactionId,
    op.kind,
    op.requestHash,
    op.amount,
    op.refundId,
    op.createdAt,
  );
}

export function answerOperation(sql: SqlStorage, key: string, answer: string): void {
  sql.exec('UPDATE operations SET answer = ? WHERE key = ?', answer, key);
}

export function deleteOperation(sql: SqlStorage, key: string): void {
  sql.exec('DELETE FROM operations WHERE key = ? AND answer IS NULL', key);
}

/** A processor's answer to a charge or an operation (services' ChargeResult is this type). */
export interface OperationResult {
  response: 'approved' | 'declined' | 'error';
  responseCode: number;
  /** Minor units approved: the amount, less on a partial approval, 0 when not approved. */
  amountAuthorized: number;
  authCode: string | null;
  processorResponseCode: string | null;
  processorResponseText: string;
  avsResponseCode: string | null;
  cvvResponseCode: string | null;
}

/** A capture, void or refund asked of the shard that holds its transaction. */
export interface OperationRequest {
  transactionId: string;
  /** Where the transaction's record is (its page). */
  query: ShardQuery;
  kind: OperationKind;
  /** The operation's key in this shard: the transaction, the kind and the client's Idempotency-Key. */
  key: string;
  requestHash: string;
  amount: number | null;
  now: string;
  /** Authorizations created before this have expired. */
  expiredBefore: string;
  /** A claim made before this was abandoned by its holder. */
  staleBefore: string;
}

/** How the shard answered an operation's claim. */
export type OperationBegin =
  | { outcome: 'claimed'; operation: OperationRow; record: TransactionRecord }
  | { outcome: 'answered'; answer: string; requestHash: string }
  | { outcome: 'not_found' }
  | { outcome: 'in_progress'; since: string }
  | { outcome: 'abandoned'; operation: OperationRow; record: TransactionRecord }
  | { outcome: 'refused'; reason: 'wrong_state' | 'amount'; message: string };

/** The processor's answer to a claimed operation, for the shard to apply. */
export interface OperationCompletion {
  key: string;
  query: ShardQuery;
  result: OperationResult;
  now: string;
  expiredBefore: string;
  idempotencyKey: string;
  ipAddress: string | null;
  /** fluidpay (issue 34): FluidPay's optional capture / refund fields (services/transactions/operation-details.ts). */
  details?: OperationDetails;
}
