/**
 * The engine called directly, as the batch consumer calls it, with a test implementation of its
 * three dependencies (card metadata, surcharge rules, vault): what the engine makes of their
 * answers, and how often it asks. Storage is the real D1.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import type { TransactionInput, TransactionOutcome, TransactionRequest } from '../../src/schemas/transaction-columns';
import type { CardMetadata, TransactionDeps, VaultResolution } from '../../src/services/transactions/deps';
import { runTransactions } from '../../src/services/transactions/engine';
import { createMerchant } from '../helpers/api';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const clock = () => NOW;
const SALE: TransactionInput = { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: '1000' };

/** Card metadata by number prefix; surcharge allowed for credit cards outside CT; two vault customers. */
function testDeps() {
  const calls = { card: 0, cards: 0, surcharge: 0, vault: 0, vaultReferences: 0 };
  const deps: TransactionDeps = {
    cardMetadata: async (numbers) => {
      calls.card++;
      calls.cards += numbers.length;
      return numbers.map((digits): CardMetadata => {
        if (digits.startsWith('41111111')) return { bin: '41111111', card_brand: 'VISA', card_type: 'CREDIT', payment_method_type: 'card', matched_length: 8 };
        if (digits.startsWith('555555')) return { bin: '555555', card_brand: 'MASTERCARD', card_type: 'debit', payment_method_type: 'card', matched_length: 6 };
        return { bin: digits.slice(0, 6), payment_method_type: 'card', matched_length: 0 };
      });
    },
    surchargePolicy: async (card: CardMetadata, region) => {
      calls.surcharge++;
      const allowed = card.card_type?.toLowerCase() === 'credit' && region.country === 'US' && region.state !== 'CT';
      return { allowed, maxRateBps: null };
    },
    resolveVaultPaymentMethods: async (references) => {
      calls.vault++;
      calls.vaultReferences += references.length;
      return references.map(({ customerId }): VaultResolution => {
        if (customerId === 'exempt1' || customerId === 'plain1') {
          return {
            ok: true,
            customer: { id: customerId, surchargeExempt: customerId === 'exempt1', email: 'vault@example.com', description: null },
            method: { id: 'pm1', type: 'card', number: '4111111111111111', expiration: '12/30', masked: '411111******1111' },
          };
        }
        return { ok: false, reason: 'customer_not_found', msg: 'customer_id: no vault customer' };
      });
    },
  };
  return { deps, calls };
}

let caller: Caller;
beforeAll(async () => {
  const merchant = await createMerchant({ name: 'Engine Shop', surcharge_rate_bps: 300 });
  caller = {
    merchantId: merchant.id,
    merchantName: merchant.name,
    keyId: 'key_test',
    keyType: 'secret',
    enhancedBinLookup: false,
    surchargeRateBps: 300,
    maxCreditAmount: 100_000,
  };
});

function rows(batchId: string, inputs: TransactionInput[]): TransactionRequest[] {
  return inputs.map((input, i) => ({ input, idempotencyKey: `${batchId}:${i + 2}`, line: i + 2 }));
}

async function run(requests: TransactionRequest[], deps = testDeps().deps, source: 'api' | 'batch' = 'batch'): Promise<TransactionOutcome[]> {
  return runTransactions({ env, caller, deps, clock }, requests, { source, ipAddress: '203.0.113.9', batchId: 'b1' });
}

function recordOf(outcome: TransactionOutcome | undefined) {
  if (!outcome || outcome.record === null) throw new Error(`no record: ${JSON.stringify(outcome)}`);
  return outcome.record;
}

describe('a batch chunk', () => {
  it('answers every row in order; invalid rows carry their result line and are not stored', async () => {
    const outcomes = await run(
      rows('chunk1', [SALE, { ...SALE, cc_number: '4111111111111112' }, { ...SALE, cc_number: '4000000000000002' }, { ...SALE, amount: '10.00' }]),
    );
    expect(outcomes.map((o) => (o.ok ? o.record.response : `${o.reason}:${o.errors[0]?.field}`))).toEqual([
      'approved',
      'invalid:cc_number',
      'declined',
      'invalid:amount',
    ]);
    expect(recordOf(outcomes[1])).toMatchObject({
      id: null,
      idempotency_key: 'chunk1:3',
      transaction_source: 'batch',
      ip_address: '203.0.113.9',
      response: 'error',
      response_code: 400,
      status: 'failed',
      masked_account: '411111******1112',
      processor_response_text: 'cc_number: is not a valid card number (Luhn check failed)',
    });
    expect(recordOf(outcomes[3])).toMatchObject({ amount: null, processor_response_text: 'amount: must be an integer in minor units (write 10.00 as 1000)' });
    const { results } = await env.DB.prepare("SELECT idempotency_key, line, batch_id FROM transactions WHERE idempotency_key LIKE 'chunk1:%' ORDER BY line").all();
    expect(results).toEqual([
      { idempotency_key: 'chunk1:2', line: 2, batch_id: 'b1' },
      { idempotency_key: 'chunk1:4', line: 4, batch_id: 'b1' },
    ]);
  });

  it('replays a chunk run twice from D1 without processing it again', async () => {
    const requests = rows('chunk2', Array.from({ length: 50 }, (_, i) => ({ ...SALE, amount: String(1000 + i) })));
    const first = await run(requests);
    const { deps, calls } = testDeps();
    const second = await run(requests, deps);
    expect(second.every((o) => o.ok && o.replayed)).toBe(true);
    expect(second.map((o) => recordOf(o).id)).toEqual(first.map((o) => recordOf(o).id));
    expect(second.map((o) => recordOf(o).auth_code)).toEqual(first.map((o) => recordOf(o).auth_code));
    expect(calls).toEqual({ card: 0, cards: 0, surcharge: 0, vault: 0, vaultReferences: 0 });
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM transactions WHERE idempotency_key LIKE 'chunk2:%'").first<{ n: number }>();
    expect(count?.n).toBe(50);
  });

  it('asks for card metadata in one call, surcharge rules and vault customers once per distinct value', async () => {
    const { deps, calls } = testDeps();
    const inputs: TransactionInput[] = [];
    for (let i = 0; i < 500; i++) {
      const kind = i % 4;
      if (kind === 0) inputs.push({ ...SALE, amount: undefined, base_amount: '1000', billing_country: 'US', billing_state: 'NY' });
      else if (kind === 1) inputs.push({ ...SALE, cc_number: '5555555555554444' });
      else if (kind === 2) inputs.push({ transaction_type: 'sale', customer_id: 'plain1', amount: '700' });
      else inputs.push({ ...SALE, cc_number: '6011111111111117', amount: '900' });
    }
    const outcomes = await run(rows('chunk3', inputs), deps);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(500);
    // One bulk call for the three distinct card numbers (the vault card is one of them), one for the vault.
    expect(calls).toEqual({ card: 1, cards: 3, surcharge: 1, vault: 1, vaultReferences: 1 });
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM transactions WHERE idempotency_key LIKE 'chunk3:%'").first<{ n: number }>();
    expect(count?.n).toBe(500);
  });

  it('records two rows with the same key once; the second answers the first', async () => {
    const outcomes = await run([
      { input: SALE, idempotencyKey: 'same-key' },
      { input: SALE, idempotencyKey: 'same-key' },
    ]);
    expect(outcomes.map((o) => o.ok && o.replayed)).toEqual([false, true]);
    expect(recordOf(outcomes[1]).id).toBe(recordOf(outcomes[0]).id);
  });

  it('turns a batch key reused with other content into that row\'s error line', async () => {
    await run([{ input: SALE, idempotencyKey: 'reused:2', line: 2 }]);
    const [outcome] = await run([{ input: { ...SALE, amount: '2000' }, idempotencyKey: 'reused:2', line: 2 }]);
    expect(outcome).toMatchObject({ ok: false, reason: 'invalid', record: { response: 'error', processor_response_text: 'Idempotency-Key: was already used with a different request' } });
  });
});

describe('what the dependencies decide', () => {
  it('takes card_type from the BIN data and masks with the matched BIN length', async () => {
    const [eight, six, unknown] = await run([
      { input: SALE, idempotencyKey: 'mask-8' },
      { input: { ...SALE, cc_number: '5555555555554444' }, idempotencyKey: 'mask-6' },
      { input: { ...SALE, cc_number: '6011111111111117' }, idempotencyKey: 'mask-unknown' },
    ]);
    expect(recordOf(eight)).toMatchObject({ card_type: 'credit', masked_account: '41111111****1111' });
    expect(recordOf(six)).toMatchObject({ card_type: 'debit', masked_account: '555555******4444' });
    expect(recordOf(unknown)).toMatchObject({ card_type: null, masked_account: '601111******1117' });
    const brands = await env.DB.prepare("SELECT card_brand FROM transactions WHERE idempotency_key LIKE 'mask-%' ORDER BY idempotency_key").all();
    expect(brands.results.map((r) => r.card_brand)).toEqual(['MASTERCARD', 'VISA', null]); // mask-6, mask-8, mask-unknown
  });

  it('computes the surcharge from base_amount for a surchargeable card, and not otherwise', async () => {
    const base = { ...SALE, amount: undefined, base_amount: '10000', tax_amount: '500', billing_country: 'us', billing_state: 'ny' };
    const outcomes = await run([
      { input: base, idempotencyKey: 'sc-credit' },
      { input: { ...base, billing_state: 'CT' }, idempotencyKey: 'sc-ct' },
      { input: { ...base, cc_number: '5555555555554444' }, idempotencyKey: 'sc-debit' },
      { input: { ...base, surcharge_exempt: 'true' }, idempotencyKey: 'sc-row-exempt' },
      { input: { transaction_type: 'sale', customer_id: 'exempt1', base_amount: '10000', billing_country: 'US', billing_state: 'NY' }, idempotencyKey: 'sc-customer-exempt' },
      { input: { transaction_type: 'sale', customer_id: 'plain1', base_amount: '10000', billing_country: 'US', billing_state: 'NY' }, idempotencyKey: 'sc-customer' },
      { input: { ...base, billing_state: undefined }, idempotencyKey: 'sc-no-region' },
    ]);
    expect(outcomes.map((o) => [recordOf(o).amount, recordOf(o).service_fee])).toEqual([
      [10800, 300],
      [10500, 0],
      [10500, 0],
      [10500, 0],
      [10000, 0],
      [10300, 300],
      [10500, 0],
    ]);
    const stored = await env.DB.prepare("SELECT base_amount, surcharge FROM transactions WHERE idempotency_key = 'sc-credit'").first();
    expect(stored).toEqual({ base_amount: 10000, surcharge: 300 });
  });

  it('refuses a given surcharge on a card the rules do not allow, or for an exempt customer', async () => {
    const outcomes = await run([
      { input: { ...SALE, amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'CT' }, idempotencyKey: 'sg-ct' },
      { input: { transaction_type: 'sale', customer_id: 'exempt1', amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'NY' }, idempotencyKey: 'sg-exempt' },
      { input: { ...SALE, amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'NY' }, idempotencyKey: 'sg-ok' },
    ]);
    expect(outcomes[0]).toMatchObject({ ok: false, reason: 'invalid', errors: [{ field: 'surcharge' }] });
    expect(outcomes[1]).toMatchObject({ ok: false, errors: [{ field: 'surcharge', msg: 'not allowed: the vault customer is surcharge-exempt' }] });
    expect(recordOf(outcomes[2])).toMatchObject({ response: 'approved', amount: 1030, service_fee: 30 });
  });

  it("uses the vault customer's card and email, and names an unknown customer", async () => {
    const [paid, unknown] = await run([
      { input: { transaction_type: 'sale', customer_id: 'plain1', amount: '700', cc_cvc: '123' }, idempotencyKey: 'vault-ok' },
      { input: { transaction_type: 'sale', customer_id: 'ghost', amount: '700' }, idempotencyKey: 'vault-ghost' },
    ]);
    expect(recordOf(paid)).toMatchObject({
      payment_method: 'customer',
      payment_type: 'card',
      customer_id: 'plain1',
      email_address: 'vault@example.com',
      masked_account: '41111111****1111',
      expiration: '12/30',
      cvv_response_code: 'M',
    });
    expect(unknown).toMatchObject({ ok: false, errors: [{ field: 'customer_id', msg: 'no vault customer ghost' }] });
  });
});
