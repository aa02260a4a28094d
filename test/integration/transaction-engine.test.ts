/**
 * The engine called directly, as the batch consumer calls it, with a test implementation of its
 * three dependencies (card metadata, surcharge rules, vault): what the engine makes of their
 * answers, and how often it asks. Storage is real: D1, and the batch's ledger shard.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import type { TransactionInput, TransactionOutcome, TransactionRequest } from '../../src/schemas/transaction-columns';
import type { CardMetadata, TransactionDeps, VaultResolution } from '../../src/services/transactions/deps';
import { runTransactions } from '../../src/services/transactions/engine';
import { randomId } from '../../src/lib/crypto';
import { createMerchant } from '../helpers/api';
import { batchShardName, shardEntries } from '../helpers/ledger';

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
      return { allowed, maxRateBps: null, atCost: false };
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

/** A batch of its own for each test: rows keyed `{batch id}:{line}` as the chunk consumer keys them. */
function rows(batchId: string, inputs: TransactionInput[]): TransactionRequest[] {
  return inputs.map((input, i) => ({ input, idempotencyKey: `${batchId}:${i + 2}`, line: i + 2 }));
}

function newBatch(): string {
  return randomId(20, 'bat_');
}

async function run(requests: TransactionRequest[], deps = testDeps().deps): Promise<TransactionOutcome[]> {
  const batchId = requests[0]?.idempotencyKey.split(':')[0] ?? '';
  return runTransactions({ env, caller, deps, clock }, requests, { source: 'batch', ipAddress: '203.0.113.9', batchId, chunkFirstLine: 2 });
}

/** What the batch's ledger shard holds, by key. */
async function stored(batchId: string) {
  return shardEntries(batchShardName(caller.merchantId, batchId));
}

function recordOf(outcome: TransactionOutcome | undefined) {
  if (!outcome || outcome.record === null) throw new Error(`no record: ${JSON.stringify(outcome)}`);
  return outcome.record;
}

describe('a batch chunk', () => {
  it('answers every row in order; invalid rows carry their result line and are not stored', async () => {
    const chunk1 = newBatch();
    const outcomes = await run(
      rows(chunk1, [SALE, { ...SALE, cc_number: '4111111111111112' }, { ...SALE, cc_number: '4000000000000002' }, { ...SALE, amount: '10.00' }]),
    );
    expect(outcomes.map((o) => (o.ok ? o.record.response : `${o.reason}:${o.errors[0]?.field}`))).toEqual([
      'approved',
      'invalid:cc_number',
      'declined',
      'invalid:amount',
    ]);
    expect(recordOf(outcomes[1])).toMatchObject({
      id: null,
      idempotency_key: `${chunk1}:3`,
      transaction_source: 'batch',
      ip_address: '203.0.113.9',
      response: 'error',
      response_code: 400,
      status: 'failed',
      masked_account: '411111******1112',
      processor_response_text: 'cc_number: is not a valid card number (Luhn check failed)',
    });
    expect(recordOf(outcomes[3])).toMatchObject({ amount: null, processor_response_text: 'amount: must be an integer in minor units (write 10.00 as 1000)' });
    const results = [...(await stored(chunk1)).values()].map((s) => ({ idempotency_key: s.record.idempotency_key, line: s.line, batch_id: s.batchId }));
    expect(results).toEqual([
      { idempotency_key: `${chunk1}:2`, line: 2, batch_id: chunk1 },
      { idempotency_key: `${chunk1}:4`, line: 4, batch_id: chunk1 },
    ]);
  });

  it('replays a chunk run twice from its ledger shard without processing it again', async () => {
    const chunk2 = newBatch();
    const requests = rows(chunk2, Array.from({ length: 50 }, (_, i) => ({ ...SALE, amount: String(1000 + i) })));
    const first = await run(requests);
    const { deps, calls } = testDeps();
    const second = await run(requests, deps);
    expect(second.every((o) => o.ok && o.replayed)).toBe(true);
    expect(second.map((o) => recordOf(o).id)).toEqual(first.map((o) => recordOf(o).id));
    expect(second.map((o) => recordOf(o).auth_code)).toEqual(first.map((o) => recordOf(o).auth_code));
    expect(calls).toEqual({ card: 0, cards: 0, surcharge: 0, vault: 0, vaultReferences: 0 });
    expect((await stored(chunk2)).size).toBe(50);
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
    const chunk3 = newBatch();
    const outcomes = await run(rows(chunk3, inputs), deps);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(500);
    // One bulk call for the three distinct card numbers (the vault card is one of them), one for the vault.
    expect(calls).toEqual({ card: 1, cards: 3, surcharge: 1, vault: 1, vaultReferences: 1 });
    expect((await stored(chunk3)).size).toBe(500);
  });

  it('records two rows with the same key once; the second answers the first', async () => {
    const batch = newBatch();
    const outcomes = await run([
      { input: SALE, idempotencyKey: `${batch}:2`, line: 2 },
      { input: SALE, idempotencyKey: `${batch}:2`, line: 2 },
    ]);
    expect(outcomes.map((o) => o.ok && o.replayed)).toEqual([false, true]);
    expect(recordOf(outcomes[1]).id).toBe(recordOf(outcomes[0]).id);
  });

  it('answers a batch row run again with other content from its record: the key names the line, not the content', async () => {
    // A batch's key names one line of one file, so a second run of it is that line again: replayed.
    // Only a key already held by a row of another batch could be "reused", and batches have shards of their own.
    const batch = newBatch();
    const [first] = await run([{ input: SALE, idempotencyKey: `${batch}:2`, line: 2 }]);
    const [outcome] = await run([{ input: { ...SALE, amount: '2000' }, idempotencyKey: `${batch}:2`, line: 2 }]);
    expect(outcome).toMatchObject({ ok: true, replayed: true, record: { id: recordOf(first).id, amount: 1000 } });
  });
});

describe('what the dependencies decide', () => {
  it('takes card_type from the BIN data and masks with the matched BIN length', async () => {
    const batch = newBatch();
    const [eight, six, unknown] = await run(rows(batch, [SALE, { ...SALE, cc_number: '5555555555554444' }, { ...SALE, cc_number: '6011111111111117' }]));
    expect(recordOf(eight)).toMatchObject({ card_type: 'credit', masked_account: '41111111****1111' });
    expect(recordOf(six)).toMatchObject({ card_type: 'debit', masked_account: '555555******4444' });
    expect(recordOf(unknown)).toMatchObject({ card_type: null, masked_account: '601111******1117' });
    const brands = [...(await stored(batch)).values()].map((s) => s.extras.card_brand);
    expect(brands).toEqual(['VISA', 'MASTERCARD', null]);
  });

  it('computes the surcharge from base_amount for a surchargeable card, and not otherwise', async () => {
    const base = { ...SALE, amount: undefined, base_amount: '10000', tax_amount: '500', billing_country: 'us', billing_state: 'ny' };
    const batch = newBatch();
    const outcomes = await run(
      rows(batch, [
        base,
        { ...base, billing_state: 'CT' },
        { ...base, cc_number: '5555555555554444' },
        { ...base, surcharge_exempt: 'true' },
        { transaction_type: 'sale', customer_id: 'exempt1', base_amount: '10000', billing_country: 'US', billing_state: 'NY' },
        { transaction_type: 'sale', customer_id: 'plain1', base_amount: '10000', billing_country: 'US', billing_state: 'NY' },
        { ...base, billing_state: undefined },
      ]),
    );
    expect(outcomes.map((o) => [recordOf(o).amount, recordOf(o).service_fee])).toEqual([
      [10800, 300],
      [10500, 0],
      [10500, 0],
      [10500, 0],
      [10000, 0],
      [10300, 300],
      [10500, 0],
    ]);
    const credit = (await stored(batch)).get(`${batch}:2`);
    expect({ base_amount: credit?.extras.base_amount, surcharge: credit?.extras.surcharge }).toEqual({ base_amount: 10000, surcharge: 300 });
  });

  it('refuses a given surcharge on a card the rules do not allow, or for an exempt customer', async () => {
    const outcomes = await run(
      rows(newBatch(), [
        { ...SALE, amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'CT' },
        { transaction_type: 'sale', customer_id: 'exempt1', amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'NY' },
        { ...SALE, amount: '1030', surcharge: '30', billing_country: 'US', billing_state: 'NY' },
      ]),
    );
    expect(outcomes[0]).toMatchObject({ ok: false, reason: 'invalid', errors: [{ field: 'surcharge' }] });
    expect(outcomes[1]).toMatchObject({ ok: false, errors: [{ field: 'surcharge', msg: 'not allowed: the vault customer is surcharge-exempt' }] });
    expect(recordOf(outcomes[2])).toMatchObject({ response: 'approved', amount: 1030, service_fee: 30 });
  });

  it("uses the vault customer's card and email, and names an unknown customer", async () => {
    const [paid, unknown] = await run(
      rows(newBatch(), [
        { transaction_type: 'sale', customer_id: 'plain1', amount: '700', cc_cvc: '123' },
        { transaction_type: 'sale', customer_id: 'ghost', amount: '700' },
      ]),
    );
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
