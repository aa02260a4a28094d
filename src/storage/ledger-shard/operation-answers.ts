/**
 * An operation's answer as the `operations` table keeps it (docs/transactions.md, "Replays keep the
 * first answer"): a replay under the same key must answer exactly what the first call answered
 * (status, and the record as that operation left it), even after later operations and settlement
 * changed the transaction. The record as answered is mostly the transaction's page record (written
 * once, never changed, read by every claim and answer of the transaction anyway), so what is kept
 * is the answer's status and only the fields that differ from the page record (a capture's status,
 * amounts and times; a refund's id, type, amount and response), rebuilt at read time. A refund's
 * answer always keeps `response` and `service_fee` (the surcharge check sums them from SQL rows).
 *
 * The compact form is kept only when it rebuilds the answer byte for byte (checked as it is made);
 * otherwise, and for a declined capture or void (a short message), the answer is kept whole.
 */
import type { TransactionRecord } from '../../schemas/transaction-columns';

/** The compact form: `changed` names it (a whole answer has `record` or `message`, never `changed`). */
interface CompactAnswer {
  status: number;
  changed: Record<string, unknown>;
  /** Fields of the page record the answered record lacks (none in practice; kept for exactness). */
  dropped?: string[];
}

/**
 * What to store for `answer` (JSON, or a function making it when it is needed), given the
 * transaction's page record (null: not known, kept whole). `made`: the object `answer` is
 * `JSON.stringify` of, when the caller has it (saves parsing it again, and lets the exactness check
 * below be shown rather than made; then the answer's JSON need not be made at all).
 */
export function answerToStore(json: string | (() => string), base: TransactionRecord | null, made?: { status: number; record?: Record<string, unknown> }): string {
  const answer = typeof json === 'string' ? () => json : json;
  if (base === null) return answer();
  const parsed = made ?? (JSON.parse(answer()) as { status: number; record?: Record<string, unknown> });
  const record = parsed.record;
  if (!record) return answer();
  const baseFields = base as unknown as Record<string, unknown>;
  const baseKeys = Object.keys(baseFields);
  const keys = Object.keys(record);
  // Both records' values in their keys' order: compared by position while the fields come in the
  // same order (the usual case), with no look-up by name (70 of those each way cost more than the rest).
  const values = Object.values(record);
  const baseValues = Object.values(baseFields);
  const changed: Record<string, unknown> = {};
  // Whether the answered record's fields come in the page record's order, its own after them.
  let inBaseOrder = keys.length >= baseKeys.length;
  for (let i = 0; i < keys.length; i += 1) {
    const field = keys[i] as string;
    // In the page record's order, the field is the page record's own, at the same place.
    const own = inBaseOrder && i < baseKeys.length && baseKeys[i] === field;
    if (i < baseKeys.length && !own) inBaseOrder = false;
    const value = values[i];
    // `response` and `service_fee` are kept whatever the page record holds (surchargeRefunded reads a refund's).
    if (field === 'response' || field === 'service_fee') changed[field] = value;
    else if (own) {
      if (!sameValue(value, baseValues[i])) changed[field] = value;
    } else if (!Object.hasOwn(baseFields, field) || !sameValue(value, baseFields[field])) changed[field] = value;
  }
  const dropped = inBaseOrder ? [] : baseKeys.filter((field) => !Object.hasOwn(record, field));
  const compact: CompactAnswer = dropped.length > 0 ? { status: parsed.status, changed, dropped } : { status: parsed.status, changed };
  const stored = JSON.stringify(compact);
  // The rebuild is `{ status, record: { ...base, ...changed } }`: its fields in the page record's
  // order, then the rest in the answer's order, each equal to the answer's (sameValue). So when the
  // answer is `made` stringified, `{ status, record }` with its fields in that order, the rebuild is
  // the answer byte for byte and need not be made to be compared; otherwise it is made and compared.
  const exact = made !== undefined && inBaseOrder && isStatusAndRecord(made);
  // Exact, and a field left out: `"changed":{…}` is `"record":{…}` less that field's `"name":value,`
  // (at least 5 characters) plus one, so shorter than the answer without making it.
  if (exact && Object.keys(changed).length < keys.length) return stored;
  const whole = answer();
  if (stored.length >= whole.length) return whole;
  return exact || rebuild(compact, base) === whole ? stored : whole;
}

/** Whether `made` has exactly the keys `status` then `record` (as the rebuild writes them). */
function isStatusAndRecord(made: object): boolean {
  const keys = Object.keys(made);
  return keys.length === 2 && keys[0] === 'status' && keys[1] === 'record';
}

/** The answer (JSON) a stored one stands for: itself when kept whole, else rebuilt over the page record. */
export function answerFromStored(stored: string, base: TransactionRecord | null): string {
  if (!stored.includes('"changed":')) return stored;
  const parsed = JSON.parse(stored) as CompactAnswer | { status: number; record?: unknown; message?: string };
  if (!('changed' in parsed)) return stored;
  if (base === null) throw new Error("an operation's answer is kept against its transaction's page record, which was not found");
  return rebuild(parsed, base);
}

/** A stored answer's record fields, without its page record: only those every form keeps (response, service_fee). */
export function keptFields(stored: string): Record<string, unknown> {
  const parsed = JSON.parse(stored) as { record?: Record<string, unknown>; changed?: Record<string, unknown> };
  return parsed.changed ?? parsed.record ?? {};
}

/**
 * Whether a field of the answered record equals the page record's: a record's fields are strings,
 * numbers, booleans and null, compared directly; anything else as its JSON. Calling equal what is
 * not would only be caught by the rebuild check (and the answer kept whole), never stored wrong.
 */
function sameValue(value: unknown, base: unknown): boolean {
  if (value === base) return true;
  if (typeof value !== 'object' || value === null || typeof base !== 'object' || base === null) return false;
  return JSON.stringify(value) === JSON.stringify(base);
}

function rebuild(compact: CompactAnswer, base: TransactionRecord): string {
  const record: Record<string, unknown> = { ...(base as unknown as Record<string, unknown>), ...compact.changed };
  for (const field of compact.dropped ?? []) delete record[field];
  return JSON.stringify({ status: compact.status, record });
}
