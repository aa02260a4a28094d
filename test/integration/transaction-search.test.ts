/**
 * POST /api/transaction/search (issue 33): every FluidPay filter and operator (and binbatch's
 * batch_id, card_brand, last_four), judged against the ledger's own records (GET by id); the
 * default window; offset and cursor paging while new transactions arrive; another merchant's
 * index; and what a search refuses (a card number in a filter, FluidPay fields binbatch has not).
 */
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { searchTransactions } from '../../src/services/search/search';
import { processTransactions } from '../../src/services/recorded';
import { transactionSearchSchema } from '../../src/schemas/transaction-search';
import { admin, call, createMerchant, type Envelope, type TestMerchant } from '../helpers/api';

type Tx = { [field: string]: string | number | boolean | null } & { id: string; created_at: string };
type SearchAnswer = {
  status: string;
  msg: string;
  total_count: number;
  total_count_exact: boolean;
  data: Tx[];
  window: { start_date: string; end_date: string | null; defaulted: boolean };
  limit: number;
  offset: number;
  next_cursor: string | null;
};

const VISA = '4111111111111111';

async function create(merchant: TestMerchant, body: { [k: string]: unknown }, ip?: string): Promise<Tx> {
  const response = await call('POST', '/api/transaction', {
    key: merchant.secretKey,
    body: { ...(body.cc_number ? { cc_expiration: '12/30' } : {}), ...body },
    ...(ip ? { headers: { 'CF-Connecting-IP': ip } } : {}),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json<Envelope<Tx>>()).data;
}

async function operate(merchant: TestMerchant, id: string, kind: 'capture' | 'void' | 'refund', body: unknown = {}): Promise<Tx> {
  const response = await call('POST', `/api/transaction/${id}/${kind}`, { key: merchant.secretKey, body });
  expect(response.status, await response.clone().text()).toBe(kind === 'refund' ? 201 : 200);
  return (await response.json<Envelope<Tx>>()).data;
}

/** The record GET answers, without its email receipts (only GET reads them: docs/receipts.md). */
async function get(merchant: TestMerchant, id: string): Promise<Tx> {
  const response = await call('GET', `/api/transaction/${id}`, { key: merchant.secretKey });
  expect(response.status).toBe(200);
  const { receipts: _receipts, ...record } = (await response.json<Envelope<Tx>>()).data;
  return record;
}

async function search(merchant: TestMerchant, body: unknown): Promise<SearchAnswer> {
  const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body });
  const answer = await response.json<SearchAnswer>();
  if (response.status !== 200) throw new Error(`search answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

async function refused(merchant: TestMerchant, body: unknown): Promise<Envelope & { errors: { field: string; msg: string }[] }> {
  const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body });
  expect(response.status).toBe(400);
  return response.json();
}

const ids = (records: readonly Tx[]) => records.map((r) => r.id).sort();

/** Brands of the fixture's cards by their first digit (the fixture uses one card per brand). */
function brandOf(tx: Tx): string | null {
  if (tx.payment_type !== 'card') return null;
  return { '4': 'visa', '5': 'mastercard', '3': 'amex' }[String(tx.masked_account)[0] ?? ''] ?? null;
}

describe('every filter and operator, against the ledger', () => {
  let shop: TestMerchant;
  let records: Tx[];

  beforeAll(async () => {
    shop = await createMerchant({ name: 'Filter Shop' });
    const customer = await call('POST', '/api/vault/customer', {
      key: shop.secretKey,
      body: { id: 'cust1', payment_method: { card: { number: '4242424242424242', expiration: '1239' } } },
    });
    expect(customer.status).toBe(201);
    const a = await create(
      shop,
      {
        transaction_type: 'sale', cc_number: VISA, amount: 1000, tax_amount: 100, order_id: 'ORDA', po_number: 'POA',
        billing_first_name: 'Ann', billing_last_name: 'Lee', billing_company: 'Acme', billing_address_line_1: '1 Main St',
        billing_address_line_2: 'Apt 2', billing_city: 'Albany', billing_state: 'NY', billing_postal_code: '12207', billing_country: 'US',
        billing_email: 'ann@example.com', billing_phone: '5550001', billing_fax: '5550002',
        shipping_first_name: 'Sam', shipping_last_name: 'Ray', shipping_company: 'ShipCo', shipping_address_line_1: '9 Dock Rd',
        shipping_address_line_2: 'Bay 4', shipping_city: 'Boston', shipping_state: 'MA', shipping_postal_code: '02101', shipping_country: 'US',
        shipping_email: 'sam@example.com', shipping_phone: '5550003', shipping_fax: '5550004',
      },
      '203.0.113.5',
    );
    const b = await create(shop, { transaction_type: 'authorize', cc_number: '5555555555554444', amount: 2500, order_id: 'ORDB', billing_first_name: 'Bob' }, '203.0.113.6');
    await create(shop, { transaction_type: 'credit', cc_number: '378282246310005', amount: 350, po_number: 'POC' });
    await create(shop, { transaction_type: 'sale', cc_number: '4000000000000002', amount: 500, order_id: 'ORDD' });
    await create(shop, { transaction_type: 'sale', ach_account_number: '123456789', ach_routing_number: '021000021', ach_account_type: 'checking', ach_sec_code: 'WEB', amount: 2600 });
    await create(shop, { transaction_type: 'sale', customer_id: 'cust1', amount: 1200 });
    const g = await create(shop, { transaction_type: 'authorize', cc_number: VISA, amount: 700 });
    const h = await create(shop, { transaction_type: 'sale', cc_number: VISA, amount: 900 });
    await operate(shop, b.id, 'capture', { amount: 2000 });
    await operate(shop, h.id, 'void');
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const refund = await operate(shop, a.id, 'refund', { amount: 400 });
    const all = await search(shop, { limit: 100 });
    records = await Promise.all(all.data.map((r) => get(shop, r.id)));
    // The fixture covers every status a transaction can have now.
    expect(new Set(records.map((r) => r.status))).toEqual(new Set(['partially_refunded', 'settled', 'declined', 'authorized', 'voided', 'pending_settlement']));
    expect(ids(records)).toContain(refund.id);
    expect(ids(records)).toContain(g.id);
  });

  it('answers the records the ledger answers, newest first, with FluidPay\'s envelope', async () => {
    const all = await search(shop, { limit: 100 });
    expect(all).toMatchObject({ status: 'success', msg: 'success', total_count: 9, total_count_exact: true, limit: 100, offset: 0, next_cursor: null });
    // The record GET answers, FluidPay's fields included; only GET adds its email receipts (docs/receipts.md).
    for (const record of all.data) {
      const { receipts: _receipts, ...fromGet } = records.find((r) => r.id === record.id) as Tx;
      expect(record).toEqual(fromGet);
    }
    const order = all.data.map((r) => [r.created_at, r.id]);
    expect(order).toEqual([...order].sort((x, y) => (y[0]! > x[0]! ? 1 : y[0]! < x[0]! ? -1 : y[1]! > x[1]! ? 1 : -1)));
  });

  it('string filters: = and != on every field, FluidPay\'s and binbatch\'s', async () => {
    const a = records.find((r) => r.order_id === 'ORDA' && r.type === 'sale') as Tx;
    const cases: [string, string, (tx: Tx) => unknown][] = [
      ['transaction_id', a.id, (tx) => tx.id],
      ['type', 'sale', (tx) => tx.type],
      ['type', 'refund', (tx) => tx.type],
      ['type', 'authorize', (tx) => tx.type],
      ['status', 'settled', (tx) => tx.status],
      ['status', 'authorized', (tx) => tx.status],
      ['status', 'voided', (tx) => tx.status],
      ['status', 'declined', (tx) => tx.status],
      ['status', 'partially_refunded', (tx) => tx.status],
      ['status', 'pending_settlement', (tx) => tx.status],
      ['ip_address', '203.0.113.5', (tx) => tx.ip_address],
      ['order_id', 'ORDA', (tx) => tx.order_id],
      ['po_number', 'POC', (tx) => tx.po_number],
      ['payment_method', 'customer', (tx) => tx.payment_method],
      ['payment_type', 'ach', (tx) => tx.payment_type],
      ['processor_id', String(a.processor_id), (tx) => tx.processor_id],
      ['customer_id', 'cust1', (tx) => tx.customer_id],
      ['settlement_batch_id', String(a.settlement_batch_id), (tx) => tx.settlement_batch_id],
      ['card_brand', 'mastercard', brandOf],
      ['card_brand', 'visa', brandOf],
      ['last_four', '4444', (tx) => (typeof tx.masked_account === 'string' ? tx.masked_account.slice(-4) : null)],
      ['batch_id', 'bat_00000000000000000000', () => null],
    ];
    for (const kind of ['billing', 'shipping'] as const) {
      for (const field of ['first_name', 'last_name', 'company', 'address_line_1', 'address_line_2', 'city', 'state', 'postal_code', 'country', 'email', 'phone', 'fax']) {
        cases.push([`${kind}_address.${field}`, String(a[`${kind}_${field}`]), (tx) => tx[`${kind}_${field}`] ?? null]);
      }
    }
    const wrong: string[] = [];
    for (const [path, value, read] of cases) {
      for (const operator of ['=', '!='] as const) {
        const [outer, inner] = path.split('.');
        const body = inner ? { [outer!]: { [inner]: { operator, value } }, limit: 100 } : { [outer!]: { operator, value }, limit: 100 };
        const answer = await search(shop, body);
        const expected = records.filter((tx) => (operator === '=' ? read(tx) === value : read(tx) !== value));
        if (JSON.stringify(ids(answer.data)) !== JSON.stringify(ids(expected)) || answer.total_count !== expected.length) {
          wrong.push(`${path} ${operator} ${value}: got ${answer.total_count} ${ids(answer.data).join(',')}, expected ${ids(expected).join(',')}`);
        }
        if (operator === '=' && path !== 'batch_id') expect(expected.length, `${path} = ${value} matches something`).toBeGreaterThan(0);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('integer filters: =, !=, < and > on every amount', async () => {
    const wrong: string[] = [];
    for (const [field, value] of [['amount', 1000], ['amount_authorized', 2500], ['amount_captured', 2000], ['amount_settled', 1000], ['tax_amount', 100]] as const) {
      for (const operator of ['=', '!=', '<', '>'] as const) {
        const answer = await search(shop, { [field]: { operator, value }, limit: 100 });
        const expected = records.filter((tx) => {
          const n = Number(tx[field]);
          return operator === '=' ? n === value : operator === '!=' ? n !== value : operator === '<' ? n < value : n > value;
        });
        if (JSON.stringify(ids(answer.data)) !== JSON.stringify(ids(expected))) wrong.push(`${field} ${operator} ${value}: got ${ids(answer.data).join(',')}, expected ${ids(expected).join(',')}`);
        if (operator === '=') expect(expected.length, `${field} = ${value} matches something`).toBeGreaterThan(0);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('date filters: created_at, captured_at and settled_at ranges, end_date included to its millisecond or second', async () => {
    const sorted = [...records].sort((x, y) => (x.created_at < y.created_at ? -1 : 1));
    const [, second, third] = sorted as [Tx, Tx, Tx];
    const window = await search(shop, { created_at: { start_date: second.created_at, end_date: third.created_at }, limit: 100 });
    expect(window.window).toEqual({ start_date: second.created_at, end_date: new Date(Date.parse(third.created_at) + 1).toISOString(), defaulted: false });
    expect(ids(window.data)).toEqual(ids(records.filter((tx) => tx.created_at >= second.created_at && tx.created_at <= third.created_at)));
    // Without milliseconds, the end is included to the end of its second (FluidPay's Day() ends at 23:59:59).
    const day = second.created_at.slice(0, 10);
    const wholeDay = await search(shop, { created_at: { start_date: `${day}T00:00:00Z`, end_date: `${day}T23:59:59Z` }, limit: 100 });
    expect(ids(wholeDay.data)).toEqual(ids(records.filter((tx) => tx.created_at.startsWith(day))));
    for (const field of ['captured_at', 'settled_at'] as const) {
      const withIt = records.filter((tx) => tx[field] !== null).sort((x, y) => (String(x[field]) < String(y[field]) ? -1 : 1));
      const first = String(withIt[0]?.[field]);
      const answer = await search(shop, { [field]: { start_date: first, end_date: first }, limit: 100 });
      expect(ids(answer.data), field).toEqual(ids(records.filter((tx) => tx[field] === first)));
      const open = await search(shop, { [field]: { start_date: first }, limit: 100 });
      expect(ids(open.data), `${field} from`).toEqual(ids(withIt));
    }
  });

  it('filters combine (AND)', async () => {
    const answer = await search(shop, { type: { operator: '=', value: 'sale' }, status: { operator: '=', value: 'settled' }, amount: { operator: '>', value: 1000 }, limit: 100 });
    expect(ids(answer.data)).toEqual(ids(records.filter((tx) => tx.type === 'sale' && tx.status === 'settled' && Number(tx.amount) > 1000)));
    expect(answer.data.length).toBe(2);
  });
});

function callerOf(merchant: TestMerchant): Caller {
  return { merchantId: merchant.id, merchantName: merchant.name, keyId: 'key_test', keyType: 'secret', enhancedBinLookup: false, surchargeRateBps: 0, maxCreditAmount: 100_000 };
}

async function saleAt(merchant: TestMerchant, at: string, orderId?: string): Promise<Tx> {
  const [outcome] = await processTransactions(
    env,
    callerOf(merchant),
    [{ input: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/30', amount: '1000', ...(orderId ? { order_id: orderId } : {}) }, idempotencyKey: crypto.randomUUID() }],
    { source: 'api', ipAddress: null },
    () => new Date(at),
  );
  if (!outcome?.ok) throw new Error(`sale failed: ${JSON.stringify(outcome)}`);
  return outcome.record as Tx;
}

async function searchAt(merchant: TestMerchant, body: unknown, at: string): Promise<SearchAnswer> {
  const outcome = await searchTransactions(env, merchant.id, transactionSearchSchema.parse(body), () => new Date(at));
  if (!outcome.ok) throw new Error(`${outcome.field}: ${outcome.message}`);
  return outcome.answer as unknown as SearchAnswer;
}

describe('the window', () => {
  it('without created_at: the last four months (FluidPay), and the answer says so', async () => {
    const shop = await createMerchant({ name: 'Window Shop' });
    const old = await saleAt(shop, '2027-01-10T12:00:00.000Z');
    const recent = await saleAt(shop, '2027-03-10T12:00:00.000Z');
    const answer = await searchAt(shop, {}, '2027-05-31T10:00:00.000Z');
    // 31 May less four months is 31 January.
    expect(answer.window).toEqual({ start_date: '2027-01-31T10:00:00.000Z', end_date: null, defaulted: true });
    expect(ids(answer.data)).toEqual([recent.id]);
    const both = await searchAt(shop, { created_at: { start_date: '2027-01-01T00:00:00Z' } }, '2027-05-31T10:00:00.000Z');
    expect(both.window).toEqual({ start_date: '2027-01-01T00:00:00.000Z', end_date: null, defaulted: false });
    expect(ids(both.data)).toEqual(ids([old, recent]));
    // Only an end: the four months before it.
    const before = await searchAt(shop, { created_at: { end_date: '2027-02-01T00:00:00Z' } }, '2027-05-31T10:00:00.000Z');
    expect(before.window).toEqual({ start_date: '2026-10-01T00:00:01.000Z', end_date: '2027-02-01T00:00:01.000Z', defaulted: false });
    expect(ids(before.data)).toEqual([old.id]);
    // An offset is converted to UTC.
    const offset = await searchAt(shop, { created_at: { start_date: '2027-03-10T13:00:00+02:00', end_date: '2027-03-10T14:00:00+02:00' } }, '2027-05-31T10:00:00.000Z');
    expect(ids(offset.data)).toEqual([recent.id]);
  });

  it('an authorization past its 7 days reads expired, found by status expired', async () => {
    const shop = await createMerchant({ name: 'Expired Shop' });
    const [outcome] = await processTransactions(
      env,
      callerOf(shop),
      [{ input: { transaction_type: 'authorize', cc_number: VISA, cc_expiration: '12/30', amount: '800' }, idempotencyKey: crypto.randomUUID() }],
      { source: 'api', ipAddress: null },
      () => new Date('2027-04-01T12:00:00.000Z'),
    );
    const id = outcome?.ok ? String(outcome.record.id) : '';
    expect((await searchAt(shop, { status: { operator: '=', value: 'authorized' } }, '2027-04-08T11:59:00.000Z')).data.map((r) => r.id)).toEqual([id]);
    expect((await searchAt(shop, { status: { operator: '=', value: 'expired' } }, '2027-04-08T12:00:01.000Z')).data.map((r) => r.id)).toEqual([id]);
    expect((await searchAt(shop, { status: { operator: '=', value: 'authorized' } }, '2027-04-08T12:00:01.000Z')).total_count).toBe(0);
  });
});

describe('paging', () => {
  it('offset pages, and a cursor that returns each transaction once while new ones arrive', async () => {
    const shop = await createMerchant({ name: 'Paging Shop' });
    const made: Tx[] = [];
    for (let i = 0; i < 7; i++) made.push(await create(shop, { transaction_type: 'sale', cc_number: VISA, amount: 1000 + i }));
    const newestFirst = [...made].reverse().map((r) => r.id);
    const offsetPage = await search(shop, { limit: 3, offset: 3 });
    expect(offsetPage.data.map((r) => r.id)).toEqual(newestFirst.slice(3, 6));
    expect(offsetPage.total_count).toBe(7);

    const seen: string[] = [];
    let page = await search(shop, { limit: 2 });
    expect(page.total_count).toBe(7);
    for (;;) {
      seen.push(...page.data.map((r) => r.id));
      // New transactions arrive between pages: the cursor's pages go on where they were.
      await create(shop, { transaction_type: 'sale', cc_number: VISA, amount: 2000 + seen.length });
      if (page.next_cursor === null) break;
      page = await search(shop, { limit: 2, cursor: page.next_cursor });
      expect(page.total_count).toBe(7);
    }
    expect(seen).toEqual(newestFirst);
    expect(new Set(seen).size).toBe(7);
  });

  it('a cursor continues only the search it came from; cursor and offset together are refused', async () => {
    const shop = await createMerchant({ name: 'Cursor Shop' });
    for (let i = 0; i < 3; i++) await create(shop, { transaction_type: 'sale', cc_number: VISA, amount: 1000 + i });
    const first = await search(shop, { limit: 1, type: { operator: '=', value: 'sale' } });
    expect(first.next_cursor).not.toBeNull();
    const other = await refused(shop, { limit: 1, type: { operator: '=', value: 'credit' }, cursor: first.next_cursor });
    expect(other.errors).toEqual([{ field: 'cursor', msg: 'was made for other filters: send the filters of the search it came from' }]);
    expect((await refused(shop, { cursor: 'not-a-cursor' })).errors[0]?.field).toBe('cursor');
    expect((await refused(shop, { cursor: first.next_cursor, offset: 2 })).errors).toEqual([{ field: 'cursor', msg: 'give cursor or offset, not both' }]);
  });
});

describe('merchants and refusals', () => {
  it("another merchant finds none of a merchant's transactions, not even by id", async () => {
    const mine = await createMerchant({ name: 'Mine' });
    const theirs = await createMerchant({ name: 'Theirs' });
    const tx = await create(mine, { transaction_type: 'sale', cc_number: VISA, amount: 1000, order_id: 'SHARED1' });
    expect((await search(theirs, {})).total_count).toBe(0);
    expect((await search(theirs, { transaction_id: { operator: '=', value: tx.id } })).total_count).toBe(0);
    expect((await search(theirs, { order_id: { operator: '=', value: 'SHARED1' } })).total_count).toBe(0);
    expect((await search(mine, { transaction_id: { operator: '=', value: tx.id } })).data.map((r) => r.id)).toEqual([tx.id]);
  });

  it('a card number in any filter is a 400 naming the field, in any spelling', async () => {
    const shop = await createMerchant({ name: 'Card Filter Shop' });
    for (const [body, field] of [
      [{ order_id: { operator: '=', value: VISA } }, 'order_id.value'],
      [{ billing_address: { first_name: { operator: '!=', value: '4111 1111 1111 1111' } } }, 'billing_address.first_name.value'],
      [{ customer_id: { operator: '=', value: '4111-1111-1111-1111' } }, 'customer_id.value'],
    ] as const) {
      const answer = await refused(shop, body);
      expect(answer.errors).toEqual([{ field, msg: 'must not contain a card number' }]);
      expect(JSON.stringify(answer)).not.toContain('1111');
    }
  });

  it("FluidPay's fields binbatch has not, malformed operators and values are 400s naming them", async () => {
    const shop = await createMerchant({ name: 'Refusal Shop' });
    expect((await refused(shop, { user_id: { operator: '=', value: 'u1' } })).errors[0]).toEqual({ field: 'user_id', msg: 'binbatch has no users: leave it out' });
    expect((await refused(shop, { billing_address: { address_id: { operator: '=', value: 'a1' } } })).errors[0]?.field).toBe('billing_address.address_id');
    expect((await refused(shop, { amount: { operator: '>=', value: 1 } })).errors[0]).toEqual({ field: 'amount.operator', msg: "must be '=', '!=', '<' or '>'" });
    expect((await refused(shop, { status: { operator: '=', value: 'paid' } })).errors[0]?.msg).toContain('must be one of pending_settlement');
    expect((await refused(shop, { created_at: { start_date: 'yesterday' } })).errors[0]?.field).toBe('created_at.start_date');
    expect((await refused(shop, { created_at: { start_date: '2027-01-02T00:00:00Z', end_date: '2027-01-01T00:00:00Z' } })).errors[0]?.field).toBe('created_at.start_date');
    expect((await refused(shop, { limit: 101 })).errors[0]).toEqual({ field: 'limit', msg: 'must be at most 100' });
    expect((await refused(shop, { last_four: { operator: '=', value: '12' } })).errors[0]).toEqual({ field: 'last_four.value', msg: 'must be 4 digits' });
    expect((await refused(shop, { amounts: { operator: '=', value: 1 } })).errors[0]).toEqual({ field: 'amounts', msg: 'unknown field; did you mean amount?' });
  });
});

describe("FluidPay's SDK (fluidpay-go TransactionSearchRequest)", () => {
  it('takes the bodies it sends, and answers what its doList decodes', async () => {
    const shop = await createMerchant({ name: 'FluidPay SDK Shop' });
    const made = await create(shop, { transaction_type: 'sale', cc_number: VISA, amount: 1000, billing_first_name: 'Ann', billing_postal_code: '10001' });
    const day = made.created_at.slice(0, 10);
    // Search(nil) sends {}; Amount: GreaterThan(0), Limit: 10; CreatedAt: Day(t) (00:00:00 to 23:59:59, no fraction);
    // DateRange(start, end) in RFC 3339; an AddressQuery; Offset.
    const bodies = [
      {},
      { amount: { operator: '>', value: 0 }, limit: 10 },
      { created_at: { start_date: `${day}T00:00:00Z`, end_date: `${day}T23:59:59Z` } },
      { billing_address: { first_name: { operator: '=', value: 'Ann' }, postal_code: { operator: '=', value: '10001' } }, limit: 100, offset: 0 },
      { status: { operator: '!=', value: 'declined' }, type: { operator: '=', value: 'sale' }, transaction_id: { operator: '=', value: made.id } },
    ];
    for (const body of bodies) {
      const response = await call('POST', '/api/transaction/search', { key: shop.secretKey, body });
      expect(response.status, JSON.stringify(body)).toBe(200);
      const answer = await response.json<{ status: string; msg: string; total_count: number; data: Tx[] }>();
      // The envelope doList reads: status "success", data an array of records, total_count.
      expect(answer.status).toBe('success');
      expect(answer.total_count, JSON.stringify(body)).toBe(1);
      expect(answer.data.map((r) => r.id)).toEqual([made.id]);
      // Go's time.Time parses RFC 3339: created_at always, captured_at and settled_at when not null.
      expect(answer.data[0]?.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(typeof answer.data[0]?.amount).toBe('number');
    }
    // An id in FluidPay's own format matches nothing (it cannot name a binbatch transaction): 200, none.
    const foreign = await search(shop, { transaction_id: { operator: '=', value: 'b7kgflt1tlv51er0fts0' } });
    expect(foreign.total_count).toBe(0);
    expect(foreign.data).toEqual([]);
  });
});
