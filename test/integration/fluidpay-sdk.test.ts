/**
 * FluidPay's Go SDK against the Worker (issue 34): each call the research file tried
 * (../shared/research/fluidpay-sdk.md, rows 1–22), sent in the SDK's exact shape and decoded into
 * its Go types as the SDK does (test/helpers/fluidpay-sdk.ts). Every call must work, with what the
 * SDK's user reads filled in (the README's tx.ResponseBody.Card.AuthCode, customer.DefaultCard(),
 * batches.Results, the webhook verifier). The flat API's own tests stay as they were.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { admin, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv } from '../helpers/bins';
import {
  BINLookup,
  DateRange,
  Day,
  Equal,
  ErrNotFound,
  GreaterThan,
  IntEqual,
  IntNotEqual,
  LessThan,
  NotEqual,
  SdkError,
  SettlementBatchSearchResult,
  Transaction,
  customerFrom,
  goDecode,
  many,
  newIdempotencyKey,
  one,
  parseWebhookRequest,
  sdkCall,
  searchBody,
  type Customer,
  type IntQuery,
  type TransactionSearchRequest,
} from '../helpers/fluidpay-sdk';
import { createEndpoint, receiver } from '../helpers/webhooks';

type Tx = {
  id: string; type: string; status: string; response: string; response_code: number; amount: number; base_amount: number;
  amount_authorized: number; amount_captured: number; amount_refunded: number; surcharge: number; service_fee: number;
  tax_amount: number; shipping_amount: number; order_id: string; po_number: string; ip_address: string; currency: string;
  payment_method: string; referenced_transaction_id: string; customer_id: string; idempotency_key: string;
  response_body: { card: Record<string, unknown> | null; ach: Record<string, unknown> | null };
  billing_address: Record<string, string>; shipping_address: Record<string, string>;
  created_at: Date; updated_at: Date; captured_at: Date | null;
};

let shop: TestMerchant;
beforeAll(async () => {
  await importCsv(['bin,card_brand,issuing_bank,card_type,card_level_generic,country', '411111,visa,FluidPay Test Bank,credit,classic,US'].join('\n'));
  shop = await createMerchant({ name: 'FluidPay Shop', surcharge_rate_bps: 300 });
});

/** The SDK's doOne[Transaction]. */
async function tx(method: string, path: string, body?: unknown): Promise<Tx & { correlationId: string }> {
  const answer = await sdkCall(shop.secretKey, method, path, body === undefined ? {} : { body });
  return { ...(goDecode(Transaction, one(answer.data)) as Tx), correlationId: answer.correlationId };
}

/** The SDK's doOne[Customer]. */
async function customer(method: string, path: string, options: { query?: Record<string, string>; body?: unknown } = {}): Promise<Customer> {
  return customerFrom(one((await sdkCall(shop.secretKey, method, path, options)).data));
}

const approved = (t: { response_code: number }) => t.response_code >= 100 && t.response_code < 200;

const CARD = { number: '4111111111111111', expiration_date: '12/30', cvc: '123' };

describe('FluidPay SDK: Transactions', () => {
  it('Sale as in the README: approved, with the auth code, AVS and correlation id the README reads', async () => {
    const sale = await tx('POST', 'transaction', { type: 'sale', amount: 1299, payment_method: { card: CARD }, idempotency_key: newIdempotencyKey() });
    expect(approved(sale)).toBe(true);
    expect(sale).toMatchObject({ type: 'sale', status: 'pending_settlement', amount: 1299, amount_captured: 1299, currency: 'usd', payment_method: 'card' });
    expect(sale.response_body.card).toMatchObject({ card_type: 'visa', first_six: '411111', last_four: '1111', masked_card: '411111******1111', expiration_date: '12/30' });
    expect(sale.response_body.card?.auth_code).toMatch(/.+/);
    expect(sale.response_body.card?.avs_response_code).toBeTypeOf('string');
    expect(sale.correlationId).toMatch(/.+/);
    expect(sale.updated_at.getTime()).toBeGreaterThan(0);
  });

  it('Sale as examples/sale sends it (order, description, billing address), then Void', async () => {
    const key = newIdempotencyKey();
    const body = {
      type: 'sale',
      amount: 1299,
      payment_method: { card: CARD },
      idempotency_key: key,
      order_id: 'order1001',
      description: 'fluidpay-go example',
      billing_address: { first_name: 'Jane', last_name: 'Doe', address_line_1: '123 Some St', city: 'Chicago', state: 'IL', postal_code: '60601', country: 'US' },
    };
    const sale = await tx('POST', 'transaction', body);
    expect(sale.billing_address).toMatchObject({ first_name: 'Jane', address_line_1: '123 Some St', state: 'IL', postal_code: '60601' });
    expect(sale).toMatchObject({ order_id: 'order1001', idempotency_key: key });
    // The same body again (a retry): the first answer, nothing charged twice.
    expect((await tx('POST', 'transaction', body)).id).toBe(sale.id);
    const voided = await sdkCall(shop.secretKey, 'POST', `transaction/${sale.id}/void`);
    expect(voided.correlationId).toMatch(/.+/);
    expect((await tx('GET', `transaction/${sale.id}`)).status).toBe('voided');
  });

  it('Authorize, Capture with amount, Capture(nil) and Capture with the Level 2 fields', async () => {
    const auth = await tx('POST', 'transaction', { type: 'authorize', amount: 5000, payment_method: { card: CARD } });
    expect(auth.status).toBe('authorized');
    expect((await tx('POST', `transaction/${auth.id}/capture`, { amount: 4500 })).amount_captured).toBe(4500);

    const whole = await tx('POST', 'transaction', { type: 'authorize', amount: 2000, payment_method: { card: CARD } });
    expect(await tx('POST', `transaction/${whole.id}/capture`, {})).toMatchObject({ status: 'pending_settlement', amount_captured: 2000 });

    const level2 = await tx('POST', 'transaction', { type: 'authorize', amount: 3000, payment_method: { card: CARD } });
    const captured = await tx('POST', `transaction/${level2.id}/capture`, { amount: 3000, tax_amount: 200, shipping_amount: 300, order_id: 'ord77', po_number: 'po77', ip_address: '4.2.2.2' });
    expect(captured).toMatchObject({ status: 'pending_settlement', tax_amount: 200, shipping_amount: 300, order_id: 'ord77', po_number: 'po77', ip_address: '4.2.2.2' });
    expect(await tx('GET', `transaction/${level2.id}`)).toMatchObject({ tax_amount: 200, order_id: 'ord77' });
  });

  it('Credit and Verify (a zero-amount verification, final)', async () => {
    const credit = await tx('POST', 'transaction', { type: 'credit', amount: 700, payment_method: { card: CARD } });
    expect(credit).toMatchObject({ type: 'credit', response: 'approved' });
    // Verify sends no amount: the SDK leaves a zero Amount out.
    const verified = await tx('POST', 'transaction', { type: 'verification', payment_method: { card: CARD } });
    expect(verified).toMatchObject({ type: 'verification', status: 'verified', amount: 0, amount_captured: 0 });
    expect(approved(verified)).toBe(true);
    await expect(tx('POST', `transaction/${verified.id}/capture`, {})).rejects.toMatchObject({ statusCode: 409 });
  });

  it('Refund (amount, nil, and with surcharge) of a settled sale', async () => {
    const sale = await tx('POST', 'transaction', { type: 'sale', amount: 2000, payment_method: { card: CARD } });
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const part = await tx('POST', `transaction/${sale.id}/refund`, { amount: 500 });
    expect(part).toMatchObject({ type: 'refund', amount: 500, referenced_transaction_id: sale.id });

    const surcharged = await tx('POST', 'transaction', {
      type: 'sale',
      base_amount: 1000,
      payment_method: { card: CARD },
      billing_address: { state: 'TX', country: 'US' },
    });
    expect(surcharged).toMatchObject({ amount: 1030, base_amount: 1000, surcharge: 30 });
    expect((await admin('POST', `/admin/merchants/${shop.id}/settle`)).status).toBe(200);
    const withSurcharge = await tx('POST', `transaction/${surcharged.id}/refund`, { amount: 515, surcharge: 15 });
    expect(withSurcharge).toMatchObject({ amount: 515, surcharge: 15, service_fee: 15 });
    expect(await tx('POST', `transaction/${sale.id}/refund`, {})).toMatchObject({ amount: 1500 });
    expect((await tx('GET', `transaction/${sale.id}`)).status).toBe('refunded');
  });

  it('Get: an id of FluidPay\'s form that binbatch never issued is IsNotFound', async () => {
    const err = await tx('GET', 'transaction/b7kgflt1tlv51er0fts0').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).isNotFound()).toBe(true);
    expect((err as SdkError).correlationId).toMatch(/.+/);
  });

  it('an unknown field is still a 400 naming it (IsBadRequest), and so is a FluidPay field binbatch does not process', async () => {
    const unknown = await tx('POST', 'transaction', { type: 'sale', amount: 100, payment_method: { card: CARD }, colour: 'red' }).catch((e: unknown) => e);
    expect((unknown as SdkError).isBadRequest()).toBe(true);
    expect((unknown as SdkError).msg).toContain('colour: unknown field');
    const terminal = await tx('POST', 'transaction', { type: 'sale', amount: 100, payment_method: { terminal: { id: 't1', print_receipt: 'no', signature_required: false } } }).catch((e: unknown) => e);
    expect((terminal as SdkError).msg).toContain('payment_method.terminal: not supported by binbatch: terminals');
    const badCard = await tx('POST', 'transaction', { type: 'sale', amount: 100, payment_method: { card: { number: '4111111111111112', expiration_date: '12/30' } } }).catch((e: unknown) => e);
    expect((badCard as SdkError).msg).toContain('payment_method.card.number: is not a valid card number');
  });

});

/**
 * Transactions.Search (issue 34, item 6): POST /api/transaction/search with every form the SDK's
 * TransactionSearchRequest can take (query.go's builders, DateRange and Day, the address queries,
 * Limit and Offset), decoded as doList[Transaction] decodes it. What each search must find is
 * computed from the records as the SDK reads them (GET, decoded): a field binbatch leaves null is
 * "" to the SDK, so `NotEqual("")` means "has one", as the SDK's README uses it.
 */
describe('FluidPay SDK: Transactions.Search', () => {
  type Found = Tx & Record<string, unknown>;
  let merchant: TestMerchant;
  let vaultedCustomer: string;
  const made: Record<'shipped' | 'taxed' | 'held' | 'verified' | 'credit' | 'vaulted' | 'refund', Found> = {} as never;
  /** Every record as it is now (GET, decoded), after the setup's settlement and refund. */
  let current: Found[];

  const create = async (body: unknown) => goDecode(Transaction, one((await sdkCall(merchant.secretKey, 'POST', 'transaction', { body })).data)) as Found;

  /** TransactionsService.Search: the body as encodeJSON writes it, the page as doList decodes it. */
  async function search(req: TransactionSearchRequest | null) {
    const answer = await sdkCall(merchant.secretKey, 'POST', 'transaction/search', { body: searchBody(req) });
    return { Data: many(Transaction, answer.data) as Found[], TotalCount: answer.totalCount, CorrelationID: answer.correlationId };
  }

  const sorted = (records: readonly { id: string }[]) => records.map((r) => r.id).sort();

  /** The search finds exactly the records `wanted` picks (and counts them), none other. */
  async function expectFinds(req: TransactionSearchRequest, wanted: (t: Found) => boolean, label: string) {
    const page = await search({ ...req, limit: 100 });
    const expected = current.filter(wanted);
    expect(sorted(page.Data), label).toEqual(sorted(expected));
    expect(page.TotalCount, label).toBe(expected.length);
    return expected.length;
  }

  beforeAll(async () => {
    merchant = await createMerchant({ name: 'Searching Shop' });
    const vaulted = customerFrom(
      one((await sdkCall(merchant.secretKey, 'POST', 'vault/customer', { body: { description: 'Searcher', default_payment: { card: { number: '5555555555554444', expiration_date: '12/30' } } } })).data),
    );
    vaultedCustomer = vaulted.ID;
    made.shipped = await create({
      type: 'sale',
      amount: 1000,
      payment_method: { card: CARD },
      order_id: 'srch1',
      po_number: 'po1',
      ip_address: '4.2.2.2',
      billing_address: { first_name: 'Jane', last_name: 'Doe', email: 'jane@example.com', postal_code: '60601', country: 'US' },
      shipping_address: { first_name: 'Jim', city: 'Chicago', postal_code: '60602', country: 'US' },
    });
    made.taxed = await create({ type: 'sale', amount: 2500, tax_amount: 100, payment_method: { card: CARD }, order_id: 'srch2' });
    made.held = await create({ type: 'authorize', amount: 5000, payment_method: { card: CARD } });
    made.verified = await create({ type: 'verification', payment_method: { card: CARD } });
    made.credit = await create({ type: 'credit', amount: 700, payment_method: { card: CARD } });
    made.vaulted = await create({ type: 'sale', amount: 3000, payment_method: { customer: { id: vaulted.ID } } });
    expect((await admin('POST', `/admin/merchants/${merchant.id}/settle`)).status).toBe(200);
    made.refund = goDecode(Transaction, one((await sdkCall(merchant.secretKey, 'POST', `transaction/${made.shipped.id}/refund`, { body: { amount: 400 } })).data)) as Found;
    current = await Promise.all(
      Object.values(made).map(async (t) => goDecode(Transaction, one((await sdkCall(merchant.secretKey, 'GET', `transaction/${t.id}`)).data)) as Found),
    );
  });

  it('Search(nil) sends {} and finds the prior four months, newest first; each record reads as the SDK reads Get', async () => {
    const page = await search(null);
    expect(page.TotalCount).toBe(7);
    expect(sorted(page.Data)).toEqual(sorted(current));
    const times = page.Data.map((t) => t.created_at.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(page.CorrelationID).toMatch(/.+/);
    // What the README reads from a record (tx.ResponseBody.Card.AuthCode, tx.Currency, …) is filled in, as on Get.
    for (const found of page.Data) {
      const got = current.find((t) => t.id === found.id);
      expect(found, found.id).toMatchObject({ status: got?.status, amount: got?.amount, currency: 'usd', response_body: got?.response_body, updated_at: got?.updated_at });
      expect(found.response_body.card?.auth_code, found.id).toMatch(/.+/);
    }
    const shipped = page.Data.find((t) => t.id === made.shipped.id);
    expect(shipped?.billing_address).toMatchObject({ first_name: 'Jane', postal_code: '60601' });
    expect(shipped?.shipping_address).toMatchObject({ first_name: 'Jim', postal_code: '60602' });
    expect(shipped).toMatchObject({ status: 'partially_refunded', amount_refunded: 400, response_body: { card: { first_six: '411111', last_four: '1111' } } });
  });

  it("the README's search: Equal(StatusSettled), GreaterThan, DateRange(since, time.Now()), CustomerID NotEqual(\"\"), Limit 100", async () => {
    const since = new Date(Date.now() - 3_600_000);
    const page = await search({ status: Equal('settled'), amount: GreaterThan(1000), created_at: DateRange(since, new Date()), customer_id: NotEqual(''), limit: 100, offset: 0 });
    expect(page.Data.map((t) => t.id)).toEqual([made.vaulted.id]);
    expect(page.Data[0]).toMatchObject({ customer_id: vaultedCustomer, payment_method: 'customer', amount: 3000 });
    expect(page.TotalCount).toBe(1);
    // Equal("") is its opposite: the records without a customer.
    await expectFinds({ customer_id: Equal('') }, (t) => t.customer_id === '', 'customer_id = ""');
  });

  it("the SDK test's search (status, amount, two days from a start, a billing postal code !=, Limit 50, Offset 100): a page past the end is an empty page, not ErrNotFound", async () => {
    const start = new Date(made.shipped.created_at.getTime() - 60_000);
    const req = { status: Equal('pending_settlement'), amount: GreaterThan(100), created_at: DateRange(start, new Date(start.getTime() + 48 * 3_600_000)), billing_address: { postal_code: NotEqual('00000') } };
    const matching = current.filter((t) => t.status === 'pending_settlement' && t.amount > 100);
    expect(matching.map((t) => t.id)).toEqual([made.refund.id]);
    const past = await search({ ...req, limit: 50, offset: 100 });
    expect(past).toMatchObject({ Data: [], TotalCount: 1 });
    expect((await search({ ...req, limit: 50 })).Data.map((t) => t.id)).toEqual([made.refund.id]);
  });

  it('CreatedAt: Day(), DateRange(), a range before any transaction, only a start_date (end_date "")', async () => {
    const first = made.shipped.created_at;
    const day = await search({ created_at: Day(first), limit: 100 });
    const sameDay = current.filter((t) => t.created_at.toISOString().slice(0, 10) === first.toISOString().slice(0, 10));
    expect(sorted(day.Data)).toEqual(sorted(sameDay));
    expect(day.TotalCount).toBe(sameDay.length);
    // DateRange sends whole seconds: the second of the last transaction is included to its end.
    const last = made.refund.created_at;
    const around = await search({ created_at: DateRange(first, last), limit: 100 });
    expect(around.TotalCount).toBe(7);
    const before = await search({ created_at: DateRange(new Date(first.getTime() - 3 * 86_400_000), new Date(first.getTime() - 2 * 86_400_000)) });
    expect(before).toMatchObject({ Data: [], TotalCount: 0 });
    const opened = await search({ created_at: { start_date: DateRange(first, first).start_date, end_date: '' }, limit: 100 });
    expect(opened.TotalCount).toBe(7);
    const closed = await search({ created_at: { start_date: '', end_date: DateRange(last, last).end_date }, limit: 100 });
    expect(closed.TotalCount).toBe(7);
  });

  it('TransactionID: Equal finds the one, NotEqual every other', async () => {
    const one = await search({ transaction_id: Equal(made.credit.id) });
    expect(one.Data.map((t) => t.id)).toEqual([made.credit.id]);
    expect(one.TotalCount).toBe(1);
    await expectFinds({ transaction_id: NotEqual(made.credit.id) }, (t) => t.id !== made.credit.id, 'transaction_id !=');
    expect(await search({ transaction_id: Equal('b7kgflt1tlv51er0fts0') })).toMatchObject({ Data: [], TotalCount: 0 });
  });

  it('integer filters: IntEqual, IntNotEqual, LessThan, GreaterThan on Amount, AmountAuthorized, AmountCaptured, AmountSettled, TaxAmount', async () => {
    const ops = { IntEqual, IntNotEqual, LessThan, GreaterThan } as const;
    const judge = { IntEqual: (a: number, b: number) => a === b, IntNotEqual: (a: number, b: number) => a !== b, LessThan: (a: number, b: number) => a < b, GreaterThan: (a: number, b: number) => a > b };
    let nonEmpty = 0;
    for (const field of ['amount', 'amount_authorized', 'amount_captured', 'amount_settled', 'tax_amount'] as const) {
      for (const value of [0, 100, 1000, 2500]) {
        for (const [name, build] of Object.entries(ops) as [keyof typeof ops, (v: number) => IntQuery][]) {
          nonEmpty += Math.sign(await expectFinds({ [field]: build(value) }, (t) => judge[name](Number(t[field]), value), `${field} ${name}(${value})`));
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(40);
    expect((await search({ amount: IntEqual(2500), tax_amount: IntEqual(100) })).Data.map((t) => t.id)).toEqual([made.taxed.id]);
  });

  it("string filters: Type (the SDK's four types and refund), Status, OrderID, PoNumber, IPAddress, PaymentMethod, PaymentType, ProcessorID, CustomerID, SettlementBatchID", async () => {
    const settled = current.find((t) => t.id === made.taxed.id) as Found;
    expect(settled.settlement_batch_id).toMatch(/^stl_/);
    const values: Record<string, string[]> = {
      type: ['sale', 'authorize', 'verification', 'credit', 'refund'],
      status: ['pending_settlement', 'authorized', 'settled', 'partially_refunded', 'verified', 'voided', 'refunded', 'declined'],
      order_id: ['srch1', 'srch2', 'nope', ''],
      po_number: ['po1', ''],
      ip_address: ['4.2.2.2', ''],
      payment_method: ['card', 'customer', 'ach'],
      payment_type: ['card', 'ach'],
      processor_id: [String(settled.processor_id), 'other'],
      customer_id: [vaultedCustomer, ''],
      settlement_batch_id: [String(settled.settlement_batch_id), ''],
    };
    for (const [field, list] of Object.entries(values)) {
      for (const value of list) {
        await expectFinds({ [field]: Equal(value) }, (t) => t[field] === value, `${field} = ${value}`);
        await expectFinds({ [field]: NotEqual(value) }, (t) => t[field] !== value, `${field} != ${value}`);
      }
    }
    expect((await search({ type: Equal('verification') })).Data.map((t) => t.id)).toEqual([made.verified.id]);
    expect((await search({ status: Equal('verified') })).Data.map((t) => t.id)).toEqual([made.verified.id]);
  });

  it('CapturedAt and SettledAt: DateRange and Day', async () => {
    const today = Day(made.shipped.created_at);
    const inRange = (at: unknown, range: { start_date: string; end_date: string }) =>
      at instanceof Date && at.getTime() >= Date.parse(range.start_date) && at.getTime() < Date.parse(range.end_date) + 1000;
    expect(await expectFinds({ captured_at: today }, (t) => inRange(t.captured_at, today), 'captured_at Day')).toBeGreaterThan(3);
    expect(await expectFinds({ settled_at: today }, (t) => inRange(t.settled_at, today), 'settled_at Day')).toBeGreaterThan(2);
    const never = DateRange(new Date(Date.now() - 10 * 86_400_000), new Date(Date.now() - 9 * 86_400_000));
    await expectFinds({ settled_at: never }, () => false, 'settled_at long ago');
  });

  it('BillingAddress and ShippingAddress: each AddressQuery field, Equal and NotEqual', async () => {
    const queries: [('billing_address' | 'shipping_address'), string, string][] = [
      ['billing_address', 'first_name', 'Jane'],
      ['billing_address', 'last_name', 'Doe'],
      ['billing_address', 'email', 'jane@example.com'],
      ['billing_address', 'postal_code', '60601'],
      ['billing_address', 'country', 'US'],
      ['billing_address', 'company', ''],
      ['shipping_address', 'first_name', 'Jim'],
      ['shipping_address', 'city', 'Chicago'],
      ['shipping_address', 'postal_code', '60602'],
      ['shipping_address', 'address_line_1', ''],
    ];
    for (const [object, field, value] of queries) {
      const of = (t: Found) => (t[object] as Record<string, string>)[field];
      await expectFinds({ [object]: { [field]: Equal(value) } }, (t) => of(t) === value, `${object}.${field} = ${value}`);
      await expectFinds({ [object]: { [field]: NotEqual(value) } }, (t) => of(t) !== value, `${object}.${field} != ${value}`);
    }
    const both = await search({ billing_address: { first_name: Equal('Jane'), postal_code: Equal('60601') }, shipping_address: { postal_code: Equal('60602') } });
    // The refund carries its sale's addresses; newest first.
    expect(both.Data.map((t) => t.id)).toEqual([made.refund.id, made.shipped.id]);
  });

  it('Limit and Offset: pages of 2 list each transaction once, with TotalCount on every page', async () => {
    const seen: string[] = [];
    for (let offset = 0; ; offset += 2) {
      const page = await search({ limit: 2, offset });
      expect(page.TotalCount).toBe(7);
      if (page.Data.length === 0) break;
      expect(page.Data.length).toBeLessThanOrEqual(2);
      seen.push(...page.Data.map((t) => t.id));
    }
    expect(seen).toHaveLength(7);
    expect([...seen].sort()).toEqual(sorted(current));
    // Limit 0 is left out (the default page of 20).
    expect((await search({ limit: 0 })).Data).toHaveLength(7);
  });

  it("a capture that sets FluidPay's order_id, PO number and IP (CaptureRequest) is found by them as soon as it answered", async () => {
    const other = await createMerchant({ name: 'Capturing Shop' });
    const find = async (req: TransactionSearchRequest) =>
      (many(Transaction, (await sdkCall(other.secretKey, 'POST', 'transaction/search', { body: searchBody(req) })).data) as Found[]).map((t) => t.id);
    const auth = goDecode(Transaction, one((await sdkCall(other.secretKey, 'POST', 'transaction', { body: { type: 'authorize', amount: 3000, payment_method: { card: CARD } } })).data)) as Found;
    const renamed = goDecode(Transaction, one((await sdkCall(other.secretKey, 'POST', 'transaction', { body: { type: 'authorize', amount: 3100, order_id: 'before1', payment_method: { card: CARD } } })).data)) as Found;
    expect(await find({ order_id: Equal('ord77') })).toEqual([]);
    await sdkCall(other.secretKey, 'POST', `transaction/${auth.id}/capture`, { body: { amount: 3000, order_id: 'ord77', po_number: 'po77', ip_address: '4.2.2.2' } });
    await sdkCall(other.secretKey, 'POST', `transaction/${renamed.id}/capture`, { body: { order_id: 'after1' } });
    expect(await find({ order_id: Equal('ord77') })).toEqual([auth.id]);
    expect(await find({ order_id: Equal('ord77'), po_number: Equal('po77'), ip_address: Equal('4.2.2.2') })).toEqual([auth.id]);
    // The order_id it had is no longer its own.
    expect(await find({ order_id: Equal('after1') })).toEqual([renamed.id]);
    expect(await find({ order_id: Equal('before1') })).toEqual([]);
  });

  it('what binbatch does not have is IsBadRequest naming the field: UserID, AddressID, a status binbatch never sets, Limit over 100', async () => {
    const refusal = async (req: TransactionSearchRequest) => (await search(req).catch((e: unknown) => e)) as SdkError;
    const user = await refusal({ user_id: Equal('aucio551tlv85l7moe60') });
    expect(user.isBadRequest()).toBe(true);
    expect(user.msg).toContain('user_id');
    expect((await refusal({ billing_address: { address_id: Equal('bl6nqk69ku6897l45fp0') } })).msg).toContain('billing_address.address_id');
    const flagged = await refusal({ status: Equal('flagged') });
    expect(flagged.isBadRequest()).toBe(true);
    expect(flagged.msg).toContain('status.value: must be one of');
    expect((await refusal({ limit: 101 })).msg).toContain('limit');
    const card = await refusal({ order_id: Equal(CARD.number) });
    expect(card.msg).toBe('order_id.value: must not contain a card number');
  });
});

describe('FluidPay SDK: Customers (the vault)', () => {
  let created: Customer;

  it('Create as in the README (validate=true, default card and billing address); DefaultCard()', async () => {
    created = await customer('POST', 'vault/customer', {
      query: { validate: 'true' },
      body: {
        description: 'Jane Doe',
        default_payment: { card: { number: '4111111111111111', expiration_date: '12/30' } },
        default_billing_address: { first_name: 'Jane', last_name: 'Doe', line_1: '123 Some St', city: 'Chicago', state: 'IL', postal_code: '60601', country: 'US' },
      },
    });
    expect(created.Description).toBe('Jane Doe');
    expect(created.Defaults.payment_method_type).toBe('card');
    const defaultCard = created.Cards?.find((card) => card.id === created.Defaults.payment_method_id);
    expect(defaultCard).toMatchObject({ masked_number: '411111******1111', card_type: 'visa', expiration_date: '12/30' });
    expect(created.Addresses?.[0]).toMatchObject({ line_1: '123 Some St', city: 'Chicago' });
    expect(created.Defaults.billing_address_id).toBe(created.Addresses?.[0]?.id);
  });

  it('Create with a custom id of FluidPay\'s alphabet and flags; Get reads them nested', async () => {
    const id = `cust.${crypto.randomUUID().slice(0, 8)}-x_1^a`;
    const made = await customer('POST', 'vault/customer', { body: { id, description: 'flagged', flags: ['surcharge_exempt'] } });
    expect(made).toMatchObject({ ID: id, Description: 'flagged', Flags: ['surcharge_exempt'] });
    expect(await customer('GET', `vault/${encodeURIComponent(id)}`)).toMatchObject({ ID: id, Description: 'flagged', Flags: ['surcharge_exempt'] });
  });

  it('CreateCard and CreateACH answer the whole customer and the new method id', async () => {
    const withCard = await customer('POST', `vault/customer/${created.ID}/card`, { body: { number: '4111111111111111', expiration_date: '11/31' } });
    expect(withCard.ID).toBe(created.ID);
    expect(withCard.Cards?.map((card) => card.id)).toContain(withCard.CreatedPaymentMethodID);
    const withAch = await customer('POST', `vault/customer/${created.ID}/ach`, { body: { account_number: '123456789', routing_number: '021000021', account_type: 'checking', sec_code: 'web' } });
    expect(withAch.ID).toBe(created.ID);
    expect(withAch.ACH?.find((a) => a.id === withAch.CreatedPaymentMethodID)).toMatchObject({ sec_code: 'web', account_type: 'checking', routing_number: '021000021' });
  });

  it('UpdateCard (the SDK sends an empty number to change only the expiration), UpdateToken and UpdateACH keep the method id', async () => {
    const before = await customer('GET', `vault/${created.ID}`);
    const cardId = before.Cards?.[0]?.id as string;
    const achId = before.ACH?.[0]?.id as string;
    const expiry = await customer('POST', `vault/customer/${created.ID}/card/${cardId}`, { body: { number: '', expiration_date: '10/32' } });
    expect(expiry.Cards?.find((c) => c.id === cardId)).toMatchObject({ masked_number: before.Cards?.[0]?.masked_number, expiration_date: '10/32' });
    const renumbered = await customer('POST', `vault/customer/${created.ID}/card/${cardId}`, { body: { number: '5555555555554444', expiration_date: '09/33' } });
    expect(renumbered.Cards?.find((c) => c.id === cardId)).toMatchObject({ masked_number: '555555******4444', card_type: 'mastercard', expiration_date: '09/33' });
    const tokenAnswer = await sdkCall(shop.secretKey, 'POST', 'tokenizer/token', { body: { cc_number: '4000056655665556', cc_expiration: '08/34' } });
    const token = (tokenAnswer.data as { temp_token: string }).temp_token;
    const tokenized = await customer('POST', `vault/customer/${created.ID}/token/${cardId}`, { body: { token } });
    expect(tokenized.Cards?.find((c) => c.id === cardId)).toMatchObject({ masked_number: '400005******5556', expiration_date: '08/34' });
    const ach = await customer('POST', `vault/customer/${created.ID}/ach/${achId}`, { body: { account_number: '987654321', routing_number: '021000021', account_type: 'savings', sec_code: 'ccd' } });
    expect(ach.ACH?.find((a) => a.id === achId)).toMatchObject({ account_type: 'savings', sec_code: 'ccd', masked_account_number: expect.stringMatching(/4321$/) });
    expect(ach.Cards?.map((c) => c.id)).toEqual(before.Cards?.map((c) => c.id));
    // ?validate=true verifies the card as it would be stored: a declined one changes nothing (402).
    const declined = await customer('POST', `vault/customer/${created.ID}/card/${cardId}`, { query: { validate: 'true' }, body: { number: '4000000000000002', expiration_date: '12/30' } }).catch((e: unknown) => e);
    expect(declined).toMatchObject({ statusCode: 402 });
    expect((await customer('GET', `vault/${created.ID}`)).Cards?.find((c) => c.id === cardId)).toMatchObject({ masked_number: '400005******5556' });
    // A bank account's id on the card path is not a card of this customer.
    const wrong = await customer('POST', `vault/customer/${created.ID}/card/${achId}`, { body: { number: '', expiration_date: '10/32' } }).catch((e: unknown) => e);
    expect((wrong as SdkError).isNotFound()).toBe(true);
  });

  it('CreateAddress, then a Sale on the vault customer shipping to it (examples/vault)', async () => {
    const updated = await customer('POST', `vault/customer/${created.ID}/address`, { body: { first_name: 'Jane', last_name: 'Doe', line_1: '456 Other Ave', city: 'Chicago', state: 'IL', postal_code: '60602', country: 'US' } });
    expect(updated.Addresses).toHaveLength(2);
    const sale = await tx('POST', 'transaction', { type: 'sale', amount: 2500, idempotency_key: newIdempotencyKey(), payment_method: { customer: { id: created.ID, shipping_address_id: updated.CreatedAddressID } } });
    expect(sale).toMatchObject({ payment_method: 'customer', customer_id: created.ID, amount: 2500 });
    expect(sale.shipping_address).toMatchObject({ address_line_1: '456 Other Ave', postal_code: '60602' });
    // The customer's default billing address fills billing_address when the sale gives none.
    expect(sale.billing_address).toMatchObject({ address_line_1: '123 Some St', postal_code: '60601' });
  });

  it('Update (POST, notes and defaults), Search ({operator, value}) and Delete (DELETE /vault/{id})', async () => {
    const current = await customer('GET', `vault/${created.ID}`);
    const ach = current.ACH?.[0]?.id as string;
    const updated = await customer('POST', `vault/customer/${created.ID}`, { body: { notes: 'vip', defaults: { payment_method_id: ach, payment_method_type: 'ach' } } });
    expect(updated).toMatchObject({ Notes: 'vip', Defaults: { payment_method_id: ach, payment_method_type: 'ach' } });

    const found = await sdkCall(shop.secretKey, 'POST', 'vault/customer/search', { body: { id: { operator: '=', value: created.ID }, limit: 10 } });
    expect(found.totalCount).toBe(1);
    expect((found.data as unknown[]).map(customerFrom).map((c) => c.ID)).toEqual([created.ID]);
    const byCity = await sdkCall(shop.secretKey, 'POST', 'vault/customer/search', { body: { city: { operator: '=', value: 'Chicago' }, postal_code: { operator: '=', value: '60602' } } });
    expect((byCity.data as unknown[]).map(customerFrom).map((c) => c.ID)).toEqual([created.ID]);

    await sdkCall(shop.secretKey, 'DELETE', `vault/${created.ID}`);
    const gone = await customer('GET', `vault/${created.ID}`).catch((e: unknown) => e);
    expect((gone as SdkError).isNotFound()).toBe(true);
  });
});

describe('FluidPay SDK: Lookup, Settlements, auth and errors', () => {
  it('Lookup.BIN by BIN, by an unknown BIN, and by a customer the SDK created', async () => {
    const bin = goDecode(BINLookup, one((await sdkCall(shop.secretKey, 'POST', 'lookup/bin/protected', { body: { bin: '411111', country: 'US', state: 'GA' } })).data));
    expect(bin).toMatchObject({ bin: '411111', card_brand: 'visa', card_type: 'credit', country: 'US', payment_method_type: 'card' });
    expect(goDecode(BINLookup, one((await sdkCall(shop.secretKey, 'POST', 'lookup/bin/protected', { body: { bin: '999999' } })).data))).toMatchObject({ bin: '999999' });
    const made = await customer('POST', 'vault/customer', { body: { default_payment: { card: { number: '4111111111111111', expiration_date: '12/30' } } } });
    const byCustomer = goDecode(BINLookup, one((await sdkCall(shop.secretKey, 'POST', 'lookup/bin/protected', { body: { customer_id: made.ID, country: 'US', state: 'GA' } })).data));
    expect(byCustomer).toMatchObject({ card_brand: 'visa', card_type: 'credit' });
  });

  it('SearchBatches: nil, Day(), Equal(id), and a page past the end as empty lists (not ErrNotFound)', async () => {
    const merchant = await createMerchant({ name: 'Settling Shop' });
    await sdkCall(merchant.secretKey, 'POST', 'transaction', { body: { type: 'sale', amount: 1000, payment_method: { card: CARD } } });
    expect((await admin('POST', `/admin/merchants/${merchant.id}/settle`)).status).toBe(200);
    const search = async (body: unknown) => {
      const answer = await sdkCall(merchant.secretKey, 'POST', 'settlement/batch/search', { body });
      return { ...(goDecode(SettlementBatchSearchResult, one(answer.data)) as { summary: Record<string, unknown>[]; results: Record<string, unknown>[] }), TotalCount: answer.totalCount };
    };
    const all = await search({});
    expect(all.TotalCount).toBe(1);
    expect(all.results[0]).toMatchObject({ num_transactions: 1, amount_captured: 1000, net_deposit: 1000, processor_type: 'sandbox', response_code: 100 });
    expect(all.summary[0]).toMatchObject({ num_transactions: 1, captured: 1000, credit: 0 });
    const id = String(all.results[0]?.id);
    const day = (all.results[0]?.batch_date as Date).toISOString().slice(0, 10);
    const today = await search({ batch_date: { start_date: `${day}T00:00:00Z`, end_date: `${day}T23:59:59Z` } });
    expect(today.results.map((r) => r.id)).toEqual([id]);
    expect((await search({ settlement_batch_id: { operator: '=', value: id } })).results).toHaveLength(1);
    expect((await search({ settlement_batch_id: { operator: '!=', value: id } })).results).toHaveLength(0);
    const past = await search({ limit: 10, offset: 90 });
    expect(past).toMatchObject({ summary: [], results: [], TotalCount: 1 });
  });

  it('a wrong key is IsUnauthorized; every answer carries X-Correlation-Id (the request id)', async () => {
    const err = await sdkCall('api_wrongKey000000000000000000000000', 'GET', 'transaction/b7kgflt1tlv51er0fts0').catch((e: unknown) => e);
    expect((err as SdkError).isUnauthorized()).toBe(true);
    const answer = await sdkCall(shop.secretKey, 'POST', 'lookup/bin/protected', { body: { bin: '411111' } });
    expect(answer.correlationId).toBe(answer.headers.get('X-Request-Id'));
  });

  it('one(): an empty array is ErrNotFound, as the SDK decodes it (the answers above never are)', () => {
    expect(() => one([])).toThrow(ErrNotFound);
  });
});

describe('FluidPay SDK: webhooks', () => {
  it('ParseWebhookRequest verifies a transaction_create delivery, before and after a rotation; the event decodes', async () => {
    const merchant = await createMerchant({ name: 'Hooked Shop' });
    const hook = receiver();
    const endpoint = await createEndpoint(merchant.secretKey, { url: hook.url, events: ['transaction_create'] });
    const sale = await sdkCall(merchant.secretKey, 'POST', 'transaction', { body: { type: 'sale', amount: 450, payment_method: { card: CARD } } });
    const saleId = (sale.data as { id: string }).id;
    await vi.waitFor(() => expect(hook.received).toHaveLength(1), { timeout: 10_000 });
    const first = hook.received[0];
    if (!first) throw new Error('no delivery');
    const event = await parseWebhookRequest(first.headers, first.body, endpoint.secret);
    expect(event).toMatchObject({ type: 'transaction_create', account_type: 'merchant', account_type_id: merchant.id, transaction_id: saleId });
    expect(event.EventID).toMatch(/^evt_/);
    const inner = goDecode(Transaction, event.data) as Tx;
    expect(inner).toMatchObject({ id: saleId, amount: 450 });
    expect(inner.response_body.card?.auth_code).toMatch(/.+/);
    await expect(parseWebhookRequest(first.headers, first.body, 'whsec_other')).rejects.toThrow('invalid webhook signature');

    // Rotated: the receiver still holding the old secret verifies with Signature-Previous.
    const rotated = await call(merchant.secretKey, 'POST', `webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    await sdkCall(merchant.secretKey, 'POST', 'transaction', { body: { type: 'sale', amount: 451, payment_method: { card: CARD } } });
    await vi.waitFor(() => expect(hook.received).toHaveLength(2), { timeout: 10_000 });
    const second = hook.received[1];
    if (!second) throw new Error('no delivery');
    expect((await parseWebhookRequest(second.headers, second.body, endpoint.secret)).type).toBe('transaction_create');
    const newSecret = (rotated.data as { secret: string }).secret;
    expect((await parseWebhookRequest(second.headers, second.body, newSecret)).type).toBe('transaction_create');
  });
});

function call(key: string, method: string, path: string) {
  return sdkCall(key, method, path);
}
