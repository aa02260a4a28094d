/**
 * A client that goes away mid-upload is a client abort, not a server error: the request log says
 * 499 and an info line `client_aborted` is written (no `level: error` line, no 500), and nothing of
 * the file is kept.
 */
import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { app } from '../../src/app';
import { createMerchant } from '../helpers/api';
import { captureConsole } from '../helpers/leak-scan';

describe('a client abort during an upload', () => {
  it('is logged as a client abort (499, info), not a 500 error; no file is left', async () => {
    const shop = await createMerchant({ name: 'Abort Shop' });
    const encoder = new TextEncoder();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(encoder.encode('"transaction_type","amount","cc_number","cc_expiration"\n'));
        else if (sent < 20) controller.enqueue(encoder.encode('"sale","100","4111111111111111","12/30"\n'.repeat(1000)));
        // The connection breaks: what workerd reports when the client goes away.
        else controller.error(new Error('Network connection lost.'));
        sent++;
      },
    });
    const capture = captureConsole();
    let status: number;
    try {
      // The app called in this isolate, so the body's stream fails as a dropped connection makes it fail
      // (through the Worker's fetch the test pool ends the body instead).
      const request = new Request('https://binbatch.test/api/filebatch?file_name=abort.csv', {
        method: 'POST',
        body,
        headers: { Authorization: shop.secretKey, 'Content-Type': 'text/csv' },
      });
      const ctx = createExecutionContext();
      const response = await app.fetch(request, env, ctx);
      await waitOnExecutionContext(ctx);
      status = response.status;
      await response.body?.cancel();
    } finally {
      capture.restore();
    }
    expect(status).toBe(499);
    const lines = capture.lines.map((line) => JSON.parse(line.slice(line.indexOf(': ') + 2)) as Record<string, unknown>);
    expect(lines.some((line) => line.level === 'error')).toBe(false);
    expect(lines).toContainEqual(expect.objectContaining({ event: 'client_aborted', level: 'info' }));
    expect(lines).toContainEqual(expect.objectContaining({ event: 'request', status: 499 }));
    expect((await env.FILES.list({ prefix: 'uploads/' })).objects.filter((o) => o.key.includes('abort'))).toEqual([]);
  });
});
