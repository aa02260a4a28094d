/**
 * An integrating engineer's program, written against types generated from the live OpenAPI
 * document by openapi-typescript (./generated/api.d.ts, made by the test, not committed) and
 * calling the API through openapi-fetch: no hand-written serializer, no cast, no `any`.
 * test/node/third-party-client.test.ts compiles it with TypeScript strict, then runs it.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/api';

type FailedEnvelope = components['schemas']['FailedEnvelope'];
type LookupBody = paths['/api/lookup/bin/protected']['post']['requestBody']['content']['application/json'];

export interface Outcome {
  brand: string | undefined;
  surchargeable: boolean | undefined;
  customerId: string;
  batchId: string;
  rawUpload: { fileName: string; numLines: number };
  status: string;
  resultsCsv: string;
  requestId: string | null;
  refused: { status: number; msg: string; data: unknown; fields: string[] };
  unknownField: string;
}

export async function run(baseUrl: string, secretKey: string, csv: string): Promise<Outcome> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${secretKey}` } });

  // 1. A lookup: exactly one source (the document's oneOf), with the region for is_surchargeable.
  const lookup = await api.POST('/api/lookup/bin/protected', { body: { bin: '411111', country: 'US', state: 'TX' } });
  if (lookup.error) throw new Error(`lookup refused: ${lookup.error.msg}`);

  // 2. A vault customer with a card.
  const customer = await api.POST('/api/vault/customer', {
    body: { description: 'third-party client', payment_method: { card: { number: '4111111111111111', expiration: '12/39' } } },
  });
  if (customer.error) throw new Error(`customer refused: ${customer.error.msg}`);

  // 3. The batch file as a multipart upload: the file part is a Blob (the document's
  //    `format: binary`) in a FormData, which openapi-fetch sends as it is.
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'third-party.csv');
  const upload = await api.POST('/api/filebatch', { params: { query: { allow_duplicate: 'true' } }, body: form });
  if (upload.error) throw new Error(`upload refused: ${upload.error.msg}`);
  const batchId = upload.data.data.id;

  // 3b. The same file as a raw text/csv body: openapi-fetch JSON-encodes any body but FormData,
  //     so the Blob is passed through as it is (docs/api-decisions.md).
  const raw = await api.POST('/api/filebatch', {
    params: { query: { file_name: 'third-party-raw.csv', allow_duplicate: 'true' } },
    body: new Blob([csv], { type: 'text/csv' }),
    bodySerializer: (body) => body,
    headers: { 'Content-Type': 'text/csv' },
  });
  if (raw.error) throw new Error(`raw upload refused: ${raw.error.msg}`);

  // 4. Its status, until it has ended (the test's timeout bounds the wait).
  let status: string = upload.data.data.status;
  while (status !== 'completed' && status !== 'failed') {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const polled = await api.GET('/api/filebatch/{id}', { params: { path: { id: batchId } } });
    if (polled.error) throw new Error(`status refused: ${polled.error.msg}`);
    status = polled.data.status;
  }

  // 5. The results: a text/csv answer, read as text.
  const download = await api.GET('/api/filebatch/{id}/download', { params: { path: { id: batchId }, query: {} }, parseAs: 'text' });
  if (download.error) throw new Error(`download refused: ${download.error.msg}`);
  const resultsCsv: string = download.data;

  // 6. An error, read through the generated error type: `msg`, `data` (null) and `errors`.
  const refused = await api.POST('/api/lookup/bin/protected', { body: { bin: '41111' } });
  const error: FailedEnvelope | undefined = refused.error;
  if (error === undefined) throw new Error('a 5-digit BIN was accepted');
  // The document says `const: null` (generators read it as unknown; a type of only null would be dropped).
  const data: unknown = error.data;

  // 7. A misspelt field, as JSON from elsewhere (a config file, another service) would bring it:
  //    the generated type refuses it in code, so it comes in as parsed data.
  const misspelt: LookupBody = JSON.parse('{"bin": "411111", "country": "US", "State": "TX"}');
  const unknown = await api.POST('/api/lookup/bin/protected', { body: misspelt });

  return {
    brand: lookup.data.card_brand,
    surchargeable: lookup.data.is_surchargeable,
    customerId: customer.data.data.id,
    batchId,
    rawUpload: { fileName: raw.data.data.file_name, numLines: raw.data.data.num_lines },
    status,
    resultsCsv,
    requestId: refused.response.headers.get('X-Request-Id'),
    refused: { status: refused.response.status, msg: error.msg, data, fields: (error.errors ?? []).map((e) => e.field) },
    unknownField: unknown.error?.msg ?? '(accepted)',
  };
}
