/** A ledger shard's `operations` table (storage/ledger-shard/schema.ts): captures, voids and refunds under their keys. */
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { ShardQuery } from './pages';
import type { OperationDetails } from '../../schemas/settlement';
import { DURABLE_OBJECTS, HALF } from '../../lib/platform-limits';
import { decodeStored } from './record-codec';
import { keptFields } from './operation-answers';

export type OperationKind = 'capture' | 'void' | 'refund';

/** A capture, void or refund under its key: a claim while `answer` is null, then its answer as stored (JSON, operation-answers.ts). */
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

/** `answer`: plain JSON text in rows written before compression, else the BLOB of record-codec.ts. */
export type OperationSql = { key: string; transaction_id: string; kind: OperationKind; request_hash: string; amount: number; refund_id: string | null; created_at: string; answer: string | ArrayBuffer | null };

export function operationFromSql(row: OperationSql): OperationRow {
  return {
    key: row.key,
    transactionId: row.transaction_id,
    kind: row.kind,
    requestHash: row.request_hash,
    amount: row.amount,
    refundId: row.refund_id,
    createdAt: row.created_at,
    answer: row.answer === null ? null : decodeStored(row.answer),
  };
}

/**
 * Operations a transaction may have (captures, voids, refunds, declined or not, each claim counted
 * once): a declined refund moves no money and could otherwise be repeated without end, and a
 * refund's id carries its number (`txn_r…x{n}`, services/transactions/ledger.ts parses n up to this).
 */
export const MAX_OPERATIONS_PER_TRANSACTION = 10_000;
/**
 * An operation row is its key, hash and answer (the record as answered, under 8 KB): one
 * transaction's operations (80 MB at most) stay far under half of what one object may store.
 */
const MAX_OPERATION_ROW_BYTES = 8_000;
if (MAX_OPERATIONS_PER_TRANSACTION * MAX_OPERATION_ROW_BYTES > DURABLE_OBJECTS.storageBytesPerObject * HALF) {
  throw new Error("one transaction's operations could pass half of an object's storage");
}

/**
 * The keys of a transaction's operations: every key is `{transaction id}:{kind}:{client key}`
 * (services/transactions/operations.ts makes them; a claim of another form is refused), so they are
 * the primary keys after `{id}:` and before `{id};` (';' follows ':'), read by range with no index of
 * their own. An id is letters, digits and underscores, so another id's keys never fall in the range.
 */
export function operationKeyRange(transactionId: string): [after: string, before: string] {
  return [`${transactionId}:`, `${transactionId};`];
}

/** The transaction an operation's key names (its id, before the first colon: see operationKeyRange). */
export function keyTransaction(key: string): string {
  return key.slice(0, key.indexOf(':'));
}

/**
 * The surcharge a transaction's approved refunds have returned so far (each refund's answer holds
 * its record, whose service_fee is the surcharge it returned). Read by its keys' range in the same
 * synchronous step as the claim, so two refunds cannot both return the same surcharge; at most
 * MAX_OPERATIONS_PER_TRANSACTION rows.
 */
export function surchargeRefunded(sql: SqlStorage, transactionId: string): number {
  // Answers are stored compressed (record-codec.ts): each refund's read and decoded here, not summed in SQL.
  const rows = sql.exec<{ answer: string | ArrayBuffer }>(
    `SELECT answer FROM operations WHERE key > ? AND key < ? AND kind = 'refund' AND answer IS NOT NULL`,
    ...operationKeyRange(transactionId),
  );
  let total = 0;
  for (const row of rows) {
    const kept = keptFields(decodeStored(row.answer));
    if (kept.response === 'approved') total += Number(kept.service_fee ?? 0);
  }
  return total;
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
  /** A refund's own surcharge (the part of the refund that returns the surcharge charged), when given. */
  surcharge?: number;
  now: string;
  /** Authorizations created before this have expired. */
  expiredBefore: string;
  /** A claim made before this was abandoned by its holder. */
  staleBefore: string;
}

/**
 * What the caller of a claim needs of the transaction to ask its processor: which processor, and
 * card or ACH (the id names it in errors). Not the whole record: a chunk's claims answer 500 of them.
 */
export type ClaimedTransaction = Pick<TransactionRecord, 'id' | 'processor_id' | 'payment_type'>;

export function claimedTransaction(record: TransactionRecord): ClaimedTransaction {
  return { id: record.id, processor_id: record.processor_id, payment_type: record.payment_type };
}

/** How the shard answered an operation's claim. */
export type OperationBegin =
  | { outcome: 'claimed'; operation: OperationRow; record: ClaimedTransaction }
  | { outcome: 'answered'; answer: string; requestHash: string }
  | { outcome: 'not_found' }
  | { outcome: 'in_progress'; since: string }
  | { outcome: 'abandoned'; operation: OperationRow; record: ClaimedTransaction }
  | { outcome: 'refused'; reason: 'wrong_state' | 'amount' | 'limit' | 'surcharge'; message: string };

/**
 * A completed operation's answer (JSON), and the transaction as this completion left it: absent
 * when another call had answered the operation first. An approved capture's or void's answer is
 * that transaction as written (its record and amount_refunded), so it is not sent twice:
 * `currentIsAnswer` says to read it from the answer (operationCurrent). Two records at most, each
 * under MAX_OPERATION_ROW_BYTES: far under an RPC answer's limit (RPC.payloadBytes, 32 MiB).
 */
export interface OperationCompleted {
  /** The answer's JSON; '' when `packed` carries it. */
  answer: string;
  current?: { record: TransactionRecord; amountRefunded: number };
  currentIsAnswer?: true;
  /**
   * An approved capture's or void's answer when the completion asked for it packed: status 200, the
   * record as it is now as its result columns' values in order (JSON of packResultColumns), and what
   * was refunded of it. It is also the transaction as written (the search indexes it as it is).
   */
  packed?: { record: string; amountRefunded: number };
}

/** The transaction as a completion left it (see OperationCompleted), given its answer's parsed record; null when not sent. */
export function operationCurrent(
  completed: OperationCompleted,
  answered: (TransactionRecord & { amount_refunded?: number }) | null,
): { record: TransactionRecord; amountRefunded: number } | null {
  if (completed.current) return completed.current;
  if (!completed.currentIsAnswer || answered === null) return null;
  const { amount_refunded: amountRefunded, ...record } = answered;
  return { record, amountRefunded: amountRefunded ?? 0 };
}

/** The processor's answer to a claimed operation, for the shard to apply. */
export interface OperationCompletion {
  key: string;
  query: ShardQuery;
  result: OperationResult;
  now: string;
  expiredBefore: string;
  idempotencyKey: string;
  ipAddress: string | null;
  /** FluidPay's optional capture / refund fields (services/transactions/operation-details.ts). */
  details?: OperationDetails;
  /**
   * What the claim this answers acts on, as the claim's answer said (the caller has it): the shard
   * then decides its reads from it rather than reading the claims first, and checks it against the
   * claim in its synchronous step (a mismatch fails the call, nothing written).
   */
  claimed?: { transactionId: string; kind: OperationKind };
  /**
   * An approved capture's or void's answer sent `packed` (OperationCompleted): a batch chunk's
   * result line and search index read the result columns only, and the record's JSON with its
   * names was three times the bytes to make, send and parse. What is kept under the key is the same.
   */
  packed?: true;
}
