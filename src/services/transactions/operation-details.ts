/**
 * FluidPay's optional fields of a capture (order and PO number, tax, shipping, the customer's IP,
 * tax exemption) and of a refund (`surcharge`): checked against the record before the processor is
 * asked, and applied to the record the ledger shard writes with the processor's answer
 * (durable-objects/ledger-shard/operations.ts calls `withOperationDetails` after lifecycle-rules' `applyOperation`).
 */
import type { TransactionRecord } from '../../schemas/transaction-columns';
import type { OperationDetails } from '../../schemas/settlement';
import type { FieldError } from '../../lib/field-errors';
import type { OperationKind } from '../../storage/ledger-shard';

export type { OperationDetails };

/** Whether the details need the record to be checked (amounts are parts of the total). */
export function detailsNeedRecord(details: OperationDetails): boolean {
  return details.taxAmount !== undefined || details.shippingAmount !== undefined || details.taxExempt === true || details.surcharge !== undefined;
}

/**
 * The problems of `details` for this operation on `record`, each naming its field: the tax,
 * shipping and surcharge stay parts of the amount moved, as they are of a transaction's total.
 */
export function checkDetails(kind: OperationKind, record: TransactionRecord, amountRefunded: number, requested: number | null, details: OperationDetails): FieldError[] {
  const errors: FieldError[] = [];
  if (kind === 'capture') {
    const captured = requested ?? Number(record.amount_authorized);
    const tax = details.taxAmount ?? Number(record.tax_amount ?? 0);
    const shipping = details.shippingAmount ?? Number(record.shipping_amount ?? 0);
    const surcharge = Number(record.service_fee ?? 0);
    if (tax + shipping + surcharge > captured) {
      errors.push({ field: 'tax_amount', msg: `tax_amount + shipping_amount + the surcharge (${tax} + ${shipping} + ${surcharge}) must be at most the amount captured, ${captured}` });
    }
    if ((details.taxExempt ?? record.tax_exempt === true) && tax > 0) errors.push({ field: 'tax_amount', msg: 'must be 0 when tax_exempt is true' });
  }
  if (kind === 'refund' && details.surcharge !== undefined) {
    const refunded = requested ?? Number(record.amount_settled) - amountRefunded;
    const charged = Number(record.service_fee ?? 0);
    if (details.surcharge > Math.min(refunded, charged)) {
      errors.push({ field: 'surcharge', msg: `must be at most the refund (${refunded}) and the surcharge charged (${charged})` });
    }
  }
  return errors;
}

/** The records an approved capture or refund writes, with its details applied. */
export function withOperationDetails(
  kind: OperationKind,
  applied: { original: TransactionRecord; refund: TransactionRecord | null },
  details: OperationDetails | undefined,
  approved: boolean,
): { original: TransactionRecord; refund: TransactionRecord | null } {
  if (!details || !approved) return applied;
  if (kind === 'capture') {
    const original = { ...applied.original };
    if (details.taxAmount !== undefined) original.tax_amount = details.taxAmount;
    if (details.taxExempt !== undefined) original.tax_exempt = details.taxExempt;
    if (details.shippingAmount !== undefined) original.shipping_amount = details.shippingAmount;
    if (details.orderId !== undefined) original.order_id = details.orderId;
    if (details.poNumber !== undefined) original.po_number = details.poNumber;
    if (details.ipAddress !== undefined) original.ip_address = details.ipAddress;
    return { ...applied, original };
  }
  if (kind === 'refund' && applied.refund && details.surcharge !== undefined) {
    return { ...applied, refund: { ...applied.refund, service_fee: details.surcharge } };
  }
  return applied;
}
