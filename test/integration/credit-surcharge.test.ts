/**
 * A surcharge is a fee on a purchase: a credit neither carries one nor computes one (a `surcharge`
 * or a `base_amount` on a credit is a 400 naming why, at the native body, the FluidPay body and a
 * batch row), and the surcharge a transaction's refunds return is capped by what was charged, in
 * total across its refunds.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv } from '../helpers/bins';
import { csv, parseResult, QUEUE_TEST_TIMEOUT, uploadOk, waitForStatus } from '../helpers/batch';

let shop: TestMerchant;
beforeAll(async () => {
  await importCsv(['bin,card_brand,issuing_bank,card_type,card_level_generic,country', '411111,visa,Credit Surcharge Bank,credit,classic,US'].join('\n'));
  shop = await createMerchant({ name: 'Surcharging Shop', surcharge_rate_bps: 300 });
});

const CARD = { cc_number: '4111111111111111', cc_expiration: '12/39' };
const NY = { billing_state: 'NY', billing_country: 'US' };

async function post(body: unknown): Promise<{ status: number; json: { msg: string; data: Record<string, unknown> } }> {
  const answer = await call('POST', '/api/transaction', { key: shop.secretKey, body });
  return { status: answer.status, json: await answer.json() };
}

describe('a credit carries no surcharge', () => {
  it('refuses base_amount and a surcharge on a credit (native body) with a 400 naming why; a sale still computes one', async () => {
    const base = await post({ transaction_type: 'credit', base_amount: 4000, ...CARD, ...NY });
    expect(base.status).toBe(400);
    expect(base.json.msg).toContain('base_amount: is not allowed on a credit');
    const given = await post({ transaction_type: 'credit', amount: 4120, surcharge: 120, ...CARD, ...NY });
    expect(given.status).toBe(400);
    expect(given.json.msg).toContain('surcharge: is not allowed on a credit: a surcharge is a fee on a purchase');
    const plain = await post({ transaction_type: 'credit', amount: 4000, ...CARD, ...NY });
    expect(plain.status).toBe(201);
    expect(plain.json.data).toMatchObject({ amount: 4000, service_fee: 0 });
    const sale = await post({ transaction_type: 'sale', base_amount: 4000, ...CARD, ...NY });
    expect(sale.status).toBe(201);
    expect(sale.json.data).toMatchObject({ amount: 4120, service_fee: 120 });
  });

  it('refuses them in the FluidPay body too', async () => {
    const card = { card: { number: '4111111111111111', expiration_date: '12/39' } };
    const address = { billing_address: { state: 'NY', country: 'US' } };
    const base = await post({ type: 'credit', base_amount: 4000, payment_method: card, ...address });
    expect(base.status).toBe(400);
    expect(base.json.msg).toContain('base_amount: is not allowed on a credit');
  });

  it(
    'gives a batch credit row with base_amount an error line saying why',
    async () => {
      const header = ['transaction_type', 'amount', 'base_amount', 'surcharge', 'cc_number', 'cc_expiration', 'billing_state', 'billing_country'];
      const id = await uploadOk(
        shop.secretKey,
        csv(header, [
          ['credit', '', '5000', '', CARD.cc_number, CARD.cc_expiration, 'NY', 'US'],
          ['credit', '5150', '', '150', CARD.cc_number, CARD.cc_expiration, 'NY', 'US'],
          ['credit', '5000', '', '', CARD.cc_number, CARD.cc_expiration, 'NY', 'US'],
        ]),
      );
      await waitForStatus(shop.secretKey, id, 'completed');
      const result = await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey });
      const rows = parseResult(await result.text()).rows;
      expect(rows[0]).toMatchObject({ response: 'error' });
      expect(rows[0]?.processor_response_text).toContain('base_amount: is not allowed on a credit');
      expect(rows[1]?.processor_response_text).toContain('surcharge: is not allowed on a credit');
      expect(rows[2]).toMatchObject({ response: 'approved', amount: '5000', service_fee: '0' });
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('refunds return at most the surcharge charged, in total', () => {
  it('refuses a refund whose surcharge passes what earlier refunds left, naming how much is left', async () => {
    const sale = await post({ transaction_type: 'sale', amount: 10300, surcharge: 300, ...CARD, ...NY });
    expect(sale.status).toBe(201);
    const id = String(sale.json.data.id);
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const refund = (body: unknown) => call('POST', `/api/transaction/${id}/refund`, { key: shop.secretKey, body });
    const first = await refund({ amount: 300, surcharge: 200 });
    expect(first.status).toBe(201);
    expect(await first.json()).toMatchObject({ data: { service_fee: 200 } });
    const second = await refund({ amount: 300, surcharge: 300 });
    expect(second.status).toBe(400);
    expect(await second.json()).toMatchObject({ msg: expect.stringContaining('surcharge: must be at most the surcharge not yet refunded (100 of the 300 charged') });
    const third = await refund({ amount: 300, surcharge: 100 });
    expect(third.status).toBe(201);
    await third.body?.cancel();
    const fourth = await refund({ amount: 300, surcharge: 1 });
    expect(fourth.status).toBe(400);
    await fourth.body?.cancel();
    // A refund with no surcharge still goes through: the money cap is amount_settled's.
    const plain = await refund({ amount: 300 });
    expect(plain.status).toBe(201);
    await plain.body?.cancel();
  });
});
