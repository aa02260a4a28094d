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
import type { FileReportAnswer } from './schemas/filebatch-validate';

export type { FileReportAnswer };

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

/**
 * `POST /api/filebatch?validate_only=true`: a file checked as an upload would read it, nothing
 * stored or charged. Its own helper, because the typed route answers an upload's shape; this one
 * answers the file's report (docs/batch.md, "Checking a file before it runs").
 */
export async function validateFile(client: Client, file: File): Promise<{ ok: true; report: FileReportAnswer } | { ok: false; status: number; msg: string }> {
  const response = await client.api.filebatch.$post({ query: { validate_only: 'true' }, header: {}, form: { file } });
  const body = (await response.json()) as unknown as { msg: string; data: FileReportAnswer };
  return response.ok ? { ok: true, report: body.data } : { ok: false, status: response.status, msg: body.msg };
}
