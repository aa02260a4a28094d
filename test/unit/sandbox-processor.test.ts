import { describe, expect, it } from 'vitest';
import type { Charge } from '../../src/services/transactions/processors/processor';
import { responseFor } from '../../src/services/transactions/processors/processor';
import { OPERATION_DECLINE_AMOUNT, PREPAID_CARD, avsFor, cvvFor, sandboxDecide, sandboxDecideOperation } from '../../src/services/transactions/processors/sandbox';
import { ISSUER_DECLINE_CARDS } from '../helpers/sandbox';

function card(number: string, amount = 1_000, type: Charge['type'] = 'sale', cvc: string | null = null, postal: string | null = null): Charge {
  return { type, amount, idempotencyKey: 'k', claimedAt: '2026-11-21T12:00:00.000Z', payment: { kind: 'card', number, cvc, billingPostalCode: postal } };
}
function ach(accountNumber: string, amount = 1_000): Charge {
  return {
    type: 'sale',
    amount,
    idempotencyKey: 'k',
    claimedAt: '2026-11-21T12:00:00.000Z',
    payment: { kind: 'ach', accountNumber, routingNumber: '021000021', accountType: 'checking', secCode: 'WEB' },
  };
}

describe('sandbox processor', () => {
  it('approves ordinary cards with a 6-character auth code', () => {
    for (const number of ['4111111111111111', '5555555555554444', '378282246310005', '6011111111111117']) {
      const result = sandboxDecide(card(number));
      expect(result).toMatchObject({ response: 'approved', responseCode: 100, amountAuthorized: 1_000, processorResponseCode: '00' });
      expect(result.authCode).toMatch(/^[A-Z0-9]{6}$/);
    }
  });

  it.each(ISSUER_DECLINE_CARDS)('declines card %s with issuer code %i', (number, code, processorCode, text) => {
    expect(sandboxDecide(card(number))).toEqual({
      response: 'declined',
      responseCode: code,
      amountAuthorized: 0,
      authCode: null,
      processorResponseCode: processorCode,
      processorResponseText: text,
      avsResponseCode: null,
      cvvResponseCode: number === '4000000000000127' ? 'N' : null,
    });
  });

  it.each([
    [300, 'declined', 'DECLINED BY GATEWAY RULES'],
    [301, 'declined', 'DUPLICATE TRANSACTION'],
    [421, 'error', 'COMMUNICATION ERROR WITH PROCESSOR'],
  ])('answers the total amount %i for any payment source', (amount, response, text) => {
    for (const charge of [card('4111111111111111', amount), ach('123456789', amount)]) {
      expect(sandboxDecide(charge)).toMatchObject({ response, responseCode: amount, processorResponseText: text, authCode: null });
    }
  });

  it('partially approves an authorize above the prepaid balance, declines such a sale', () => {
    expect(sandboxDecide(card(PREPAID_CARD, 2_500, 'authorize'))).toMatchObject({ response: 'approved', responseCode: 110, amountAuthorized: 1_000 });
    expect(sandboxDecide(card(PREPAID_CARD, 2_500, 'sale'))).toMatchObject({ response: 'declined', responseCode: 202 });
    expect(sandboxDecide(card(PREPAID_CARD, 900, 'authorize'))).toMatchObject({ responseCode: 100, amountAuthorized: 900 });
    expect(sandboxDecide(card(PREPAID_CARD, 2_500, 'credit'))).toMatchObject({ responseCode: 100 });
  });

  it('processes ACH, with NACHA return codes on trigger accounts', () => {
    expect(sandboxDecide(ach('123456789'))).toMatchObject({ response: 'approved', responseCode: 100, avsResponseCode: null, cvvResponseCode: null });
    expect(sandboxDecide(ach('9990000001'))).toMatchObject({ response: 'declined', responseCode: 202, processorResponseCode: 'R01' });
    expect(sandboxDecide(ach('9990000002'))).toMatchObject({ response: 'declined', responseCode: 200, processorResponseCode: 'R02' });
    expect(sandboxDecide(ach('9990000003'))).toMatchObject({ response: 'declined', responseCode: 222, processorResponseCode: 'R03' });
  });

  it('gives AVS from the billing postal code and CVV from the CVC', () => {
    expect([null, '11111', '22222', '33333', '44444', '55555', '66666', '77777', '12345-6789', '123456789', '90210', 'SW1A 1AA'].map(avsFor)).toEqual([
      null, 'N', 'A', 'Z', 'U', 'R', 'S', 'E', 'X', 'X', 'Y', 'Y',
    ]);
    expect([null, '123', '111', '1111', '222', '333', '9999'].map(cvvFor)).toEqual([null, 'M', 'N', 'N', 'P', 'U', 'M']);
    expect(sandboxDecide(card('4111111111111111', 1_000, 'sale', '111', '22222'))).toMatchObject({ response: 'approved', avsResponseCode: 'A', cvvResponseCode: 'N' });
  });

  it('maps response code ranges to approved, declined and error', () => {
    expect([100, 110, 201, 300, 301, 400, 421].map(responseFor)).toEqual(['approved', 'approved', 'declined', 'declined', 'declined', 'error', 'error']);
  });
});

describe('sandbox operations (capture, void, refund)', () => {
  const operation = (amount: number) => ({ amount, transactionId: 'txn_a', paymentType: 'card' as const, idempotencyKey: 'k', claimedAt: '2026-11-21T12:00:00.000Z' });

  it.each(['capture', 'void', 'refund'] as const)('%s: approved, except on the amount 303, declined with code 303', (kind) => {
    expect(sandboxDecideOperation(kind, operation(1_000))).toMatchObject({ response: 'approved', responseCode: 100, amountAuthorized: 1_000, processorResponseCode: '00' });
    expect(sandboxDecideOperation(kind, operation(OPERATION_DECLINE_AMOUNT))).toMatchObject({
      response: 'declined',
      responseCode: 303,
      amountAuthorized: 0,
      processorResponseText: `${kind.toUpperCase()} DECLINED BY PROCESSOR`,
    });
  });
});
