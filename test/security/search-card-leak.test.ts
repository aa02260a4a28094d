/**
 * The search index and its exports hold no card number and no CVC (issue 33): the records of every
 * unit (gzip ones decompressed), every change, the week objects, the directory, the export objects
 * and the export files in R2, after API sales, a batch file, a capture, a refund and an export.
 */
import { env } from 'cloudflare:workers';
import { listDurableObjectIds, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { gunzipText } from '../../src/lib/gzip';
import { transactionExport } from '../../src/services/search/exports';
import { admin, call, createMerchant, type Envelope } from '../helpers/api';
import { CARD_HEADER, QUEUE_TEST_TIMEOUT, csv, uploadOk, waitForStatus } from '../helpers/batch';
import { findSecrets, scanDurableObjects, scanR2, type Secrets } from '../helpers/leak-scan';

const SECRETS: Secrets = { cardNumbers: ['4111111111111111', '5555555555554444', '378282246310005', '123456789'], cvcs: ['9731', '864'] };

describe('card data in the search index', () => {
  it('none in any search object, export object or export file', async () => {
    const shop = await createMerchant({ name: 'Search Leak Shop' });
    const sale = async (body: object) => {
      const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { cc_expiration: '12/30', ...body } });
      expect(response.status).toBe(201);
      return (await response.json<Envelope<{ id: string }>>()).data;
    };
    const auth = await sale({ transaction_type: 'authorize', cc_number: '378282246310005', cc_cvc: '9731', amount: 2000 });
    await sale({ transaction_type: 'sale', cc_number: '5555555555554444', cc_cvc: '864', amount: 1500, order_id: 'LEAK1' });
    const ach = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', ach_account_number: '123456789', ach_routing_number: '021000021', ach_account_type: 'checking', ach_sec_code: 'WEB', amount: 2500 } });
    expect(ach.status).toBe(201);
    const rows = Array.from({ length: 4 }, (_, i) => ['sale', String(1000 + i), '4111111111111111', '12/30', `leak${i}`]);
    const batch = await uploadOk(shop.secretKey, csv(CARD_HEADER, rows));
    await waitForStatus(shop.secretKey, batch, 'completed');
    expect((await call('POST', `/api/transaction/${auth.id}/capture`, { key: shop.secretKey, body: {} })).status).toBe(200);
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    expect((await call('POST', `/api/transaction/${auth.id}/refund`, { key: shop.secretKey, body: { amount: 500 } })).status).toBe(201);
    const started = await call('POST', '/api/transaction/export', { key: shop.secretKey, body: {} });
    const exportId = (await started.json<Envelope<{ id: string }>>()).data.id;
    while ((await transactionExport(env, exportId).run(new Date().toISOString())).export?.status === 'running');

    // The units' records, decompressed: what the scans below see only as blobs.
    const findings = [];
    let units = 0;
    for (const id of await listDurableObjectIds(env.SEARCH_DAY)) {
      // An object without the table holds no units: with one workerd per worker (the default) the list also
      // names the objects of the files before, emptied (vitest.config.ts).
      const texts = await runInDurableObject(env.SEARCH_DAY.get(id), (_instance, state) =>
        state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'units'").toArray().length === 0
          ? []
          : state.storage.sql.exec<{ format: string; records: string | ArrayBuffer }>('SELECT format, records FROM units').toArray(),
      );
      for (const unit of texts) {
        units++;
        const text = unit.format === 'gzip' ? await gunzipText(unit.records as ArrayBuffer) : String(unit.records);
        findings.push(...findSecrets(text, SECRETS, 'search day unit'));
      }
    }
    expect(units).toBeGreaterThan(3);
    findings.push(...(await scanDurableObjects(env.SEARCH_DAY, 'SearchDay', SECRETS)));
    findings.push(...(await scanDurableObjects(env.SEARCH_KEYS, 'SearchKeys', SECRETS)));
    findings.push(...(await scanDurableObjects(env.SEARCH_DIRECTORY, 'SearchDirectory', SECRETS)));
    findings.push(...(await scanDurableObjects(env.TRANSACTION_EXPORT, 'TransactionExport', SECRETS)));
    findings.push(...(await scanR2(env.FILES, SECRETS)));
    expect(findings).toEqual([]);
    const file = await env.FILES.get(`exports/${shop.id}/${exportId}.csv`);
    expect((await file?.text())?.split('\n').filter(Boolean)).toHaveLength(1 + 3 + 4 + 1);
  }, QUEUE_TEST_TIMEOUT);
});
