/** Small helpers for driving the Worker through its real fetch handler. */
import { env, exports } from 'cloudflare:workers';
import { assertDocumentedAnswer } from './contract';

export const ADMIN_TOKEN = 'test-admin-token';
const BASE = 'http://binbatch.test';

/** The envelope every JSON answer but a lookup, a batch status and a transaction record comes in. */
export interface Envelope<T = unknown> {
  status: string;
  msg: string;
  data: T;
  errors?: { field: string; msg: string }[];
  request_id?: string;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export async function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.key) headers.set('Authorization', options.key);
  let body: BodyInit | undefined;
  if (options.body !== undefined) {
    if (typeof options.body === 'string' || options.body instanceof ReadableStream || options.body instanceof FormData) {
      body = options.body;
    } else {
      body = JSON.stringify(options.body);
      if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
    }
  }
  const response = await exports.default.fetch(new Request(BASE + path, { method, headers, body }));
  // Every answer a test receives is held to the OpenAPI document (status, Content-Type, body).
  await assertDocumentedAnswer(method, path, response);
  return response;
}

export function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return call(method, path, { key: ADMIN_TOKEN, body });
}

export interface TestMerchant {
  id: string;
  name: string;
  secretKey: string;
  publicKey: string;
}

/** The id (`key_…`) of a merchant's active key of this type: what the rate limits count against. */
export async function apiKeyId(merchantId: string, type: 'secret' | 'public'): Promise<string> {
  const row = await env.DB.prepare('SELECT id FROM api_keys WHERE merchant_id = ?1 AND type = ?2 AND revoked_at IS NULL')
    .bind(merchantId, type)
    .first<{ id: string }>();
  if (!row) throw new Error(`no active ${type} key for merchant ${merchantId}`);
  return row.id;
}

export async function createMerchant(
  fields: { name?: string; enhanced_bin_lookup?: boolean; surcharge_rate_bps?: number; max_credit_amount?: number; rate_tier?: 'standard' | 'high' | 'max' } = {},
): Promise<TestMerchant> {
  const response = await admin('POST', '/admin/merchants', { name: 'Test Merchant', ...fields });
  if (response.status !== 201) throw new Error(`merchant creation failed: ${response.status} ${await response.text()}`);
  const { data } = await response.json<{ data: { id: string; name: string; secret_key: string; public_key: string } }>();
  return { id: data.id, name: data.name, secretKey: data.secret_key, publicKey: data.public_key };
}
