/**
 * Transaction fields hold arbitrary strings: whatever a CSV row or a JSON body carries in any
 * column, the engine answers every request with an outcome and its result line (an error row
 * naming the field when it refuses), and never lets an exception escape a row.
 */
import { env } from 'cloudflare:workers';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { INPUT_COLUMNS, type InputColumn, type TransactionInput } from '../../src/schemas/transaction-columns';
import { authenticateKey } from '../../src/services/merchants';
import { processTransactions } from '../../src/services/recorded';
import type { Caller } from '../../src/env';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { expectFailedEnvelope, fuzzRuns, hostileString, unicodeDigits } from '../helpers/fuzz';
import { randomId } from '../../src/lib/crypto';

let shop: TestMerchant;
let caller: Caller;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Transaction Fuzz Shop' });
  const found = await authenticateKey(env, shop.secretKey);
  if (!found) throw new Error('no caller');
  caller = found;
});

/** Any string a CSV field can hold (no quote or line end), or worse. */
const fieldValue = fc.oneof(hostileString, fc.string({ maxLength: 30 }), unicodeDigits(1, 20), fc.string({ minLength: 250, maxLength: 300 }));
const anyInput = fc.dictionary(fc.constantFrom(...INPUT_COLUMNS), fieldValue, { maxKeys: INPUT_COLUMNS.length });
/**
 * The field a refusal of one column in a card sale names: the column itself, except the ACH columns
 * that turn the row into a card and an ACH account at once; that refusal names the two payment
 * sources ("cc_number, ach_account_number").
 */
function refusedField(column: InputColumn): InputColumn {
  const achOnly: readonly InputColumn[] = ['ach_routing_number', 'ach_account_type', 'ach_sec_code'];
  return achOnly.includes(column) ? 'ach_account_number' : column;
}

/** Every error names that field (an error's `field` may list several, comma-separated). */
function expectErrorsNaming(errors: readonly { field: string; msg: string }[], field: InputColumn): void {
  expect(errors.length).toBeGreaterThan(0);
  for (const error of errors) expect(error.field.split(', '), `${error.field}: ${error.msg}`).toContain(field);
}

/** A valid card sale with one column replaced by an arbitrary string. */
const oneBadColumn = fc.tuple(fc.constantFrom(...INPUT_COLUMNS), fieldValue).map(([column, value]) => ({
  column,
  input: { transaction_type: 'sale', cc_number: '4242424242424242', cc_expiration: '12/39', amount: '1250', [column]: value } as TransactionInput,
}));

describe('the engine under arbitrary field values', () => {
  it('every request of a call gets an outcome and a result line; nothing throws', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyInput, { minLength: 1, maxLength: 8 }), async (inputs) => {
        // A batch of its own per run: its rows are keyed `{batch id}:{line}` as the chunk consumer keys them.
        const batchId = randomId(20, 'bat_');
        const requests = inputs.map((input, i) => ({ input, idempotencyKey: `${batchId}:${i + 2}`, line: i + 2 }));
        const outcomes = await processTransactions(env, caller, requests, { source: 'batch', ipAddress: null, batchId }, () => new Date());
        expect(outcomes).toHaveLength(requests.length);
        for (const outcome of outcomes) {
          expect(outcome.record).not.toBeNull();
          expect(['approved', 'declined', 'error']).toContain(outcome.record?.response);
          if (!outcome.ok) {
            expect(outcome.errors.length).toBeGreaterThan(0);
            expect(outcome.record?.processor_response_text).toMatch(/^[a-z_, -]+: /i);
          }
        }
      }),
      fuzzRuns(80),
    );
  });

  it('one arbitrary column in a valid sale: processed, or an error row naming that column', async () => {
    await fc.assert(
      fc.asyncProperty(oneBadColumn, async ({ column, input }) => {
        // A batch of its own per run (so a key of its own: a shrinking run reuses a column with another value).
        const batchId = randomId(20, 'bat_');
        const [outcome] = await processTransactions(
          env,
          caller,
          [{ input, idempotencyKey: `${batchId}:2`, line: 2 }],
          { source: 'batch', ipAddress: null, batchId },
          () => new Date(),
        );
        expect(outcome?.record).not.toBeNull();
        if (outcome && !outcome.ok) {
          // The refusal is about the column that changed, and nothing else.
          expectErrorsNaming(outcome.errors, refusedField(column));
        }
      }),
      fuzzRuns(80),
    );
  });

  it('over HTTP: any string in any column is a 201 or a 400 naming the field, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(oneBadColumn, async ({ column, input }) => {
        const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: input });
        expect([201, 400]).toContain(response.status);
        if (response.status === 400) {
          const body = await expectFailedEnvelope(response);
          expectErrorsNaming(body.errors ?? [], refusedField(column));
        } else await response.body?.cancel();
      }),
      fuzzRuns(40),
    );
  });
});
