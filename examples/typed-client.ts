/**
 * The typed client end to end: upload a batch file, poll its status until it is done, download
 * the results. test/integration/typed-client.test.ts runs it against the real app; against a
 * server, call it with that server's address and a secret key:
 *
 *   import { createClient } from 'binbatch/client';   // or '../src/client' inside this repository
 *   const api = createClient('http://localhost:8787', { apiKey: 'api_demoSecretKey0000000000000000000' });
 *   console.log(await runBatch(api, new File([csvText], 'batch.csv', { type: 'text/csv' })));
 */
import type { Client } from '../src/client';

export interface BatchRun {
  id: string;
  status: 'completed' | 'failed';
  numLines: number;
  resultsCsv: string;
}

export async function runBatch(api: Client, file: File, options: { pollMs?: number; timeoutMs?: number } = {}): Promise<BatchRun> {
  const uploaded = await api.api.filebatch.$post({ query: {}, header: {}, form: { file } });
  if (!uploaded.ok) throw new Error(`upload refused (${uploaded.status}): ${(await uploaded.json()).msg}`);
  const { data: batch } = await uploaded.json();

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const polled = await api.api.filebatch[':id'].$get({ param: { id: batch.id } });
    if (!polled.ok) throw new Error(`status refused (${polled.status})`);
    const record = await polled.json();
    if (record.status === 'failed') return { id: batch.id, status: 'failed', numLines: record.num_lines, resultsCsv: '' };
    if (record.status === 'completed') break;
    if (Date.now() > deadline) throw new Error(`batch ${batch.id} still ${record.status}`);
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
  }

  const download = await api.api.filebatch[':id'].download.$get({ param: { id: batch.id }, query: {} });
  if (!download.ok) throw new Error(`download refused (${download.status})`);
  return { id: batch.id, status: 'completed', numLines: batch.num_lines, resultsCsv: await download.text() };
}
