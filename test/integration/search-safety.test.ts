/**
 * Search cursors are signed (an HMAC over everything a cursor carries and the merchant's id): a
 * cursor with any part changed (its count, its window, its position), or another merchant's, is a
 * 400 naming `cursor`; an unchanged one pages on.
 */
import { describe, expect, it } from 'vitest';
import { call, createMerchant, type TestMerchant } from '../helpers/api';

const VISA = '4111111111111111';

async function search(merchant: TestMerchant, body: unknown): Promise<{ status: number; json: { msg: string; total_count: number; data: unknown[]; next_cursor: string | null } }> {
  const response = await call('POST', '/api/transaction/search', { key: merchant.secretKey, body });
  return { status: response.status, json: await response.json() };
}

/** The cursor's payload (JSON) changed by `change`, its signature kept. */
function tampered(cursor: string, change: (json: Record<string, unknown>) => void): string {
  const [payload, signature] = cursor.split('.');
  const json = JSON.parse(atob((payload ?? cursor).replaceAll('-', '+').replaceAll('_', '/'))) as Record<string, unknown>;
  change(json);
  const forged = btoa(JSON.stringify(json)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
  return signature === undefined ? forged : `${forged}.${signature}`;
}

describe('signed search cursors', () => {
  it('refuse a cursor whose count, window or position was changed, and another merchant’s; page on with an unchanged one', async () => {
    const shop = await createMerchant({ name: 'Cursor Signer' });
    const other = await createMerchant({ name: 'Cursor Thief' });
    for (let i = 0; i < 3; i++) {
      const created = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/39', amount: 1000 + i } });
      expect(created.status).toBe(201);
      await created.body?.cancel();
    }
    const first = await search(shop, { limit: 1 });
    expect(first.json.total_count).toBe(3);
    const cursor = first.json.next_cursor ?? '';
    expect(cursor).not.toBe('');

    for (const forged of [
      tampered(cursor, (json) => (json.n = 123_456_789)),
      tampered(cursor, (json) => (json.n = -5)),
      tampered(cursor, (json) => (json.f = '0000-01-01T00:00:00.000Z')),
      tampered(cursor, (json) => (json.i = 'txn_zzzzzzzzzzzzzzzzzzzz')),
    ]) {
      const answer = await search(shop, { limit: 1, cursor: forged });
      expect(answer.status).toBe(400);
      expect(answer.json.msg).toBe('cursor: is not a cursor this search answered');
    }
    const stolen = await search(other, { limit: 1, cursor });
    expect(stolen.status).toBe(400);
    expect(stolen.json.msg).toBe('cursor: is not a cursor this search answered');

    const second = await search(shop, { limit: 1, cursor });
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ total_count: 3 });
    expect(second.json.data).toHaveLength(1);
  });
});

describe('search date ranges', () => {
  it('accept the widest range, 0000-01-01 to 9999-12-31, for created_at, captured_at and settled_at; a reversed one names the real limit', async () => {
    const shop = await createMerchant({ name: 'Wide Window' });
    const created = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', cc_number: VISA, cc_expiration: '12/39', amount: 1000 } });
    expect(created.status).toBe(201);
    await created.body?.cancel();
    const wide = { start_date: '0000-01-01T00:00:00Z', end_date: '9999-12-31T23:59:59Z' };
    const all = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { created_at: wide } });
    expect(all.status).toBe(200);
    expect(await all.json()).toMatchObject({ total_count: 1, window: { start_date: '0000-01-01T00:00:00.000Z', end_date: '9999-12-31T23:59:59.999Z' } });
    for (const field of ['captured_at', 'settled_at']) {
      const answer = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { [field]: wide } });
      expect(answer.status, field).toBe(200);
      await answer.body?.cancel();
    }
    const endOnly = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { created_at: { end_date: '9999-12-31T23:59:59Z' } } });
    expect(await endOnly.json()).toMatchObject({ window: { end_date: '9999-12-31T23:59:59.999Z' } });
    const reversed = await call('POST', '/api/transaction/search', { key: shop.secretKey, body: { created_at: { start_date: '2026-02-01T00:00:00Z', end_date: '2026-01-01T00:00:00Z' } } });
    expect(reversed.status).toBe(400);
    expect(await reversed.json()).toMatchObject({ msg: 'created_at.start_date: must be before end_date (dates run from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z)' });
  });
});
