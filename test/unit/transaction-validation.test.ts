import { describe, expect, it } from 'vitest';
import type { TransactionInput } from '../../src/schemas/transaction-columns';
import { normaliseInput, parseAmount, validateTransaction } from '../../src/services/transactions/validation';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const CARD: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };
const ACH: TransactionInput = {
  transaction_type: 'sale',
  ach_account_number: '123456789',
  ach_routing_number: '021000021',
  ach_account_type: 'checking',
  ach_sec_code: 'WEB',
  amount: '1000',
};

function errorsOf(input: TransactionInput): Record<string, string> {
  const result = validateTransaction(normaliseInput(input), NOW);
  return result.ok ? {} : Object.fromEntries(result.errors.map((e) => [e.field, e.msg]));
}

function valid(input: TransactionInput) {
  const result = validateTransaction(normaliseInput(input), NOW);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

describe('normaliseInput', () => {
  it('trims fields and treats empty ones as absent', () => {
    expect(normaliseInput({ amount: ' 100 ', order_id: '', description: '   ' })).toEqual({ amount: '100' });
  });
});

describe('transaction_type', () => {
  it('accepts sale, authorize and credit in any case', () => {
    expect(valid({ ...CARD, transaction_type: 'sale' }).type).toBe('sale');
    expect(valid({ ...CARD, transaction_type: 'Authorize' }).type).toBe('authorize');
    expect(valid({ ...CARD, transaction_type: 'CREDIT' }).type).toBe('credit');
  });

  it('refuses a missing or unknown type', () => {
    expect(errorsOf({ ...CARD, transaction_type: undefined }).transaction_type).toBe('is required');
    // verification is an API type since issue 34 (FluidPay's zero-amount authorization).
    expect(errorsOf({ ...CARD, transaction_type: 'refund' }).transaction_type).toBe('must be sale, authorize, credit or verification');
  });
});

describe('payment source', () => {
  it('requires exactly one of card, ACH and vault customer', () => {
    expect(errorsOf({ transaction_type: 'sale', amount: '100' })).toEqual({
      'cc_number, ach_account_number or customer_id': 'a payment source is required',
    });
    expect(Object.keys(errorsOf({ ...CARD, ...ACH }))).toEqual(['cc_number, ach_account_number']);
    expect(Object.keys(errorsOf({ ...CARD, customer_id: 'cust1' }))).toEqual(['cc_number, customer_id']);
  });

  it('accepts a card number with spaces or dashes, and each expiration format', () => {
    expect(valid({ ...CARD, cc_number: '4111 1111-1111 1111' }).source).toMatchObject({ kind: 'card', number: '4111111111111111' });
    for (const expiration of ['12/30', '1230', '12/2030', '11/26']) {
      expect(valid({ ...CARD, cc_expiration: expiration }).source).toMatchObject({ kind: 'card' });
    }
  });

  it('refuses bad card numbers, naming cc_number', () => {
    expect(errorsOf({ ...CARD, cc_number: '4111111111111112' }).cc_number).toContain('Luhn');
    expect(errorsOf({ ...CARD, cc_number: '41111111111' }).cc_number).toBe('must be 12 to 19 digits');
    expect(errorsOf({ ...CARD, cc_number: '4'.repeat(20) }).cc_number).toBe('must be 12 to 19 digits');
    expect(errorsOf({ ...CARD, cc_number: '4111x11111111111' }).cc_number).toBe('must contain only digits');
  });

  it('refuses a missing, malformed or past expiration', () => {
    expect(errorsOf({ ...CARD, cc_expiration: undefined }).cc_expiration).toBe('is required with cc_number');
    expect(errorsOf({ ...CARD, cc_expiration: '13/30' }).cc_expiration).toBe('must be MM/YY, MMYY or MM/YYYY');
    expect(errorsOf({ ...CARD, cc_expiration: '2030-12' }).cc_expiration).toBe('must be MM/YY, MMYY or MM/YYYY');
    expect(errorsOf({ ...CARD, cc_expiration: '10/26' }).cc_expiration).toBe('the card has expired');
    expect(errorsOf({ ...CARD, cc_expiration: undefined, cc_number: undefined, customer_id: 'c1', cc_cvc: '123' })).toEqual({});
  });

  it('checks the CVC: 3 digits, 4 for American Express, never with ACH', () => {
    expect(errorsOf({ ...CARD, cc_cvc: '123' })).toEqual({});
    expect(errorsOf({ ...CARD, cc_cvc: '1234' }).cc_cvc).toBe('must be 3 digits for this card');
    expect(errorsOf({ ...CARD, cc_number: '378282246310005', cc_cvc: '1234' })).toEqual({});
    expect(errorsOf({ ...CARD, cc_number: '378282246310005', cc_cvc: '123' }).cc_cvc).toBe('must be 4 digits for an American Express card');
    expect(errorsOf({ ...CARD, cc_cvc: '12a' }).cc_cvc).toBe('must be 3 or 4 digits');
    expect(errorsOf({ ...ACH, cc_cvc: '123' }).cc_cvc).toBe('is only allowed with a card payment');
  });

  it('accepts a complete ACH account, case-insensitive enumerations', () => {
    expect(valid({ ...ACH, ach_account_type: 'Savings', ach_sec_code: 'ccd' }).source).toEqual({
      kind: 'ach',
      accountNumber: '123456789',
      routingNumber: '021000021',
      accountType: 'savings',
      secCode: 'CCD',
    });
  });

  it('refuses incomplete or malformed ACH fields, naming each', () => {
    expect(errorsOf({ ...ACH, ach_sec_code: undefined }).ach_sec_code).toBe('is required for an ACH payment');
    expect(errorsOf({ ...ACH, ach_routing_number: '021000022' }).ach_routing_number).toContain('ABA');
    expect(errorsOf({ ...ACH, ach_account_number: '12a' }).ach_account_number).toBe('must be 4 to 17 digits');
    expect(errorsOf({ ...ACH, ach_account_type: 'business' }).ach_account_type).toBe('must be checking or savings');
    expect(errorsOf({ ...ACH, ach_sec_code: 'TEL' }).ach_sec_code).toBe('must be WEB, CCD or PPD');
  });

  it('refuses an ACH authorize', () => {
    expect(errorsOf({ ...ACH, transaction_type: 'authorize' }).transaction_type).toContain('not available for ACH');
  });

  it('reads a vault reference, and refuses payment_method_* without customer_id', () => {
    expect(valid({ transaction_type: 'sale', amount: '5', customer_id: 'cust1', payment_method_id: 'pm_1', payment_method_type: 'ACH' }).source).toEqual({
      kind: 'vault',
      customerId: 'cust1',
      paymentMethodId: 'pm_1',
      paymentMethodType: 'ach',
      cvc: null,
    });
    expect(errorsOf({ ...CARD, payment_method_id: 'pm_1' }).payment_method_id).toBe('is only allowed with customer_id');
    expect(errorsOf({ transaction_type: 'sale', amount: '5', customer_id: 'c 1' }).customer_id).toBeDefined();
    expect(errorsOf({ transaction_type: 'sale', amount: '5', customer_id: 'c1', payment_method_type: 'cash' }).payment_method_type).toBe('must be card or ach');
  });
});

describe('amount fields', () => {
  it('parses non-negative integers in minor units and explains other forms', () => {
    expect(parseAmount('0')).toEqual({ ok: true, value: 0 });
    expect(parseAmount('001234')).toEqual({ ok: true, value: 1234 });
    expect(parseAmount('10.00')).toEqual({ ok: false, msg: 'must be an integer in minor units (write 10.00 as 1000)' });
    expect(parseAmount('-5')).toEqual({ ok: false, msg: 'must not be negative' });
    expect(parseAmount('1e3')).toEqual({ ok: false, msg: 'must be a non-negative integer in minor units' });
    expect(parseAmount('100000000000')).toEqual({ ok: false, msg: 'must be at most 99999999999' });
  });

  it('requires amount or base_amount and names every bad amount column', () => {
    expect(errorsOf({ ...CARD, amount: undefined }).amount).toBe('is required (or give base_amount)');
    expect(errorsOf({ ...CARD, amount: undefined, base_amount: '900' })).toEqual({});
    const errors = errorsOf({ ...CARD, surcharge: 'x', shipping_amount: '-1', tax_amount: '1.5', discount_amount: 'a' });
    expect(Object.keys(errors).sort()).toEqual(['discount_amount', 'shipping_amount', 'surcharge', 'tax_amount']);
  });
});

describe('other fields', () => {
  it('accepts references of up to 17 letters and digits', () => {
    expect(valid({ ...CARD, order_id: 'A'.repeat(17), po_number: 'PO123' })).toMatchObject({ orderId: 'A'.repeat(17), poNumber: 'PO123' });
    expect(errorsOf({ ...CARD, order_id: 'A'.repeat(18) }).order_id).toBe('must be 1 to 17 letters or digits');
    expect(errorsOf({ ...CARD, po_number: 'PO-1' }).po_number).toBe('must be 1 to 17 letters or digits');
  });

  it('limits description to 100 characters', () => {
    expect(valid({ ...CARD, description: 'd'.repeat(100) }).description).toHaveLength(100);
    expect(errorsOf({ ...CARD, description: 'd'.repeat(101) }).description).toBe('must be at most 100 characters');
  });

  it('reads booleans as true/false in any case and refuses anything else', () => {
    expect(valid({ ...CARD, tax_exempt: 'TRUE', surcharge_exempt: 'false', email_receipt: 'True' })).toMatchObject({
      taxExempt: true,
      surchargeExempt: false,
      emailReceipt: true,
    });
    for (const field of ['tax_exempt', 'surcharge_exempt', 'email_receipt'] as const) {
      expect(errorsOf({ ...CARD, [field]: 'yes' })[field]).toBe('must be true or false');
    }
  });

  it('checks the email address', () => {
    expect(valid({ ...CARD, email_address: 'ana@example.com' }).emailAddress).toBe('ana@example.com');
    for (const email of ['ana', 'ana@', 'ana@example', 'a b@example.com']) {
      expect(errorsOf({ ...CARD, email_address: email }).email_address).toBe('must be a well-formed email address');
    }
  });

  it('keeps contact fields as given and limits them to 255 characters', () => {
    expect(valid({ ...CARD, billing_city: 'Zürich', shipping_state: 'CA' }).contact).toMatchObject({ billing_city: 'Zürich', shipping_state: 'CA', billing_country: null });
    expect(errorsOf({ ...CARD, shipping_company: 'x'.repeat(256) }).shipping_company).toBe('must be at most 255 characters');
  });

  it('refuses a malformed processor_id', () => {
    expect(errorsOf({ ...CARD, processor_id: 'bad id!' }).processor_id).toBeDefined();
    expect(valid({ ...CARD, processor_id: 'prc_abc' }).processorId).toBe('prc_abc');
  });

  it('reports every problem of a row at once, never quoting a card number', () => {
    const result = validateTransaction(normaliseInput({ transaction_type: 'x', cc_number: '4111111111111112', cc_expiration: 'soon', amount: 'lots' }), NOW);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => e.field)).toEqual(['transaction_type', 'cc_number', 'cc_expiration', 'amount']);
    expect(JSON.stringify(result.errors)).not.toContain('4111111111111112');
  });
});
