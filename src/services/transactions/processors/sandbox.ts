/**
 * The built-in `sandbox` processor: no network, deterministic outcomes chosen by the request
 * (docs/transactions.md, "Sandbox triggers"). Checked in this order, first match wins:
 *   1. the total amount: 300 gateway decline, 301 duplicate, 421 processor communication error;
 *   2. the card or ACH account number: issuer declines (Stripe's well-known decline test cards),
 *      the prepaid card with a 10.00 balance (partial approval on authorize);
 *   3. otherwise approved.
 * Captures, voids and refunds are approved, except an operation on OPERATION_DECLINE_AMOUNT (the
 * amount captured or refunded; for a void, the transaction's amount): declined with code 303.
 * AVS comes from the billing postal code and CVV from cc_cvc, on every card answer an issuer gave.
 *
 * Like a gateway, it keeps what it was asked under each idempotency key: a key sent again gets its
 * first answer, never a second charge, and `lookup` answers from that memory. The memory is the
 * SandboxAcquirer object of the processor and the claim's UTC day (it stands for an outside system,
 * so it is not part of the merchant's ledger).
 */
import type { Env } from '../../../env';
import { coalesce } from '../../../lib/coalesce';
import { randomId } from '../../../lib/crypto';
import { isoTimestamp, type Clock } from '../../../lib/time';
import type { SandboxChargeEntry } from '../../../storage/sandbox-calls';
import type { Charge, ChargeResult, Operation, PaymentProcessor } from './processor';

interface Decline {
  code: number;
  processorCode: string | null;
  text: string;
}

/** Total amounts (minor units) that trigger a gateway-level answer, for every payment source. */
export const AMOUNT_TRIGGERS: ReadonlyMap<number, Decline> = new Map([
  [300, { code: 300, processorCode: null, text: 'DECLINED BY GATEWAY RULES' }],
  [301, { code: 301, processorCode: null, text: 'DUPLICATE TRANSACTION' }],
  [421, { code: 421, processorCode: null, text: 'COMMUNICATION ERROR WITH PROCESSOR' }],
]);

/** Card numbers the issuer declines (ISO 8583 response codes in processor_response_code). */
export const CARD_TRIGGERS: ReadonlyMap<string, Decline> = new Map([
  ['4000000000000002', { code: 201, processorCode: '05', text: 'DO NOT HONOR' }],
  ['4000000000009995', { code: 202, processorCode: '51', text: 'INSUFFICIENT FUNDS' }],
  ['4000000000000069', { code: 223, processorCode: '54', text: 'EXPIRED CARD' }],
  ['4000000000000127', { code: 225, processorCode: 'N7', text: 'CVV2 VALUE MISMATCH' }],
  ['4000000000009987', { code: 251, processorCode: '41', text: 'LOST CARD, PICK UP' }],
  ['4000000000009979', { code: 252, processorCode: '43', text: 'STOLEN CARD, PICK UP' }],
  // Declines the networks forbid retrying (services/declines/network-rules.ts): Visa category 1, Mastercard's "do not try again".
  ['4000000000009045', { code: 253, processorCode: '04', text: 'PICK UP CARD' }],
  ['4000000000009052', { code: 254, processorCode: '46', text: 'CLOSED ACCOUNT' }],
  ['5105100000009903', { code: 255, processorCode: '05', text: 'DO NOT HONOR, MAC 03 DO NOT TRY AGAIN' }],
  // A Mastercard issuer decline that may be retried (within Mastercard's limits).
  ['5105100000009911', { code: 201, processorCode: '05', text: 'DO NOT HONOR' }],
]);

/** ACH account numbers the bank returns (NACHA return codes in processor_response_code). */
export const ACH_TRIGGERS: ReadonlyMap<string, Decline> = new Map([
  ['9990000001', { code: 202, processorCode: 'R01', text: 'INSUFFICIENT FUNDS' }],
  ['9990000002', { code: 200, processorCode: 'R02', text: 'ACCOUNT CLOSED' }],
  ['9990000003', { code: 222, processorCode: 'R03', text: 'NO ACCOUNT/UNABLE TO LOCATE ACCOUNT' }],
]);

/** The amount (minor units) on which the sandbox declines a capture, a void or a refund. */
export const OPERATION_DECLINE_AMOUNT = 303;

/** Decides a capture, void or refund. */
export function sandboxDecideOperation(kind: 'capture' | 'void' | 'refund', operation: Operation): ChargeResult {
  if (operation.amount === OPERATION_DECLINE_AMOUNT) {
    return decline({ code: 303, processorCode: null, text: `${kind.toUpperCase()} DECLINED BY PROCESSOR` }, null, null);
  }
  return approve(operation.amount, 100, null, null);
}

/** A prepaid card holding 10.00: an authorize above it is partially approved, a sale above it declined. */
export const PREPAID_CARD = '4000000000001109';
export const PREPAID_BALANCE = 1000;

/** billing_postal_code -> AVS code (Visa's single-letter codes). */
export const AVS_TRIGGERS: ReadonlyMap<string, string> = new Map([
  ['11111', 'N'], // no match
  ['22222', 'A'], // street matches, postal code does not
  ['33333', 'Z'], // 5-digit postal code matches, street does not
  ['44444', 'U'], // unavailable
  ['55555', 'R'], // retry, issuer system unavailable
  ['66666', 'S'], // AVS not supported
  ['77777', 'E'], // AVS error
]);

/**
 * cc_cvc -> CVV code; any other CVC matches ("M"), no CVC gives no CVV result. One exception,
 * decided by the card and not the CVC: 4000000000000127 (the CVV-mismatch decline) answers "N"
 * with or without a CVC (`sandboxDecide`).
 */
export const CVV_TRIGGERS: ReadonlyMap<string, string> = new Map([
  ['111', 'N'], // no match
  ['1111', 'N'],
  ['222', 'P'], // not processed
  ['2222', 'P'],
  ['333', 'U'], // issuer not certified
  ['3333', 'U'],
]);

export function avsFor(postalCode: string | null): string | null {
  if (postalCode === null) return null;
  const trigger = AVS_TRIGGERS.get(postalCode);
  if (trigger) return trigger;
  return /^[0-9]{5}-?[0-9]{4}$/.test(postalCode) ? 'X' : 'Y';
}

export function cvvFor(cvc: string | null): string | null {
  if (cvc === null) return null;
  return CVV_TRIGGERS.get(cvc) ?? 'M';
}

const AUTH_CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789';

function authCode(): string {
  return randomId(6)
    .split('')
    .map((c) => AUTH_CODE_ALPHABET[parseInt(c, 32) % AUTH_CODE_ALPHABET.length])
    .join('');
}

function decline(decline: Decline, avs: string | null, cvv: string | null): ChargeResult {
  return {
    response: decline.code >= 400 ? 'error' : 'declined',
    responseCode: decline.code,
    amountAuthorized: 0,
    authCode: null,
    processorResponseCode: decline.processorCode,
    processorResponseText: decline.text,
    avsResponseCode: avs,
    cvvResponseCode: cvv,
  };
}

function approve(amount: number, code: 100 | 110, avs: string | null, cvv: string | null): ChargeResult {
  return {
    response: 'approved',
    responseCode: code,
    amountAuthorized: amount,
    authCode: authCode(),
    processorResponseCode: code === 100 ? '00' : '10',
    processorResponseText: code === 100 ? 'APPROVED' : 'PARTIAL APPROVAL',
    avsResponseCode: avs,
    cvvResponseCode: cvv,
  };
}

/** Decides a charge; pure apart from the random auth code. */
export function sandboxDecide(charge: Charge): ChargeResult {
  const gateway = AMOUNT_TRIGGERS.get(charge.amount);
  // Gateway answers come before the issuer is asked: no AVS or CVV result.
  if (gateway) return decline(gateway, null, null);

  const payment = charge.payment;
  if (payment.kind === 'ach') {
    const returned = ACH_TRIGGERS.get(payment.accountNumber);
    return returned ? decline(returned, null, null) : approve(charge.amount, 100, null, null);
  }

  const avs = avsFor(payment.billingPostalCode);
  const cvv = payment.number === '4000000000000127' ? 'N' : cvvFor(payment.cvc);
  const issuer = CARD_TRIGGERS.get(payment.number);
  if (issuer) return decline(issuer, avs, cvv);
  if (payment.number === PREPAID_CARD && charge.amount > PREPAID_BALANCE && charge.type !== 'credit') {
    return charge.type === 'authorize'
      ? approve(PREPAID_BALANCE, 110, avs, cvv)
      : decline({ code: 202, processorCode: '51', text: 'INSUFFICIENT FUNDS' }, avs, cvv);
  }
  return approve(charge.amount, 100, avs, cvv);
}

function parseResult(json: string | undefined): ChargeResult | null {
  return json === undefined ? null : (JSON.parse(json) as ChargeResult);
}

/** The sandbox acquirer object that remembers a processor's charges claimed on one UTC day. */
export function sandboxAcquirerName(processorId: string, day: string): string {
  return `${processorId}/${day}`;
}

function dayOf(iso: string): string {
  return iso.slice(0, 10);
}

function groupByDay<T>(items: readonly T[], at: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const day = dayOf(at(item));
    const group = groups.get(day);
    if (group) group.push(item);
    else groups.set(day, [item]);
  }
  return groups;
}

/**
 * One sandbox processor account (a merchant's processor record). Charges and lookups made in the
 * same turn (the rows of one chunk, the claims a partial download settles) share one call to the
 * acquirer object of each UTC day they were claimed on: never a call per key, whatever the number
 * of keys (the subrequests of an invocation stay a few).
 */
export class SandboxProcessor implements PaymentProcessor {
  readonly type = 'sandbox' as const;
  readonly #charge: (item: { entry: SandboxChargeEntry; claimedAt: string }) => Promise<ChargeResult>;
  readonly #find: (item: { key: string; claimedAt: string }) => Promise<ChargeResult | null>;

  constructor(acquirers: Env['SANDBOX_ACQUIRER'], processorId: string, clock: Clock) {
    const acquirer = (day: string) => acquirers.getByName(sandboxAcquirerName(processorId, day));
    this.#charge = coalesce(async (items: { entry: SandboxChargeEntry; claimedAt: string }[]) => {
      const now = isoTimestamp(clock());
      const answers = new Map<string, string>();
      await Promise.all(
        [...groupByDay(items, (item) => item.claimedAt)].map(async ([day, group]) => {
          const claimedFrom = group.map((item) => item.claimedAt).sort()[0] ?? now;
          const stored = await acquirer(day).charge(day, group.map((item) => item.entry), claimedFrom, now);
          if ('failed' in stored) throw new Error(`the sandbox acquirer did not record the charges: ${stored.failed}`);
          for (const [key, result] of Object.entries(stored.answers)) answers.set(key, result);
        }),
      );
      return items.map(({ entry }) => {
        const result = parseResult(answers.get(entry.idempotencyKey));
        if (!result) throw new Error('the sandbox acquirer did not record a charge');
        return result;
      });
    });
    this.#find = coalesce(async (items: { key: string; claimedAt: string }[]) => {
      const now = isoTimestamp(clock());
      const answers = new Map<string, string>();
      await Promise.all(
        [...groupByDay(items, (item) => item.claimedAt)].map(async ([day, group]) => {
          const found = await acquirer(day).lookup(group, now);
          for (const [key, result] of Object.entries(found)) answers.set(key, result);
        }),
      );
      return items.map((item) => parseResult(answers.get(item.key)));
    });
  }

  async charge(charge: Charge): Promise<ChargeResult> {
    return this.#charge({
      entry: {
        idempotencyKey: charge.idempotencyKey,
        type: charge.type,
        amount: charge.amount,
        paymentType: charge.payment.kind,
        result: JSON.stringify(sandboxDecide(charge)),
      },
      claimedAt: charge.claimedAt,
    });
  }

  async lookup(idempotencyKey: string, claimedAt: string): Promise<ChargeResult | null> {
    return this.#find({ key: idempotencyKey, claimedAt });
  }

  async capture(operation: Operation): Promise<ChargeResult> {
    return this.#operate('capture', operation);
  }

  async void(operation: Operation): Promise<ChargeResult> {
    return this.#operate('void', operation);
  }

  async refund(operation: Operation): Promise<ChargeResult> {
    return this.#operate('refund', operation);
  }

  /** An operation is remembered like a charge: under its key, answered once whatever is sent again. */
  async #operate(kind: 'capture' | 'void' | 'refund', operation: Operation): Promise<ChargeResult> {
    return this.#charge({
      entry: {
        idempotencyKey: operation.idempotencyKey,
        type: kind,
        amount: operation.amount,
        paymentType: operation.paymentType,
        result: JSON.stringify(sandboxDecideOperation(kind, operation)),
      },
      claimedAt: operation.claimedAt,
    });
  }
}
