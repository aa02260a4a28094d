/**
 * POST /api/transaction/search (issue 33): FluidPay's filters and answer over the search index,
 * read-your-writes for API transactions and batch rows, paging, and what it refuses.
 */
import { describe, expect, it } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';

type Record = { id: string; status: string; amount: number; order_id: string | null; created_at: string; amount_refunded: number } & { [k: string]: unknown };
type SearchAnswer = {
  status: string;
  total_count: number;
  total_count_exact: boolean;
  data: Record[];
  window: { start_date: string; end_date: string | null; defaulted: boolean };
  next_cursor: string | null;
};

async function sale(merchant: TestMerchant, body: { [k: string]: unknown } = {}): Promise<Record> {
  const response = await call('POST', '/api/transaction', {
    key: merchant.secretKey,
    body: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: 1000, ...body },
  });
  expect(response.status).toBe(201);
  return (await response.json<{ data: Record }>()).data;
}

async function search(merchant: TestMerchant, body: unknown): Promise<SearchAnswer> {
  const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body });
  const answer = await response.json<SearchAnswer>();
  if (response.status !== 200) throw new Error(`search answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

describe('search: API transactions', () => {
  it('finds a transaction as soon as its answer was sent, by the default window and by order_id', async () => {
    const shop = await createMerchant({ name: 'Search Shop' });
    const made = await sale(shop, { order_id: 'ORD1' });
    const all = await search(shop, {});
    expect(all.window.defaulted).toBe(true);
    expect(all.total_count).toBe(1);
    expect(all.data.map((r) => r.id)).toEqual([made.id]);
    const byOrder = await search(shop, { order_id: { operator: '=', value: 'ORD1' } });
    expect(byOrder.data.map((r) => r.id)).toEqual([made.id]);
    const other = await search(shop, { order_id: { operator: '=', value: 'ORD2' } });
    expect(other.total_count).toBe(0);
  });
});
