/** The ledger archive's line for a record (storage/ledger-shard/records.ts): the same JSON, field for field, as the record, its batch and line, then its extras. */
import { it, expect } from 'vitest';
import { archiveLine, packRecord, unpackRecord } from '../../src/storage/ledger-shard';
import { RESULT_COLUMNS } from '../../src/schemas/transaction-columns';
it('an archive line written from the packed record is the record, its batch and line, then its extras, as one JSON object (no request hash)', () => {
  const record: Record<string, unknown> = {};
  RESULT_COLUMNS.forEach((c, i) => (record[c] = i % 3 === 0 ? null : i % 3 === 1 ? `v${i}"x` : i));
  const stored = { record, merchantId: 'm', requestHash: 'h', batchId: 'bat_1', line: 7, extras: { base_amount: 1, surcharge: 2, discount_amount: 0, surcharge_exempt: true, email_receipt: false, description: 'd', card_brand: null } } as never;
  const packed = packRecord(stored);
  const s = unpackRecord('m', packed);
  expect(archiveLine('m', packed)).not.toContain('"h"');
  expect(archiveLine('m', packed)).toBe(JSON.stringify({ ...s.record, batch_id: s.batchId, line: s.line, ...s.extras }));
  const api = packRecord({ ...(stored as object), batchId: null, line: null } as never);
  const sa = unpackRecord('m', api);
  expect(archiveLine('m', api)).toBe(JSON.stringify({ ...sa.record, batch_id: sa.batchId, line: sa.line, ...sa.extras }));
});
