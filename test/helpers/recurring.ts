/** Recurring billing's test helpers: a merchant's API calls under /api/recurring and a vault customer to bill. */
import { expect } from 'vitest';
import { call, type Envelope, type TestMerchant } from './api';

export interface Adjustment {
  id: string;
  name: string;
  amount: number;
  percentage: number;
  duration: number;
}
export interface Plan {
  id: string;
  amount: number;
  billing_days: string;
  total_add_ons: number;
  total_discounts: number;
  add_ons: Adjustment[];
  discounts: Adjustment[];
}
export interface Subscription {
  id: string;
  plan_id: string;
  status: string;
  amount: number;
  total_adds: number;
  total_discounts: number;
  billing_days: string;
  billing_frequency: string;
  duration: number;
  next_bill_date: string;
  billings: number;
  retries: number;
  customer: { id: string; payment_method_id: string; payment_method_type: string };
  last_transaction_id: string | null;
  last_decline: { transaction_id: string; date: string; processor_response_code: string | null; processor_response_text: string | null; never_retry: boolean } | null;
}

export function recurring(shop: TestMerchant, method: string, path: string, body?: unknown): Promise<Response> {
  return call(method, `/api/recurring${path}`, { key: shop.secretKey, body });
}

export async function created<T>(response: Promise<Response>): Promise<T> {
  const answer = await response;
  const text = await answer.text();
  expect(answer.status, text).toBe(201);
  return (JSON.parse(text) as Envelope<T>).data;
}

export async function okData<T>(response: Promise<Response>): Promise<T> {
  const answer = await response;
  const text = await answer.text();
  expect(answer.status, text).toBe(200);
  return (JSON.parse(text) as Envelope<T>).data;
}

let customers = 0;
/** A vault customer with one card (its default); answers its id and the card's id. */
export async function customerWithCard(shop: TestMerchant, number = '4111111111111111'): Promise<{ id: string; methodId: string }> {
  const id = `cust${++customers}x${Math.floor(Math.random() * 1e6)}`;
  const data = await created<{ id: string; default_payment_method_id: string }>(
    call('POST', '/api/vault/customer', { key: shop.secretKey, body: { id, payment_method: { card: { number, expiration: '1239' } } } }),
  );
  return { id: data.id, methodId: data.default_payment_method_id };
}
