/**
 * Capture, void and refund rows in batch files (docs/batch.md, "Capture, void and refund rows"):
 * through the real queue and objects, each kind approved and refused as the API's operation would
 * be, a race with the API, a file whose rows name rows of the same file (also across chunks, in
 * any order of delivery), a redelivered chunk, and a cancelled file's processed_lines.
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import {
  CARD_HEADER,
  QUEUE_TEST_TIMEOUT,
  createUnqueuedBatch,
  csv,
  deliver,
  markQueuedWithoutSending,
  parseResult,
  status,
  uploadOk,
  waitForStatus,
} from '../helpers/batch';
import { resultPartKey } from '../../src/storage/batch-files';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';

type TxRecord = Record<string, string | number | boolean | null>;

const VISA = '4111111111111111';
const AUTHORIZE = { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: 1000 };
const OPS_HEADER = ['transaction_type', 'transaction_id', 'amount'];

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Lifecycle File Shop' });
  other = await createMerchant({ name: 'Lifecycle File Other' });
});

async function create(body: unknown, merchant: TestMerchant = shop): Promise<TxRecord> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body });
  expect(response.status).toBe(201);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function get(id: string, merchant: TestMerchant = shop): Promise<TxRecord> {
  const response = await call('GET', `/api/transaction/${id}`, { key: merchant.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function settleNow(merchant: TestMerchant = shop): Promise<void> {
  expect((await admin('POST', `/admin/merchants/${merchant.id}/settle`)).status).toBe(200);
}

/** Uploads a file, waits for it to complete, and answers its result rows. */
async function run(text: string, merchant: TestMerchant = shop): Promise<Record<string, string>[]> {
  const id = await uploadOk(merchant.secretKey, text);
  await waitForStatus(merchant.secretKey, id, 'completed');
  const download = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
  expect(download.status).toBe(200);
  return parseResult(await download.text()).rows;
}

/** How often the sandbox was asked to act under keys containing `keyPart`. */
async function sandboxCalls(merchant: TestMerchant, keyPart: string): Promise<{ type: string; chargeCalls: number }[]> {
  const acquirer = env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(merchant.id), utcDay(new Date())));
  return (await acquirer.list()).filter((row) => row.idempotencyKey.includes(keyPart)).map((row) => ({ type: row.type, chargeCalls: row.chargeCalls }));
}

describe('lifecycle rows approved', () => {
  it('captures (all, and part), voids and refunds through the API operation; result lines as the API answers', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const [whole, part, toVoid, sale] = await Promise.all([create(AUTHORIZE), create(AUTHORIZE), create(AUTHORIZE), create({ ...AUTHORIZE, transaction_type: 'sale' })]);
    await settleNow();
    const rows = await run(
      csv(OPS_HEADER, [
        ['capture', String(whole?.id), ''],
        ['capture', String(part?.id), '600'],
        ['void', String(toVoid?.id), ''],
        ['refund', String(sale?.id), '250'],
      ]),
    );
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatchObject({ id: String(whole?.id), type: 'authorize', status: 'pending_settlement', amount_captured: '1000', response: 'approved' });
    expect(rows[1]).toMatchObject({ id: String(part?.id), status: 'pending_settlement', amount_authorized: '1000', amount_captured: '600' });
    expect(rows[2]).toMatchObject({ id: String(toVoid?.id), status: 'voided', response: 'approved' });
    expect(rows[3]).toMatchObject({ type: 'refund', referenced_transaction_id: String(sale?.id), amount: '250', status: 'pending_settlement', response: 'approved' });
    // Each line names its row, as every batch line does.
    for (const [i, row] of rows.entries()) expect(row.idempotency_key).toMatch(new RegExp(`^bat_[a-z0-9]+:${i + 2}$`));
    // The records read the same through the API.
    expect(await get(String(whole?.id))).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
    expect(await get(String(part?.id))).toMatchObject({ amount_captured: 600 });
    expect(await get(String(toVoid?.id))).toMatchObject({ status: 'voided' });
    expect(await get(String(sale?.id))).toMatchObject({ amount_refunded: 250 });
  });
});

describe('lifecycle rows refused', () => {
  it('wrong state, over the amount left, another merchant\'s id, an unknown id, a void with an amount: row errors naming why, nothing touched', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const [captured, auth, auth2, unsettled, theirs] = await Promise.all([
      create(AUTHORIZE),
      create(AUTHORIZE),
      create(AUTHORIZE),
      create({ ...AUTHORIZE, transaction_type: 'sale' }),
      create(AUTHORIZE, other),
    ]);
    expect((await call('POST', `/api/transaction/${String(captured?.id)}/capture`, { key: shop.secretKey })).status).toBe(200);
    const unknown = `${String(auth?.id).slice(0, -4)}zzzz`;
    const rows = await run(
      csv(OPS_HEADER, [
        ['capture', String(captured?.id), ''],
        ['capture', String(auth?.id), '1001'],
        ['capture', String(theirs?.id), ''],
        ['void', unknown, ''],
        ['void', String(auth2?.id), '500'],
        ['refund', String(unsettled?.id), ''],
        ['capture', '', ''],
      ]),
    );
    expect(rows.map((row) => row.response)).toEqual(['error', 'error', 'error', 'error', 'error', 'error', 'error']);
    expect(rows[0]?.processor_response_text).toContain('capture is allowed only while authorized');
    expect(rows[0]).toMatchObject({ type: 'capture', referenced_transaction_id: String(captured?.id), status: 'failed' });
    expect(rows[1]?.processor_response_text).toContain('at most 1000');
    expect(rows[2]?.processor_response_text).toBe('transaction_id: no transaction of this merchant has this id');
    expect(rows[2]?.referenced_transaction_id).toBe('');
    expect(rows[3]?.processor_response_text).toBe('transaction_id: no transaction of this merchant has this id');
    expect(rows[4]?.processor_response_text).toContain('amount: must be empty for a void');
    expect(rows[5]?.processor_response_text).toContain('refund');
    expect(rows[6]?.processor_response_text).toBe('transaction_id: is required for a capture row');
    // Nothing changed: the authorization is still whole, the other merchant's untouched.
    expect(await get(String(auth?.id))).toMatchObject({ status: 'authorized', amount_captured: 0 });
    expect(await get(String(auth2?.id))).toMatchObject({ status: 'authorized' });
    expect(await get(String(theirs?.id), other)).toMatchObject({ status: 'authorized' });
    expect(await sandboxCalls(other, `${String(theirs?.id)}:`)).toEqual([]);
  });

  it('refuses a refund over the amount left after an earlier refund', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const sale = await create({ ...AUTHORIZE, transaction_type: 'sale' });
    await settleNow();
    expect((await call('POST', `/api/transaction/${String(sale.id)}/refund`, { key: shop.secretKey, body: { amount: 800 } })).status).toBe(201);
    const rows = await run(csv(OPS_HEADER, [['refund', String(sale.id), '300']]));
    expect(rows[0]).toMatchObject({ response: 'error', type: 'refund', referenced_transaction_id: String(sale.id) });
    expect(rows[0]?.processor_response_text).toContain('200');
    expect(await get(String(sale.id))).toMatchObject({ amount_refunded: 800 });
  });
});

describe('one authorization, a capture row and an API capture at once', () => {
  it('one wins; the processor is asked once', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const auth = await create(AUTHORIZE);
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, [['capture', String(auth.id), '']]));
    await markQueuedWithoutSending(id);
    const [api, delivery] = await Promise.all([call('POST', `/api/transaction/${String(auth.id)}/capture`, { key: shop.secretKey }), deliver('binbatch-chunks', messages)]);
    // The row lost the race for the claim: its chunk is tried again, and then meets a captured transaction.
    if (delivery.retryMessages.length > 0) expect((await deliver('binbatch-chunks', messages, 2)).retryMessages).toEqual([]);
    const record = await status(shop.secretKey, id);
    expect(record.status).toBe('completed');
    const rows = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
    const rowWon = rows[0]?.response === 'approved';
    expect(api.status).toBe(rowWon ? 409 : 200);
    if (!rowWon) expect(rows[0]?.processor_response_text).toContain('capture is allowed only while authorized');
    expect((await sandboxCalls(shop, `${String(auth.id)}:capture`)).filter((c) => c.type === 'capture')).toEqual([{ type: 'capture', chargeCalls: 1 }]);
    expect(await get(String(auth.id))).toMatchObject({ status: 'pending_settlement', amount_captured: 1000 });
  });
});

describe('rows naming rows of the same file', () => {
  it('captures an authorization made earlier in the same file, voids a sale of it, and refuses a line that made none', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const header = [...CARD_HEADER, 'transaction_id'];
    const rows = await run(
      csv(header, [
        ['authorize', '1200', VISA, '12/30', 'ordA', ''],
        ['sale', '1300', VISA, '12/30', 'ordB', ''],
        ['capture', '700', '', '', '', 'line:2'],
        ['void', '', '', '', '', 'line:3'],
        ['sale', 'abc', VISA, '12/30', 'ordC', ''],
        ['capture', '', '', '', '', 'line:6'],
        ['capture', '', '', '', '', 'line:9'],
      ]),
    );
    const auth = rows[0];
    expect(auth).toMatchObject({ type: 'authorize', response: 'approved' });
    expect(rows[2]).toMatchObject({ id: auth?.id, status: 'pending_settlement', amount_captured: '700', response: 'approved' });
    expect(rows[3]).toMatchObject({ id: rows[1]?.id, status: 'voided' });
    expect(rows[5]?.processor_response_text).toMatch(/^transaction_id: line:6 made no transaction: its row was refused/);
    expect(rows[6]?.processor_response_text).toContain('must name an earlier data row');
    expect(await get(String(auth?.id))).toMatchObject({ status: 'pending_settlement', amount_captured: 700 });
  });

  it('acts the same whichever chunk runs first: a later chunk runs the line it names itself, once', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    // Chunk 0: 500 sales with the authorization on line 400; chunk 1 captures line:400.
    const header = [...CARD_HEADER, 'transaction_id'];
    const first = Array.from({ length: 500 }, (_, i) =>
      i === 398 ? ['authorize', '1500', VISA, '12/30', 'ordauth', ''] : ['sale', String(1000 + i), VISA, '12/30', `o${i}`, ''],
    );
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(header, [...first, ['capture', '', '', '', '', 'line:400']]));
    await markQueuedWithoutSending(id);
    expect(messages).toHaveLength(2);
    // The later chunk first: it runs line 400 itself, then captures it.
    expect((await deliver('binbatch-chunks', [messages[1]])).retryMessages).toEqual([]);
    expect((await deliver('binbatch-chunks', [messages[0]])).retryMessages).toEqual([]);
    await waitForStatus(shop.secretKey, id, 'completed');
    const rows = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
    expect(rows).toHaveLength(501);
    expect(rows[398]).toMatchObject({ type: 'authorize', idempotency_key: `${id}:400` });
    expect(rows[500]).toMatchObject({ id: rows[398]?.id, status: 'pending_settlement', amount_captured: '1500', response: 'approved' });
    // The authorization was charged once and captured once, whichever chunk ran it.
    expect(await sandboxCalls(shop, `${id}:400`)).toEqual([{ type: 'authorize', chargeCalls: 1 }]);
    expect(await sandboxCalls(shop, `${String(rows[398]?.id)}:capture`)).toEqual([{ type: 'capture', chargeCalls: 1 }]);
  });

  it('refuses a file that names one transaction in two rows (400 naming both lines), stores nothing', async () => {
    const response = await call('POST', '/api/filebatch?file_name=twice.csv', {
      key: shop.secretKey,
      body: csv(OPS_HEADER, [['capture', 'txn_abc', ''], ['void', 'txn_def', ''], ['refund', 'txn_abc', '5']]),
      headers: { 'Content-Type': 'text/csv' },
    });
    expect(response.status).toBe(400);
    expect((await response.json<Envelope>()).msg).toBe('line 4: transaction_id txn_abc is named again (line 2 names it); a file may act on a transaction once');
  });

  it('is refused whole when one chunk\'s rows name more days or files than a queue delivery may call (a sorted file is accepted)', async () => {
    // Ids of 17 API days (unknown transactions: the check is on where they would live, before any lookup).
    const dayId = (d: number, n = 0) => `txn_a202611${String(d + 1).padStart(2, '0')}${n.toString(32).padStart(20, '0')}`;
    const scattered = Array.from({ length: 17 }, (_, d) => ['void', dayId(d), '']);
    const refused = await call('POST', '/api/filebatch?file_name=spread.csv', { key: shop.secretKey, body: csv(OPS_HEADER, scattered), headers: { 'Content-Type': 'text/csv' } });
    expect(refused.status).toBe(400);
    expect((await refused.json<Envelope>()).msg).toMatch(/^line 18: the lifecycle rows of data rows 1 to 500 name transactions of more than 16 days or files; sort the file by transaction_id/);
    // The same 17 days, 16 in the first chunk and the 17th in the next one: accepted (rows of unknown ids then fail one by one).
    const filler = Array.from({ length: 484 }, (_, i) => ['void', dayId(i % 16, i + 1), '']);
    const sorted = csv(OPS_HEADER, [...scattered.slice(0, 16), ...filler, scattered[16] ?? []]);
    const accepted = await call('POST', '/api/filebatch?file_name=sorted.csv', { key: shop.secretKey, body: sorted, headers: { 'Content-Type': 'text/csv' } });
    expect((await accepted.json<Envelope>()).msg).toBe('success');
    expect(accepted.status).toBe(200);
  });
});

describe('a redelivered chunk of lifecycle rows', () => {
  it('gets each operation\'s first answer: the processor is asked once per row, the row\'s line is the same', { timeout: QUEUE_TEST_TIMEOUT }, async () => {
    const auth = await create(AUTHORIZE);
    // Two chunks, and only the first delivered (twice): the batch stays running, its file kept.
    const filler = Array.from({ length: 500 }, () => ['capture', '', '']);
    const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(OPS_HEADER, [['capture', String(auth.id), '400'], ...filler]));
    await markQueuedWithoutSending(id);
    expect((await deliver('binbatch-chunks', [messages[0]])).retryMessages).toEqual([]);
    const first = await (await env.FILES.get(resultPartKey(id, 0)))?.text();
    expect((await deliver('binbatch-chunks', [messages[0]], 2)).retryMessages).toEqual([]);
    const again = await (await env.FILES.get(resultPartKey(id, 0)))?.text();
    // The approved row's line is the first answer again (a refused row's line carries the time it was refused).
    expect(again?.split('\n')[0]).toBe(first?.split('\n')[0]);
    expect(parseResult(`"h"\n${again ?? ''}`).rows).toHaveLength(500);
    expect(await sandboxCalls(shop, `${String(auth.id)}:capture:${id}:2`)).toEqual([{ type: 'capture', chargeCalls: 1 }]);
    expect(await get(String(auth.id))).toMatchObject({ amount_captured: 400 });
  });
});
