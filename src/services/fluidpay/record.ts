/**
 * The transaction record as every JSON answer gives it: the result CSV's columns (and
 * amount_refunded), plus the fields FluidPay's clients read, derived from those columns
 * (docs/transactions.md, "The record"): the processor's answer nested under `response_body.card`
 * or `.ach`, the addresses as objects, `currency`, `surcharge`, `base_amount`, `updated_at`.
 * Nothing here is stored: the ledger keeps the columns, and this is a pure view of them.
 */
import { detectBrand } from '../../lib/card-brand';
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { TransactionRecordView } from '../../schemas/transaction-response';
import { ADDRESS_PARTS } from './request';

type Address = TransactionRecordView['billing_address'];
type Text = string | null;

function text(value: TransactionRecord[keyof TransactionRecord]): Text {
  return value === null || value === undefined ? null : String(value);
}

function address(record: TransactionRecord, prefix: 'billing' | 'shipping'): Address {
  return Object.fromEntries(ADDRESS_PARTS.map((part) => [part, text(record[`${prefix}_${part}`])])) as Address;
}

/**
 * When the record last changed, as far as its columns tell: its creation, capture or settlement.
 * A void or a refund of it is not dated on the record (the refund is a record of its own).
 */
function updatedAt(record: TransactionRecord): string {
  const times = [record.created_at, record.captured_at, record.settled_at].filter((t): t is string => typeof t === 'string');
  return times.reduce((latest, t) => (t > latest ? t : latest), String(record.created_at));
}

function responseBody(record: TransactionRecord, updated: string): TransactionRecordView['response_body'] {
  const common = {
    id: String(record.id),
    response: String(record.response),
    response_code: Number(record.response_code),
    auth_code: text(record.auth_code),
    processor_response_code: text(record.processor_response_code),
    processor_response_text: text(record.processor_response_text),
    processor_type: text(record.processor_type),
    processor_id: text(record.processor_id),
    created_at: String(record.created_at),
    updated_at: updated,
  };
  const masked = text(record.masked_account) ?? '';
  if (record.payment_type === 'ach') {
    return {
      ach: {
        ...common,
        // FluidPay's SEC codes are lower case.
        sec_code: record.sec_code === null ? null : String(record.sec_code).toLowerCase(),
        account_type: text(record.account_type),
        masked_account_number: masked,
      },
    };
  }
  const firstSix = /^[0-9]{6}/.test(masked) ? masked.slice(0, 6) : null;
  return {
    card: {
      ...common,
      // FluidPay's card_type is the brand; the credit / debit of the BIN data is its `type`.
      card_type: firstSix === null ? null : (detectBrand(firstSix) ?? null),
      type: text(record.card_type),
      first_six: firstSix,
      last_four: /[0-9]{4}$/.test(masked) ? masked.slice(-4) : null,
      masked_card: masked,
      expiration_date: text(record.expiration),
      avs_response_code: text(record.avs_response_code),
      cvv_response_code: text(record.cvv_response_code),
    },
  };
}

/** The answer's record: the columns, what was refunded, and FluidPay's fields. */
export function recordView(record: TransactionRecord, amountRefunded: number, merchantId: string): TransactionRecordView {
  const updated = updatedAt(record);
  const amount = Number(record.amount ?? 0);
  const surcharge = Number(record.service_fee ?? 0);
  return {
    ...(record as unknown as Omit<TransactionRecordView, 'amount_refunded' | FluidPayField>),
    amount_refunded: amountRefunded,
    merchant_id: merchantId,
    base_amount: amount - surcharge,
    surcharge,
    tip_amount: Number(record.tip ?? 0),
    currency: String(record.currency_iso_code ?? 'USD').toLowerCase(),
    response_body: responseBody(record, updated),
    billing_address: address(record, 'billing'),
    shipping_address: address(record, 'shipping'),
    updated_at: updated,
  };
}

type FluidPayField = 'merchant_id' | 'base_amount' | 'surcharge' | 'tip_amount' | 'currency' | 'response_body' | 'billing_address' | 'shipping_address' | 'updated_at';
