/**
 * Unreferenced credits are capped per merchant (issue 21: a credit of 99,999,999,999 was approved):
 * max_credit_amount, set with the admin API (default 100000 minor units; 0 refuses them all). The
 * API answers 400 naming the amount; a batch row gets an error line saying why.
 */
import { describe, expect, it } from 'vitest';
import { admin, call, createMerchant } from '../helpers/api';
import { csv, parseResult, QUEUE_TEST_TIMEOUT, uploadOk, waitForStatus } from '../helpers/batch';
import { merchantEntries } from '../helpers/ledger';

const credit = (amount: number) => ({ transaction_type: 'credit', amount, cc_number: '4242424242424242', cc_expiration: '12/39' });

/** Credits recorded in the merchant's ledger (its API day shard and its batches' shards). */
async function creditsStored(merchantId: string): Promise<number> {
  return (await merchantEntries(merchantId)).filter((stored) => stored.record.type === 'credit').length;
}

describe('unreferenced credit cap', () => {
  it('refuses a credit over the default cap of 100000 with a 400 naming the amount; one at the cap goes through', async () => {
    const shop = await createMerchant({ name: 'Credit Shop' });
    const huge = await call('POST', '/api/transaction', { key: shop.secretKey, body: credit(99_999_999_999) });
    expect(huge.status).toBe(400);
    expect(await huge.json()).toMatchObject({ msg: "amount: a credit of 99999999999 exceeds this merchant's max_credit_amount of 100000" });
    const atCap = await call('POST', '/api/transaction', { key: shop.secretKey, body: credit(100_000) });
    expect(atCap.status).toBe(201);
    await atCap.body?.cancel();
    // A sale of the same amount is not a credit: not capped.
    const sale = await call('POST', '/api/transaction', { key: shop.secretKey, body: { ...credit(99_999_999), transaction_type: 'sale' } });
    expect(sale.status).toBe(201);
    await sale.body?.cancel();
    expect(await creditsStored(shop.id)).toBe(1);
  });

  it('follows the admin setting at once; 0 refuses every unreferenced credit', async () => {
    const shop = await createMerchant({ name: 'Careful Shop' });
    const created = await call('GET', `/admin/merchants/${shop.id}`, { key: 'test-admin-token' });
    expect((await created.json<{ data: { max_credit_amount: number } }>()).data.max_credit_amount).toBe(100_000);
    // Cached callers follow the change (the request before it cached this key's caller).
    expect((await call('POST', '/api/transaction', { key: shop.secretKey, body: credit(5_000) })).status).toBe(201);
    const patched = await admin('PATCH', `/admin/merchants/${shop.id}`, { max_credit_amount: 0 });
    expect(patched.status).toBe(200);
    expect((await patched.json<{ data: { max_credit_amount: number } }>()).data.max_credit_amount).toBe(0);
    const refused = await call('POST', '/api/transaction', { key: shop.secretKey, body: credit(1) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ msg: 'amount: unreferenced credits are not allowed for this merchant (max_credit_amount is 0)' });
    const bad = await admin('PATCH', `/admin/merchants/${shop.id}`, { max_credit_amount: -1 });
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
    expect(await creditsStored(shop.id)).toBe(1);
  });

  it(
    'a batch row over the cap gets an error line saying why; the rows around it are charged',
    async () => {
      const shop = await createMerchant({ name: 'Batch Credit Shop' });
      const header = ['transaction_type', 'amount', 'cc_number', 'cc_expiration'];
      const id = await uploadOk(
        shop.secretKey,
        csv(header, [
          ['credit', '2500', '4242424242424242', '12/39'],
          ['credit', '99999999999', '4242424242424242', '12/39'],
          ['sale', '1000', '4242424242424242', '12/39'],
        ]),
      );
      await waitForStatus(shop.secretKey, id, 'completed');
      const result = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text());
      expect(result.rows.map((row) => [row.response, row.processor_response_text])).toEqual([
        ['approved', expect.any(String)],
        ['error', "amount: a credit of 99999999999 exceeds this merchant's max_credit_amount of 100000"],
        ['approved', expect.any(String)],
      ]);
      expect(await creditsStored(shop.id)).toBe(1);
    },
    QUEUE_TEST_TIMEOUT,
  );
});
