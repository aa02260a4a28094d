/**
 * Batch rows are keyed `{batch id}:{line}`; an API request under such a key would take the row's
 * place (issue 21: the row then came back as an error). The form is reserved for batches.
 */
import { describe, expect, it } from 'vitest';
import { call, createMerchant } from '../helpers/api';
import { CARD_HEADER, csv, parseResult, QUEUE_TEST_TIMEOUT, saleRows, uploadOk, waitForStatus } from '../helpers/batch';
import { apiShardName, batchShardName, shardEntryList } from '../helpers/ledger';

const sale = { transaction_type: 'sale', amount: 1250, cc_number: '4242424242424242', cc_expiration: '12/39' };

describe('batch row keys', () => {
  it(
    "an API request under a batch row's key is refused, naming the field, and the row is charged as its own",
    async () => {
      const shop = await createMerchant();
      const batchId = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(2)));
      const taken = await call('POST', '/api/transaction', { key: shop.secretKey, body: sale, headers: { 'Idempotency-Key': `${batchId}:2` } });
      expect(taken.status).toBe(400);
      expect(await taken.json()).toMatchObject({ msg: 'idempotency-key: must not have the form bat_…:{line}, which batch rows use' });
      await waitForStatus(shop.secretKey, batchId, 'completed');
      const download = await call('GET', `/api/filebatch/${batchId}/download`, { key: shop.secretKey });
      expect(parseResult(await download.text()).rows.map((row) => row.response)).toEqual(['approved', 'approved']);
      // The row's key holds one transaction, the row's own, in the batch's ledger shard; the API's day shard has none.
      const rows = (await shardEntryList(batchShardName(shop.id, batchId))).filter((s) => s.record.idempotency_key === `${batchId}:2`);
      expect(rows.map((s) => s.batchId)).toEqual([batchId]);
      expect((await shardEntryList(apiShardName(shop.id))).filter((s) => s.record.idempotency_key === `${batchId}:2`)).toEqual([]);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it('keys that only look alike are accepted', async () => {
    const shop = await createMerchant();
    for (const key of ['bat_order-17', 'batch:12', 'bat_x:12a', 'order:bat_x:1']) {
      const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: sale, headers: { 'Idempotency-Key': key } });
      expect(response.status, key).toBe(201);
    }
  });
});
