/**
 * The card networks' rules on trying a declined card again, at every door: an API sale, a batch row
 * and a subscription's billing are refused before the processor, with the rule named.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, csv, parseResult, QUEUE_TEST_TIMEOUT, uploadOk, waitForStatus } from '../helpers/batch';
import { created, customerWithCard, okData, recurring, type Subscription } from '../helpers/recurring';
import { brokenRule, countsAsCardDecline } from '../../src/services/declines/card-guard';
import { foldAttemptRows } from '../../src/durable-objects/card-declines';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

const PICK_UP = '4000000000009045';
const VISA = '4111111111111111';
/** Issuer declines the networks allow retrying (within their limits): `05` do not honor. */
const VISA_DECLINED = '4000000000000002';
const MASTERCARD_DECLINED = '5105100000009911';
/** Totals the sandbox declines at the gateway, whatever the card: its rules (300) and a duplicate (301). */
const GATEWAY_DECLINE = 300;
const DUPLICATE = 301;

let keys = 0;
function sale(merchant: TestMerchant, number: string, amount = 1000): Promise<Response> {
  return call('POST', '/api/transaction', {
    key: merchant.secretKey,
    headers: { 'Idempotency-Key': `retry-rules-${crypto.randomUUID()}-${++keys}` },
    body: { transaction_type: 'sale', amount, cc_number: number, cc_expiration: '12/39' },
  });
}

async function processorCharges(merchant: TestMerchant): Promise<number> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(merchant.id), utcDay(new Date())));
  return (await acquirer.list()).reduce((sum, row) => sum + row.chargeCalls, 0);
}

describe('a decline the networks forbid retrying', () => {
  it('API: the card is refused at this merchant from then on (400 naming the rule, the processor not asked), not at another', async () => {
    const shop = await createMerchant({ name: 'Pick-up Shop' });
    const elsewhere = await createMerchant({ name: 'Elsewhere' });
    const first = await sale(shop, PICK_UP);
    expect(first.status).toBe(201);
    expect((await first.json<Envelope<{ response: string; processor_response_code: string }>>()).data).toMatchObject({ response: 'declined', processor_response_code: '04' });
    const calls = await processorCharges(shop);

    const again = await sale(shop, PICK_UP, 500);
    expect(again.status).toBe(400);
    const body = await again.json<Envelope>();
    expect(body.errors).toEqual([{ field: 'card', msg: expect.stringContaining('Visa category 1') }]);
    expect(body.msg).not.toContain(PICK_UP);
    expect(await processorCharges(shop)).toBe(calls);
    // Another merchant's attempt is its own.
    expect((await sale(elsewhere, PICK_UP)).status).toBe(201);
    // Other cards at this merchant go on.
    expect((await sale(shop, VISA)).status).toBe(201);
  });

  it('batch rows: a row on that card gets a result line naming the rule', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const shop = await createMerchant({ name: 'Batch Pick-up Shop' });
    expect((await sale(shop, PICK_UP)).status).toBe(201);
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, [['sale', '1000', PICK_UP, '12/39', 'A1'], ['sale', '1000', VISA, '12/39', 'A2']]));
    await waitForStatus(shop.secretKey, id, 'completed');
    const result = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text());
    expect(result.rows.map((row) => row.response)).toEqual(['error', 'approved']);
    expect(result.rows[0]?.processor_response_text).toContain('Visa category 1');
  });

  it('subscriptions: billing a card that had such a decline at this merchant is refused, the subscription needs attention', async () => {
    const shop = await createMerchant({ name: 'Subscription Pick-up Shop' });
    expect((await sale(shop, PICK_UP)).status).toBe(201);
    const customer = await customerWithCard(shop, PICK_UP);
    const subscription = await created<Subscription>(recurring(shop, 'POST', '/subscription', { customer: { id: customer.id }, amount: 100, charge_on_day: true }));
    const calls = await processorCharges(shop);
    const billed = await admin('POST', `/admin/merchants/${shop.id}/bill`);
    expect((await billed.json<Envelope<{ charged: number; skipped: number }>>()).data).toMatchObject({ charged: 0, skipped: 1 });
    expect(await processorCharges(shop)).toBe(calls);
    const after = await okData<Subscription>(recurring(shop, 'GET', `/subscription/${subscription.id}`));
    expect(after.status).toBe('error');
    expect(after.last_decline?.processor_response_text).toContain('Visa category 1');
  });
});

describe('the networks’ limits on retrying a declined card', () => {
  it('Mastercard: 10 attempts on a declined card in 24 hours, then refused before the processor', async () => {
    const shop = await createMerchant({ name: 'Mastercard Retries' });
    for (let i = 0; i < 10; i++) { const r = await sale(shop, MASTERCARD_DECLINED); expect(r.status, await r.text()).toBe(201); }
    const eleventh = await sale(shop, MASTERCARD_DECLINED);
    expect(eleventh.status).toBe(400);
    expect((await eleventh.json<Envelope>()).errors?.[0]?.msg).toContain('Mastercard allows at most 10 attempts on a declined card in 24 hours');
  });

  it('Visa: 20 declined reattempts in 30 days (from 19 May 2025), then refused', async () => {
    const shop = await createMerchant({ name: 'Visa Retries' });
    for (let i = 0; i < 21; i++) { const r = await sale(shop, VISA_DECLINED); expect(r.status, `attempt ${i + 1}: ${await r.text()}`).toBe(201); }
    const next = await sale(shop, VISA_DECLINED);
    expect(next.status).toBe(400);
    expect((await next.json<Envelope>()).errors?.[0]?.msg).toContain('Visa allows at most 20 reattempts of a declined card in 30 days');
  });

  it('only issuer declines count: duplicates and gateway declines of a card do not, an issuer decline does', async () => {
    const shop = await createMerchant({ name: 'Which Declines Count' });
    // Past Mastercard's 10 in 24 hours in gateway answers alone: none of them reached the issuer.
    for (let i = 0; i < 6; i++) {
      for (const amount of [DUPLICATE, GATEWAY_DECLINE]) {
        const r = await sale(shop, '5555555555554444', amount);
        const text = await r.text();
        expect(r.status, text).toBe(201);
        expect((JSON.parse(text) as Envelope<{ response: string; response_code: number }>).data).toMatchObject({ response: 'declined', response_code: amount });
      }
    }
    const charges = await processorCharges(shop);
    const approved = await sale(shop, '5555555555554444');
    expect(approved.status).toBe(201);
    expect((await approved.json<Envelope<{ response: string }>>()).data?.response).toBe('approved');
    expect(await processorCharges(shop)).toBe(charges + 1);
    // The issuer's declines of one card count: the eleventh attempt is refused before the processor.
    for (let i = 0; i < 10; i++) expect((await sale(shop, MASTERCARD_DECLINED)).status).toBe(201);
    const before = await processorCharges(shop);
    const refused = await sale(shop, MASTERCARD_DECLINED);
    expect(refused.status).toBe(400);
    expect((await refused.json<Envelope>()).errors?.[0]?.msg).toContain('Mastercard allows at most 10 attempts');
    expect(await processorCharges(shop)).toBe(before);
  });

  it('declines kept a row per attempt by the version before are folded into hours and still count', async () => {
    const bucket = env.CARD_DECLINES.getByName(`fold-${crypto.randomUUID()}:0`);
    const now = Date.now();
    const card = 'ab'.repeat(32);
    await runInDurableObject(bucket, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec('CREATE TABLE declines (card TEXT NOT NULL, at INTEGER NOT NULL, never INTEGER NOT NULL)');
      for (let i = 0; i < 12; i++) sql.exec('INSERT INTO declines (card, at, never) VALUES (?, ?, 0)', card, now - i * 60_000);
      sql.exec('INSERT INTO declines (card, at, never) VALUES (?, ?, 1)', card, now - 2 * 86_400_000);
      foldAttemptRows(sql);
    });
    const [counts] = await bucket.counts([card.slice(0, 32)], now);
    expect(counts).toMatchObject({ never: true, last30d: 13 });
    expect(counts?.last24h).toBeGreaterThanOrEqual(12);
  });

  it('which answers count toward the limits', () => {
    expect(countsAsCardDecline({ response: 'declined', response_code: 201 })).toBe(true);
    expect(countsAsCardDecline({ response: 'declined', response_code: 253 })).toBe(true);
    expect(countsAsCardDecline({ response: 'declined', response_code: 300 })).toBe(false);
    expect(countsAsCardDecline({ response: 'declined', response_code: 301 })).toBe(false);
    expect(countsAsCardDecline({ response: 'error', response_code: 421 })).toBe(false);
    expect(countsAsCardDecline({ response: 'approved', response_code: 100 })).toBe(false);
  });

  it('the rules by brand, date and window', () => {
    const may2025 = Date.UTC(2025, 4, 19);
    expect(brokenRule('visa', { never: false, last24h: 16, last30d: 16 }, may2025 - 1)).toContain('at most 15 reattempts');
    expect(brokenRule('visa', { never: false, last24h: 16, last30d: 16 }, may2025)).toBeNull();
    expect(brokenRule('visa', { never: false, last24h: 0, last30d: 21 }, may2025)).toContain('at most 20 reattempts');
    expect(brokenRule('mastercard', { never: false, last24h: 9, last30d: 34 }, may2025)).toBeNull();
    expect(brokenRule('mastercard', { never: false, last24h: 2, last30d: 35 }, may2025)).toContain('35 attempts on a declined card in 30 days');
    expect(brokenRule('amex', { never: false, last24h: 50, last30d: 50 }, may2025)).toBeNull();
    expect(brokenRule('amex', { never: true, last24h: 1, last30d: 1 }, may2025)).toContain('forbid retrying');
  });
});
