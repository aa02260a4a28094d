/**
 * A ledger shard's current records (`states.record`) and operations' answers (`operations.answer`)
 * are stored compressed (storage/ledger-shard/record-codec.ts), small enough to stay in their
 * B-tree cell; rows written as plain JSON before still read, and a replay still answers exactly
 * what the first call answered.
 */
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope } from '../helpers/api';
import { apiShardName, objectRowsAsText } from '../helpers/ledger';
import { utcDay } from '../../src/services/transactions/ledger';
import { deflateSync, strToU8 } from 'fflate';
import { decodeStored, encodeStored, UNSETTLED_TEXT_MAX_BYTES } from '../../src/storage/ledger-shard/record-codec';
import { JSON_PARAMETER_BYTES, readStatesOf, writeStates } from '../../src/storage/ledger-shard/bulk';
import { initialiseShard } from '../../src/storage/ledger-shard/schema';
import type { StateRow } from '../../src/storage/ledger-shard/states';
import { changeInput, initialiseDay, readChanges } from '../../src/storage/search/day';
import { upsertChanges } from '../../src/storage/search/day-changes';
import { packResultColumns, RESULT_COLUMNS, type TransactionRecord } from '../../src/schemas/transaction-columns';
import { packedRecordJson, packRecord, type StoredTransaction } from '../../src/storage/ledger-shard/records';

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

  it("makes a state's JSON from its result columns' JSON the same, text for text, as from the record", () => {
    const fields = Object.fromEntries(RESULT_COLUMNS.map((column, i) => [column, i % 4 === 0 ? null : i % 4 === 1 ? i : `v"${i}\\ Zoë 🚀`])) as Record<string, unknown>;
    // A column left undefined packs as null both ways.
    delete fields[RESULT_COLUMNS[5] as string];
    const tx: StoredTransaction = { record: fields as TransactionRecord, merchantId: 'm', requestHash: 'h"1', batchId: 'bat_x', line: 7, extras: { description: 'café "x"', card_brand: 'visa' } as never };
    const expected = JSON.stringify(packRecord(tx));
    expect(packedRecordJson(tx, JSON.stringify(packResultColumns(tx.record)))).toBe(expected);
    expect(packedRecordJson(tx)).toBe(expected);
  });

  it('keeps a short value (a compact answer) as its UTF-8 bytes, not deflated, and reads it back exactly', () => {
    const json = JSON.stringify({ status: 200, changed: { status: 'pending_settlement', amount_captured: 1000, note: 'café ✓' } });
    const stored = new Uint8Array(encodeStored(json));
    expect(stored[0]).toBe(0);
    expect(new TextDecoder().decode(stored.subarray(1))).toBe(json);
    expect(decodeStored(stored.buffer)).toBe(json);
    // A long one is still deflated.
    expect(new Uint8Array(encodeStored(JSON.stringify({ text: 'b'.repeat(600) })))[0]).toBe(1);
  });

  it('reads a record an earlier version deflated with fflate (rows already stored)', () => {
    const json = JSON.stringify({ id: 'txn_old', status: 'pending_settlement', text: 'c'.repeat(900) });
    const packed = deflateSync(strToU8(json), { level: 6 });
    const stored = new Uint8Array(packed.length + 1);
    stored[0] = 1;
    stored.set(packed, 1);
    expect(decodeStored(stored.buffer)).toBe(json);
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
    // The leak scans read a compressed value as the JSON it holds (a card number in it would be found).
    const scanned = (await objectRowsAsText(shard)).filter((row) => row.where.startsWith('states ')).map((row) => row.text);
    expect(scanned.join('\n')).toContain('411111******1111');

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

  it("a capture's state awaits settlement as its JSON text, in its cell; the settlement run rewrites it deflated; both read the same", async () => {
    const shop = await createMerchant({ name: 'Codec Settle Shop' });
    const made = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: 1200, order_id: 'codec3' } });
    expect(made.status, await made.clone().text()).toBe(201);
    const id = String((await made.json<Envelope<TxRecord>>()).data.id);
    expect((await call('POST', `/api/transaction/${id}/capture`, { key: shop.secretKey, headers: { 'Idempotency-Key': 'codec-capture-3' } })).status).toBe(200);
    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, utcDay(new Date())));
    const stateOf = () =>
      runInDurableObject(shard, (_instance, state) => state.storage.sql.exec<{ t: string; n: number; unsettled: number }>('SELECT typeof(record) AS t, length(CAST(record AS BLOB)) AS n, unsettled FROM states WHERE id = ?', id).one());
    const read = async () => (await (await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).json<Envelope<TxRecord>>()).data;

    // Awaiting settlement: text, no zlib call, under the ~1 KB a WITHOUT ROWID row keeps in its cell.
    const captured = await stateOf();
    expect(captured).toMatchObject({ t: 'text', unsettled: 1 });
    expect(captured.n).toBeLessThanOrEqual(UNSETTLED_TEXT_MAX_BYTES);
    expect(await read()).toMatchObject({ id, status: 'pending_settlement', amount_captured: 1200 });

    // Settled: kept 548 days, so deflated.
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const settled = await stateOf();
    expect(settled).toMatchObject({ t: 'blob', unsettled: 0 });
    expect(settled.n).toBeLessThan(captured.n);
    expect(await read()).toMatchObject({ id, status: 'settled', amount_captured: 1200, amount_settled: 1200 });
  });

  it("a replay answers the first answer exactly after the transaction moved on, though only what differs from its page record is kept", async () => {
    const shop = await createMerchant({ name: 'Codec Replay Shop' });
    const made = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: 1000, order_id: 'codec2' } });
    expect(made.status, await made.clone().text()).toBe(201);
    const id = String((await made.json<Envelope<TxRecord>>()).data.id);
    const operate = (kind: 'capture' | 'refund', key: string, body?: unknown) => call('POST', `/api/transaction/${id}/${kind}`, { key: shop.secretKey, body, headers: { 'Idempotency-Key': key } });
    const captured = await operate('capture', 'codec-capture');
    expect(captured.status).toBe(200);
    const capture = (await captured.json<Envelope<TxRecord>>()).data;
    expect(capture).toMatchObject({ status: 'pending_settlement', amount_refunded: 0 });
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const refunded = await operate('refund', 'codec-refund', { amount: 300 });
    expect(refunded.status).toBe(201);
    const refund = (await refunded.json<Envelope<TxRecord>>()).data;
    expect(refund).toMatchObject({ type: 'refund', amount: 300, referenced_transaction_id: id });
    expect((await operate('refund', 'codec-refund-2', { amount: 200 })).status).toBe(201);

    // The transaction is now settled and partly refunded; each replay answers as the first call did.
    const now = (await (await call('GET', `/api/transaction/${id}`, { key: shop.secretKey })).json<Envelope<TxRecord>>()).data;
    expect(now).toMatchObject({ status: 'partially_refunded', amount_refunded: 500 });
    const again = await operate('capture', 'codec-capture');
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await again.json<Envelope<TxRecord>>()).data).toEqual(capture);
    const refundAgain = await operate('refund', 'codec-refund', { amount: 300 });
    expect(refundAgain.status).toBe(200);
    expect((await refundAgain.json<Envelope<TxRecord>>()).data).toEqual(refund);

    // What is kept: the status and the fields that differ from the page record, not the record.
    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, utcDay(new Date())));
    const kept = await runInDurableObject(shard, (_instance, state) =>
      state.storage.sql.exec<{ key: string; answer: ArrayBuffer }>('SELECT key, answer FROM operations WHERE transaction_id = ? ORDER BY created_at, key', id).toArray().map((row) => JSON.parse(decodeStored(row.answer)) as Record<string, unknown>),
    );
    expect(kept).toHaveLength(3);
    for (const answer of kept) {
      expect(answer).not.toHaveProperty('record');
      expect(Object.keys(answer.changed as object).length).toBeLessThan(25);
    }
    expect(kept[0]).toMatchObject({ status: 200, changed: { status: 'pending_settlement', amount_refunded: 0 } });
  });

  it("a chunk's states and search changes written together keep every byte of each record: non-ASCII text, compressed records, more than one statement's worth", async () => {
    // Records travel as bytes beside the JSON of their rows (bulk.ts, spannedGroups): offsets count
    // UTF-8 bytes, and a group is cut before its JSON or its bytes pass one parameter's bound.
    const count = 2 * Math.ceil(JSON_PARAMETER_BYTES / 600);
    const record = (i: number): TransactionRecord => {
      const fields = Object.fromEntries(RESULT_COLUMNS.map((column) => [column, null])) as Record<string, unknown>;
      Object.assign(fields, { id: `txn_bulk${String(i).padStart(6, '0')}`, status: i % 2 === 0 ? 'pending_settlement' : 'voided', amount: 1000 + i, created_at: '2026-11-27T10:00:00.000Z' });
      // Multi-byte text ("Zoë", a rocket, CJK): byte offsets, not characters, must find it again.
      Object.assign(fields, { user_name: `Zoë 🚀 店 ${i}`, order_id: `o"${i}\\n` });
      return fields as unknown as TransactionRecord;
    };
    const states: StateRow[] = Array.from({ length: count }, (_, i) => ({
      stored: { record: record(i), merchantId: 'bulkmerchant', requestHash: '', batchId: 'bat_bulk', line: i + 2, extras: { description: `Beschreibung ${i} — ü`, card_brand: 'visa' } as never },
      original: true,
      amountRefunded: 0,
      // Even rows await settlement (kept as text), odd ones are at rest (deflated BLOBs).
      unsettled: i % 2 === 0,
      capturedAt: i % 2 === 0 ? '2026-11-27T11:00:00.000Z' : null,
      settledOn: null,
    }));
    const shard = env.LEDGER_SHARD.getByName(`bulk-codec-${crypto.randomUUID()}`);
    const back = await runInDurableObject(shard, (_instance, state) => {
      const sql = state.storage.sql;
      initialiseShard(sql, { name: 'bulk-codec', periodStart: '2026-11-27', hashesClearAt: null, archiveAt: '2027-06-01T00:00:00.000Z' });
      let statements = 0;
      const exec = sql.exec.bind(sql);
      sql.exec = ((query: string, ...bindings: unknown[]) => {
        statements++;
        return exec(query, ...bindings);
      }) as typeof sql.exec;
      writeStates(sql, states.map((s) => ({ state: s, updatedAt: '2026-11-27T11:00:00.000Z' })));
      sql.exec = exec;
      const types = sql.exec<{ t: string; n: number }>('SELECT typeof(record) AS t, COUNT(*) AS n FROM states GROUP BY 1 ORDER BY 1').toArray();
      return { statements, types, read: readStatesOf(sql, 'bulkmerchant', states.map((s) => String(s.stored.record.id))) };
    });
    expect(back.statements).toBeGreaterThan(1);
    expect(back.types).toEqual([
      { t: 'blob', n: count / 2 },
      { t: 'text', n: count / 2 },
    ]);
    for (const s of states) {
      const read = back.read.get(String(s.stored.record.id));
      expect(read?.stored.record).toEqual(s.stored.record);
      expect(read?.stored.extras).toMatchObject({ description: s.stored.extras.description });
      expect(read?.unsettled).toBe(s.unsettled);
    }

    const day = env.SEARCH_DAY.getByName(`bulk-codec-${crypto.randomUUID()}`);
    const changes = await runInDurableObject(day, (_instance, state) => {
      const sql = state.storage.sql;
      initialiseDay(sql, { merchantId: 'bulkmerchant', day: '2026-11-27', deleteAt: '2027-06-01T00:00:00.000Z' });
      const written = upsertChanges(
        sql,
        states.map((s, i) => {
          const input = changeInput(String(s.stored.record.id), 'sh0', s.stored.record, 0);
          return { id: input.id, shard: 'sh0', page: `p${Math.floor(i / 500)}`, at: input.createdAt, rank: 1, amountRefunded: 0, settledOn: null, packed: input.packed };
        }),
      );
      return { written: written.filter(Boolean).length, read: readChanges(sql, states.map((s) => String(s.stored.record.id))) };
    });
    expect(changes.written).toBe(count);
    for (const s of states) expect(changes.read.get(String(s.stored.record.id))?.record).toEqual(s.stored.record);
  });
});
