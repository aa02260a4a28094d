/**
 * Captures, voids and refunds racing settlement runs (issue 30, item 1; docs/transactions.md,
 * "Settlement and operations"): a transaction is never both voided and settled, never refunded past
 * what settled, never in a settlement batch after its void was answered 200, and a settlement batch
 * lists exactly what its transactions say settled in it.
 *
 * Two kinds of test: deterministic ones, where the processor's answer is held (a spy on the sandbox
 * processor waits on a gate) so the settlement run happens while the operation is claimed; and
 * races, the lifecycle call and "settle now" sent together with Promise.all, a hundred times per
 * operation, API transactions and batch rows, sales, authorizations and credits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';
import { QUEUE_TEST_TIMEOUT, csv, status, uploadOk, waitForStatus } from '../helpers/batch';
import { SandboxProcessor } from '../../src/services/transactions/processors/sandbox';
import { batchTransactionId } from '../../src/services/transactions/ledger';

type TxRecord = Record<string, string | number | boolean | null>;
type Kind = 'capture' | 'void' | 'refund';

const VISA = '4111111111111111';
const RACE_TIMEOUT = 120_000;

afterEach(() => {
  vi.restoreAllMocks();
});

async function create(merchant: TestMerchant, type: 'sale' | 'authorize' | 'credit', amount = 1000): Promise<string> {
  const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: { transaction_type: type, cc_number: VISA, cc_expiration: '12/30', amount } });
  expect(response.status).toBe(201);
  return String((await response.json<Envelope<TxRecord>>()).data.id);
}

function operate(merchant: TestMerchant, id: string, kind: Kind, body?: unknown): Promise<Response> {
  return call('POST', `/api/transaction/${id}/${kind}`, { key: merchant.secretKey, body });
}

async function get(merchant: TestMerchant, id: string): Promise<TxRecord> {
  const response = await call('GET', `/api/transaction/${id}`, { key: merchant.secretKey });
  expect(response.status).toBe(200);
  return (await response.json<Envelope<TxRecord>>()).data;
}

async function settleNow(merchant: TestMerchant): Promise<{ id: string; amount_captured: number; amount_credit: number; num_transactions: number }[]> {
  const response = await admin('POST', `/admin/merchants/${merchant.id}/settle`);
  expect(response.status).toBe(200);
  return (await response.json<Envelope<{ id: string; amount_captured: number; amount_credit: number; num_transactions: number }[]>>()).data;
}

/** Every settlement batch of the merchant with every transaction it lists. */
async function batches(merchant: TestMerchant): Promise<Map<string, { total: { captured: number; credit: number; num: number }; entries: { id: string; type: string; amount: number }[] }>> {
  const found = await call('POST', '/api/settlement/batch/search', { key: merchant.secretKey, body: { limit: 100 } });
  expect(found.status).toBe(200);
  const results = (await found.json<{ data: { results: { id: string; amount_captured: number; amount_credit: number; num_transactions: number }[] } }>()).data.results;
  const all = new Map<string, { total: { captured: number; credit: number; num: number }; entries: { id: string; type: string; amount: number }[] }>();
  for (const batch of results) {
    const entries: { id: string; type: string; amount: number }[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await call('GET', `/api/settlement/batch/${batch.id}?limit=1000&offset=${offset}`, { key: merchant.secretKey });
      const listed = (await page.json<Envelope<{ transactions: { id: string; type: string; amount: number }[] }>>()).data.transactions;
      entries.push(...listed);
      if (listed.length < 1000) break;
    }
    all.set(batch.id, { total: { captured: batch.amount_captured, credit: batch.amount_credit, num: batch.num_transactions }, entries });
  }
  return all;
}

/**
 * What must never be, counted over the merchant's transactions `ids` (and the refunds they made):
 * voided yet settled; listed in a batch after a void answered 200; refunded past what settled;
 * settled but not listed in the batch it names (or listed elsewhere, or twice, or for another
 * amount); a batch whose totals are not the sums of what it lists.
 */
async function violations(merchant: TestMerchant, ids: readonly string[], voided200: ReadonlySet<string>) {
  const all = await batches(merchant);
  const listed = new Map<string, { batch: string; amount: number }[]>();
  const count = { voidedAndSettled: 0, listedAfterVoid200: 0, refundedPastSettled: 0, settledNotListedOnce: 0, listedNotSettled: 0, batchTotalsWrong: 0 };
  for (const [batchId, batch] of all) {
    let captured = 0;
    let credit = 0;
    for (const entry of batch.entries) {
      listed.set(entry.id, [...(listed.get(entry.id) ?? []), { batch: batchId, amount: entry.amount }]);
      if (entry.type === 'refund' || entry.type === 'credit') credit += entry.amount;
      else captured += entry.amount;
    }
    if (captured !== batch.total.captured || credit !== batch.total.credit || batch.entries.length !== batch.total.num) count.batchTotalsWrong++;
  }
  const records: TxRecord[] = [];
  for (const id of ids) records.push(await get(merchant, id));
  // The refunds they made: their ids are the original's with x1, x2, ...
  for (const record of [...records]) {
    for (let n = 1; Number(record.amount_refunded) > 0 && n <= 20; n++) {
      const refund = await call('GET', `/api/transaction/txn_r${String(record.id).slice(4)}x${n}`, { key: merchant.secretKey });
      if (refund.status !== 200) break;
      records.push((await refund.json<Envelope<TxRecord>>()).data);
    }
  }
  for (const record of records) {
    const id = String(record.id);
    const places = listed.get(id) ?? [];
    const settled = record.settlement_batch_id !== null || Number(record.amount_settled) > 0 || record.settled_at !== null;
    if (record.status === 'voided' && (settled || places.length > 0)) count.voidedAndSettled++;
    if (voided200.has(id) && places.length > 0) count.listedAfterVoid200++;
    if (Number(record.amount_refunded) > Number(record.amount_settled)) count.refundedPastSettled++;
    if (settled && (places.length !== 1 || places[0]?.batch !== record.settlement_batch_id || places[0]?.amount !== Number(record.amount_settled))) count.settledNotListedOnce++;
    if (!settled && places.length > 0) count.listedNotSettled++;
  }
  return count;
}

/** The violations of every merchant, added up. */
async function allViolations(shops: readonly TestMerchant[], ids: ReadonlyMap<string, string[]>, voided200: ReadonlySet<string>) {
  const total = { ...NONE };
  for (const shop of shops) {
    const found = await violations(shop, ids.get(shop.id) ?? [], voided200);
    for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += found[key];
  }
  return total;
}

const NONE = { voidedAndSettled: 0, listedAfterVoid200: 0, refundedPastSettled: 0, settledNotListedOnce: 0, listedNotSettled: 0, batchTotalsWrong: 0 };

/**
 * Holds the sandbox's answer to every `kind` until released: the operation stays claimed meanwhile.
 * Both sides wait on flags they check every few milliseconds, not on promises the other resolves:
 * workerd does not wake a request for a promise resolved from another request's context (the test
 * is one, the held operation's fetch another).
 */
function holdProcessor(kind: Kind): { entered: (answer: Promise<Response>) => Promise<void>; release: () => void } {
  const original = SandboxProcessor.prototype[kind];
  let released = false;
  let reached = false;
  vi.spyOn(SandboxProcessor.prototype, kind).mockImplementation(async function (this: SandboxProcessor, operation) {
    reached = true;
    while (!released) await new Promise((resolve) => setTimeout(resolve, 2));
    return original.call(this, operation);
  });
  let answered: number | null = null;
  const entered = async (answer: Promise<Response>) => {
    void answer.then((r) => (answered = r.status));
    while (!reached) {
      // The operation answered without reaching its processor: a failure worth showing.
      if (answered !== null) throw new Error(`answered ${answered} before reaching its processor`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  return { entered, release: () => (released = true) };
}

/** A batch file of `types` rows (amount 1000 + i), processed; answers the rows' transaction ids in order. */
async function batchRows(merchant: TestMerchant, types: readonly ('sale' | 'authorize' | 'credit')[], amount = (i: number) => 1000 + i): Promise<string[]> {
  const rows = types.map((type, i) => [type, String(amount(i)), VISA, '12/30', `r${i + 1}`]);
  const id = await uploadOk(merchant.secretKey, csv(['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'order_id'], rows));
  await waitForStatus(merchant.secretKey, id, 'completed');
  const createdAt = (await status(merchant.secretKey, id)).created_at;
  // Data rows are lines 2, 3, ... of the file (the header is line 1).
  return types.map((_, i) => batchTransactionId(id, createdAt, i + 2));
}

describe('an operation held at its processor while a settlement run goes by (deterministic)', () => {
  for (const type of ['sale', 'credit', 'captured authorization'] as const) {
    it(`API ${type}: the run leaves it out; the void answers 200 and it is voided, in no batch; the next run settles nothing of it`, async () => {
      const shop = await createMerchant({ name: `Held Void ${type}` });
      const id = await create(shop, type === 'credit' ? 'credit' : type === 'sale' ? 'sale' : 'authorize');
      if (type === 'captured authorization') expect((await operate(shop, id, 'capture')).status).toBe(200);
      const other = await create(shop, 'sale', 1234);
      const hold = holdProcessor('void');
      const voiding = operate(shop, id, 'void');
      await hold.entered(voiding);
      // The run settles the other sale and leaves the one whose void is with the processor.
      const run = await settleNow(shop);
      expect(run).toMatchObject([{ num_transactions: 1, amount_captured: 1234 }]);
      expect(await get(shop, id)).toMatchObject({ status: 'pending_settlement', settlement_batch_id: null, amount_settled: 0 });
      hold.release();
      const voided = await voiding;
      expect(voided.status).toBe(200);
      expect((await voided.json<Envelope<TxRecord>>()).data).toMatchObject({ status: 'voided', settlement_batch_id: null, amount_settled: 0, settled_at: null });
      expect(await settleNow(shop)).toEqual([]);
      expect(await violations(shop, [id, other], new Set([id]))).toEqual(NONE);
    });
  }

  it('a batch page: the run settles the other rows of the page now, not the one whose void is held; the void then answers 200', async () => {
    const shop = await createMerchant({ name: 'Held Void Page' });
    const ids = await batchRows(shop, Array.from({ length: 20 }, (_, i) => (i % 4 === 3 ? 'credit' : 'sale')));
    const target = ids[6] ?? '';
    const hold = holdProcessor('void');
    const voiding = operate(shop, target, 'void');
    await hold.entered(voiding);
    const run = await settleNow(shop);
    expect(run.reduce((n, b) => n + b.num_transactions, 0)).toBe(19);
    for (const id of ids) expect((await get(shop, id)).status).toBe(id === target ? 'pending_settlement' : 'settled');
    hold.release();
    expect((await voiding).status).toBe(200);
    expect(await get(shop, target)).toMatchObject({ status: 'voided', settlement_batch_id: null, amount_settled: 0 });
    expect(await settleNow(shop)).toEqual([]);
    expect(await violations(shop, ids, new Set([target]))).toEqual(NONE);
  }, QUEUE_TEST_TIMEOUT);

  it('a batch page: a held void the processor declines (402) leaves the row pending; the next run settles it', async () => {
    const shop = await createMerchant({ name: 'Held Declined Void' });
    // The sandbox declines a void of 303.
    const ids = await batchRows(shop, ['sale', 'sale', 'sale'], (i) => (i === 1 ? 303 : 1000 + i));
    const target = ids[1] ?? '';
    const hold = holdProcessor('void');
    const voiding = operate(shop, target, 'void');
    await hold.entered(voiding);
    expect((await settleNow(shop)).reduce((n, b) => n + b.num_transactions, 0)).toBe(2);
    hold.release();
    expect((await voiding).status).toBe(402);
    expect(await get(shop, target)).toMatchObject({ status: 'pending_settlement', settlement_batch_id: null });
    // The same day's batch, added to: the two rows of the first run and this one.
    expect(await settleNow(shop)).toMatchObject([{ num_transactions: 3, amount_captured: 1000 + 303 + 1002 }]);
    expect(await get(shop, target)).toMatchObject({ status: 'settled', amount_settled: 303 });
    expect(await violations(shop, ids, new Set())).toEqual(NONE);
  }, QUEUE_TEST_TIMEOUT);

  it('a batch authorization captured then voided while held: the run leaves it out', async () => {
    const shop = await createMerchant({ name: 'Held Void Batch Capture' });
    const ids = await batchRows(shop, ['authorize', 'sale', 'authorize']);
    const target = ids[0] ?? '';
    expect((await operate(shop, target, 'capture')).status).toBe(200);
    expect((await operate(shop, ids[2] ?? '', 'capture', { amount: 500 })).status).toBe(200);
    const hold = holdProcessor('void');
    const voiding = operate(shop, target, 'void');
    await hold.entered(voiding);
    expect(await settleNow(shop)).toMatchObject([{ num_transactions: 2, amount_captured: 1001 + 500 }]);
    hold.release();
    expect((await voiding).status).toBe(200);
    expect(await violations(shop, ids, new Set([target]))).toEqual(NONE);
  }, QUEUE_TEST_TIMEOUT);

  it('a capture held while a run goes by: captured after it, settled by the next run', async () => {
    const shop = await createMerchant({ name: 'Held Capture' });
    const id = await create(shop, 'authorize');
    const hold = holdProcessor('capture');
    const capturing = operate(shop, id, 'capture', { amount: 700 });
    await hold.entered(capturing);
    expect(await settleNow(shop)).toEqual([]);
    hold.release();
    expect((await capturing).status).toBe(200);
    expect(await settleNow(shop)).toMatchObject([{ num_transactions: 1, amount_captured: 700 }]);
    expect(await violations(shop, [id], new Set())).toEqual(NONE);
  });

  it('a refund held while a run goes by: the refund settles as a credit in the next run, never past what settled', async () => {
    const shop = await createMerchant({ name: 'Held Refund' });
    const id = await create(shop, 'sale');
    await settleNow(shop);
    const hold = holdProcessor('refund');
    const refunding = operate(shop, id, 'refund', { amount: 400 });
    await hold.entered(refunding);
    expect(await settleNow(shop)).toEqual([]);
    hold.release();
    expect((await refunding).status).toBe(201);
    expect(await get(shop, id)).toMatchObject({ status: 'partially_refunded', amount_refunded: 400, amount_settled: 1000 });
    // The day's batch, added to: the sale of the first run and the refund, a credit.
    expect(await settleNow(shop)).toMatchObject([{ num_transactions: 2, amount_captured: 1000, amount_credit: 400 }]);
    expect(await violations(shop, [id], new Set())).toEqual(NONE);
  });
});

/** Runs `rounds` for each of `merchants` merchants at once (each merchant's rounds in turn: one settlement object each). */
async function perMerchant(names: string, merchants: number, rounds: (shop: TestMerchant) => Promise<void>): Promise<TestMerchant[]> {
  const shops = await Promise.all(Array.from({ length: merchants }, (_, i) => createMerchant({ name: `${names} ${i}` })));
  await Promise.all(shops.map(rounds));
  return shops;
}

describe('operations and settlement runs sent together (Promise.all), 100 races each', () => {
  it('100 voids of API sales, credits and captured authorizations, each racing a settle now: none voided and settled', async () => {
    const ids = new Map<string, string[]>();
    const voided200 = new Set<string>();
    const answers: number[] = [];
    const shops = await perMerchant('Void Race API', 10, async (shop) => {
      const mine: string[] = [];
      for (let i = 0; i < 10; i++) {
        const type = i % 3 === 0 ? 'credit' : i % 3 === 1 ? 'sale' : 'authorize';
        const id = await create(shop, type);
        if (type === 'authorize') expect((await operate(shop, id, 'capture')).status).toBe(200);
        mine.push(id);
        const [voided] = await Promise.all([operate(shop, id, 'void'), settleNow(shop)]);
        answers.push(voided.status);
        if (voided.status === 200) voided200.add(id);
      }
      ids.set(shop.id, mine);
    });
    expect(answers.every((s) => s === 200 || s === 409)).toBe(true);
    expect(await allViolations(shops, ids, voided200)).toEqual(NONE);
  }, RACE_TIMEOUT);

  it('100 voids of batch rows (sales, credits, captured authorizations), a page of them racing one settle now: none voided and settled', async () => {
    const ids = new Map<string, string[]>();
    const voided200 = new Set<string>();
    const shops = await perMerchant('Void Race Batch', 5, async (shop) => {
      const mine: string[] = [];
      for (let round = 0; round < 2; round++) {
        const rows = await batchRows(shop, Array.from({ length: 10 }, (_, i) => (i % 3 === 0 ? 'credit' : i % 3 === 1 ? 'sale' : 'authorize')));
        for (const [i, id] of rows.entries()) if (i % 3 === 2) expect((await operate(shop, id, 'capture')).status).toBe(200);
        mine.push(...rows);
        const [voids] = await Promise.all([Promise.all(rows.map((id) => operate(shop, id, 'void'))), settleNow(shop)]);
        for (const [i, response] of voids.entries()) {
          expect([200, 409]).toContain(response.status);
          if (response.status === 200) voided200.add(rows[i] ?? '');
        }
      }
      ids.set(shop.id, mine);
    });
    expect(await allViolations(shops, ids, voided200)).toEqual(NONE);
  }, RACE_TIMEOUT);

  it('100 captures of authorizations (API and batch rows) racing settle now: each captured once, settled at most once', async () => {
    const ids = new Map<string, string[]>();
    const shops = await perMerchant('Capture Race', 5, async (shop) => {
      const mine: string[] = [];
      for (let i = 0; i < 10; i++) {
        const id = await create(shop, 'authorize');
        mine.push(id);
        const [captured] = await Promise.all([operate(shop, id, 'capture', { amount: 600 + i }), settleNow(shop)]);
        expect(captured.status).toBe(200);
      }
      const rows = await batchRows(shop, Array.from({ length: 10 }, () => 'authorize'));
      mine.push(...rows);
      const [captures] = await Promise.all([Promise.all(rows.map((id) => operate(shop, id, 'capture'))), settleNow(shop)]);
      expect(captures.map((r) => r.status)).toEqual(rows.map(() => 200));
      await settleNow(shop);
      ids.set(shop.id, mine);
    });
    expect(await allViolations(shops, ids, new Set())).toEqual(NONE);
  }, RACE_TIMEOUT);

  it('100 refunds of settled sales and captures (API and batch rows) racing settle now: never past what settled, each refund in one batch', async () => {
    const ids = new Map<string, string[]>();
    const shops = await perMerchant('Refund Race', 5, async (shop) => {
      const mine: string[] = [];
      const api: string[] = [];
      for (let i = 0; i < 10; i++) api.push(await create(shop, i % 2 === 0 ? 'sale' : 'authorize'));
      for (const [i, id] of api.entries()) if (i % 2 === 1) expect((await operate(shop, id, 'capture')).status).toBe(200);
      const rows = await batchRows(shop, Array.from({ length: 10 }, () => 'sale'));
      mine.push(...api, ...rows);
      await settleNow(shop);
      // Two partial refunds of each, each racing a run: the second finds the first settled or not.
      for (const ids of [api, rows]) {
        for (let round = 0; round < 2; round++) {
          const [refunds] = await Promise.all([Promise.all(ids.map((id) => operate(shop, id, 'refund', { amount: 300 }))), settleNow(shop)]);
          expect(refunds.map((r) => r.status)).toEqual(ids.map(() => 201));
        }
      }
      await settleNow(shop);
      ids.set(shop.id, mine);
    });
    expect(await allViolations(shops, ids, new Set())).toEqual(NONE);
  }, RACE_TIMEOUT);
});
