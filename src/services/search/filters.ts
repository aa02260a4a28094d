/**
 * How a record is judged against a search's conditions (schemas/search-conditions.ts), and the
 * fields derived from a record that FluidPay does not have (batch_id, card_brand, last_four). Every
 * condition is applied to the record as it is now (captured, settled, refunded, expired), never to
 * the record as processed.
 */
import { detectBrand } from '../../lib/card-brand';
import type { Condition, StringField } from '../../schemas/search-conditions';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { PresentTransaction } from '../../storage/search/day';

/** The batch a transaction came from: its id names it (`txn_b{day}{batch}{line}`); null otherwise. */
export function batchIdOf(id: string): string | null {
  const match = /^txn_b[0-9]{8}([0-9a-v]{20})[1-9][0-9]*$/.exec(id);
  return match ? `bat_${match[1]}` : null;
}

/** The card's last four digits (or an ACH account's), from `masked_account`. */
export function lastFourOf(record: TransactionRecord): string | null {
  const masked = record.masked_account;
  if (typeof masked !== 'string') return null;
  const tail = masked.slice(-4);
  return /^[0-9]{4}$/.test(tail) ? tail : null;
}

/** The card's brand from the IIN its masked number keeps (the BIN data's brand, as the IIN ranges give it). */
export function cardBrandOf(record: TransactionRecord): string | null {
  if (record.payment_type !== 'card' || typeof record.masked_account !== 'string') return null;
  const head = /^[0-9]+/.exec(record.masked_account)?.[0] ?? '';
  return head.length >= 6 ? (detectBrand(head) ?? null) : null;
}

function stringValue(tx: PresentTransaction, field: StringField): string | null {
  const { record } = tx;
  switch (field) {
    case 'batch_id':
      return batchIdOf(String(record.id));
    case 'card_brand':
      return cardBrandOf(record);
    case 'last_four':
      return lastFourOf(record);
    default: {
      const value = record[field];
      return value === null || value === undefined ? null : String(value);
    }
  }
}

/**
 * Whether a record meets one condition. A field the record does not have compares as "" (FluidPay's
 * records carry "" where binbatch's carry null): `= ""` finds the records without it, `!= ""` those
 * with it (the SDK's README: `CustomerID: NotEqual("")`), and `!=` any other value keeps them.
 */
export function meets(tx: PresentTransaction, condition: Condition): boolean {
  switch (condition.kind) {
    case 'string': {
      const value = stringValue(tx, condition.field) ?? '';
      return condition.op === '=' ? value === condition.value : value !== condition.value;
    }
    case 'int': {
      const value = Number(tx.record[condition.field] ?? 0);
      switch (condition.op) {
        case '=':
          return value === condition.value;
        case '!=':
          return value !== condition.value;
        case '<':
          return value < condition.value;
        case '>':
          return value > condition.value;
      }
      return false;
    }
    case 'date': {
      const value = tx.record[condition.field];
      if (typeof value !== 'string') return false;
      return (condition.from === null || value >= condition.from) && (condition.to === null || value < condition.to);
    }
  }
}

export function meetsAll(tx: PresentTransaction, conditions: readonly Condition[]): boolean {
  for (const condition of conditions) if (!meets(tx, condition)) return false;
  return true;
}
