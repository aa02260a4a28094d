/**
 * A typed client for the merchant API: `hc` from `hono/client`, typed from the app's own routes
 * (AppType), so every path, input and answer is checked by TypeScript against the server code.
 * Import it from this repository (`binbatch/client`); examples/typed-client.ts shows a whole batch.
 *
 *   const api = createClient('https://binbatch.example.workers.dev', { apiKey: process.env.SECRET });
 *   const answer = await api.api.lookup.bin.protected.$post({ json: { bin: '411111' } });
 *   await api.api.transaction[':id'].capture.$post({ param: { id }, header: { 'idempotency-key': 'cap-1' }, json: { amount: 600 } });
 */
import { hc } from 'hono/client';
import type { AppType } from './app';

export type { AppType };

export interface ClientOptions {
  /** The merchant's key, sent on its own as the Authorization header. */
  apiKey: string;
  /** Another fetch (a test's, a proxy's); defaults to the global one. */
  fetch?: typeof fetch;
}

export function createClient(baseUrl: string, options: ClientOptions) {
  return hc<AppType>(baseUrl, {
    headers: { Authorization: options.apiKey },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export type Client = ReturnType<typeof createClient>;
