/**
 * An operation's answer as kept under its key (storage/ledger-shard/operation-answers.ts): what
 * differs from the transaction's page record when that rebuilds it byte for byte, else the whole
 * answer. Whatever the fields' order, a replay must read back exactly the answer first given.
 */
import { describe, expect, it } from 'vitest';
import { answerFromStored, answerToStore } from '../../src/storage/ledger-shard/operation-answers';
import type { TransactionRecord } from '../../src/schemas/transaction-columns';

const BASE = {
  id: 'txn_a1',
  type: 'authorize',
  status: 'authorized',
  amount: 1000,
  amount_captured: 0,
  response: 'approved',
  service_fee: 30,
  captured_at: null,
  meta: { a: 1 },
} as unknown as TransactionRecord;

/** What is stored for `made`, and the answer a replay reads back from it. */
function keep(made: { status: number; record: Record<string, unknown> }, base: TransactionRecord | null = BASE) {
  const json = JSON.stringify(made);
  const stored = answerToStore(json, base, made);
  return { json, stored, replayed: answerFromStored(stored, base) };
}

describe("an operation's answer kept under its key", () => {
  it('in the page record\'s order: only what changed (and response, service_fee), rebuilt byte for byte', () => {
    const { json, stored, replayed } = keep({ status: 200, record: { ...BASE, status: 'pending_settlement', amount_captured: 1000, captured_at: '2026-11-28T00:00:00.000Z', amount_refunded: 0 } });
    expect(replayed).toBe(json);
    expect(JSON.parse(stored)).toEqual({
      status: 200,
      changed: { status: 'pending_settlement', amount_captured: 1000, response: 'approved', service_fee: 30, captured_at: '2026-11-28T00:00:00.000Z', amount_refunded: 0 },
    });
    expect(stored.length).toBeLessThan(json.length);
  });

  it('an equal object value is not kept; a different one is', () => {
    expect(JSON.parse(keep({ status: 200, record: { ...BASE, meta: { a: 1 } } }).stored)).toEqual({ status: 200, changed: { response: 'approved', service_fee: 30 } });
    const { json, stored, replayed } = keep({ status: 200, record: { ...BASE, meta: { a: 2 } } });
    expect(JSON.parse(stored)).toMatchObject({ changed: { meta: { a: 2 } } });
    expect(replayed).toBe(json);
  });

  it('in another order, or with a field left out: read back exactly all the same', () => {
    const { status: _status, ...rest } = BASE as unknown as Record<string, unknown>;
    const reordered = { status: 'voided', ...rest };
    expect(keep({ status: 200, record: reordered }).replayed).toBe(JSON.stringify({ status: 200, record: reordered }));
    const { captured_at: _capturedAt, ...without } = BASE as unknown as Record<string, unknown>;
    const dropped = keep({ status: 200, record: { ...without, status: 'voided' } });
    expect(dropped.replayed).toBe(dropped.json);
    expect(JSON.parse(dropped.stored)).toMatchObject({ dropped: ['captured_at'] });
  });

  it('kept whole without a page record, or for a declined answer', () => {
    const whole = keep({ status: 200, record: { ...BASE, status: 'voided' } }, null);
    expect(whole.stored).toBe(whole.json);
    const declined = JSON.stringify({ status: 402, message: 'void declined by the processor: Do not honor' });
    expect(answerToStore(declined, BASE)).toBe(declined);
  });
});
