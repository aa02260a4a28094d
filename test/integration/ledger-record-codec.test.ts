/**
 * A ledger shard's current records (`states.record`) and operations' answers (`operations.answer`)
 * are stored compressed (storage/ledger-shard/record-codec.ts), small enough to stay in their
 * B-tree cell; rows written as plain JSON before still read, and a replay still answers exactly
 * what the first call answered.
 */
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createMerchant, type Envelope } from '../helpers/api';
import { apiShardName } from '../helpers/ledger';
import { utcDay } from '../../src/services/transactions/ledger';
import { decodeStored, encodeStored } from '../../src/storage/ledger-shard/record-codec';

type TxRecord = Record<string, string | number | boolean | null>;
const VISA = '4111111111111111';

describe('ledger shard records stored compressed', () => {
  it('encodes JSON to a smaller BLOB and back; plain text reads as itself', () => {
    const json = JSON.stringify({ id: 'txn_x', response: 'approved', text: 'a'.repeat(2000) });
    const stored = encodeStored(json);
    expect(stored.byteLength).toBeLessThan(200);
    expect(decodeStored(stored)).toBe(json);
    expect(decodeStored(json)).toBe(json);
    expect(() => decodeStored(new Uint8Array([9, 1, 2]))).toThrow('unknown encoding');
  });

  it('a void keeps a compressed state and answer; rows written as plain JSON before still read and replay exactly', async () => {
    const shop = await createMerchant({ name: 'Codec Shop' });
    const made = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: 1500, order_id: 'codec1' } });
    expect(made.status, await made.clone().text()).toBe(201);
    const id = String((await made.json<Envelope<TxRecord>>()).data.id);
    const voidIt = () => call('POST', `/api/transaction/${id}/void`, { key: shop.secretKey, headers: { 'Idempotency-Key': 'codec-void' } });
    const first = await voidIt();
    expect(first.status).toBe(200);
    const answered = (await first.json<Envelope<TxRecord>>()).data;
    expect(answered).toMatchObject({ id, status: 'voided' });
    const read = async () => (await (await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).json<Envelope<TxRecord>>()).data;
    const before = await read();

    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, utcDay(new Date())));
    const stored = await runInDurableObject(shard, (_instance, state) => ({
      state: state.storage.sql.exec<{ t: string; n: number }>('SELECT typeof(record) AS t, length(record) AS n FROM states WHERE id = ?', id).one(),
      answer: state.storage.sql.exec<{ t: string; n: number }>('SELECT typeof(answer) AS t, length(answer) AS n FROM operations WHERE transaction_id = ?', id).one(),
    }));
    // Compressed, and under the ~1 KB a WITHOUT ROWID table keeps in its cell (no overflow page).
    expect(stored.state.t).toBe('blob');
    expect(stored.answer.t).toBe('blob');
    expect(stored.state.n).toBeLessThan(1000);
    expect(stored.answer.n).toBeLessThan(1000);

    // As an older version wrote them: plain JSON text.
    await runInDurableObject(shard, (_instance, state) => {
      const sql = state.storage.sql;
      const record = sql.exec<{ record: ArrayBuffer }>('SELECT record FROM states WHERE id = ?', id).one().record;
      sql.exec('UPDATE states SET record = ? WHERE id = ?', decodeStored(record), id);
      const answer = sql.exec<{ answer: ArrayBuffer }>('SELECT answer FROM operations WHERE transaction_id = ?', id).one().answer;
      sql.exec('UPDATE operations SET answer = ? WHERE transaction_id = ?', decodeStored(answer), id);
      expect(sql.exec<{ t: string }>('SELECT typeof(record) AS t FROM states WHERE id = ?', id).one().t).toBe('text');
    });
    expect(await read()).toEqual(before);
    const again = await voidIt();
    expect(again.status).toBe(200);
    expect((await again.json<Envelope<TxRecord>>()).data).toEqual(answered);
  });
});
