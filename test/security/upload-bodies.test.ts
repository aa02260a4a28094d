/**
 * Upload bodies as a hostile or clumsy client sends them: large and bad, with a boundary that comes
 * late or never, chunked with no Content-Length, with bytes after the file. Each answer is the 4xx
 * that names the problem, and a body the service started reading is read to its end (within the
 * limit) before the answer, never cancelled midway: workerd loses the connection when a Worker
 * answers while a body it began reading is still arriving, which `wrangler dev` shows as a 500
 * "Network connection lost" instead of the 400.
 */
import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { app } from '../../src/app';
import type { Env } from '../../src/env';
import { call, createMerchant, type TestMerchant } from '../helpers/api';

const encoder = new TextEncoder();
const BOUNDARY = 'upload-bodies-boundary-7MA4YWxk';
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

/** A body delivered 64 KiB at a time that records how far it was read and whether it was cancelled. */
function trackedBody(bytes: Uint8Array) {
  const seen = { pulled: 0, ended: false, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled >= bytes.length) {
        seen.ended = true;
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(seen.pulled, seen.pulled + 65_536));
      seen.pulled = Math.min(bytes.length, seen.pulled + 65_536);
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

function join(...parts: (string | Uint8Array)[]): Uint8Array {
  const bytes = parts.map((part) => (typeof part === 'string' ? encoder.encode(part) : part));
  const out = new Uint8Array(bytes.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of bytes) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const filePart = (name = 'file', filename = 'batch.csv') =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`;
const closing = `\r\n--${BOUNDARY}--\r\n`;
const GOOD_CSV = '"transaction_type","amount","cc_number","cc_expiration"\n"sale","1000","4111111111111111","12/30"\n';

/** `size` bytes of rows under a header the service refuses (an unknown column). */
function badCsv(size: number): Uint8Array {
  const header = '"transaction_type","amount","nope"\n';
  const row = '"sale","1000","x"\n';
  return encoder.encode(header + row.repeat(Math.ceil((size - header.length) / row.length)));
}

describe('upload bodies', () => {
  let shop: TestMerchant;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Upload Bodies Shop' });
  });

  async function upload(body: ReadableStream<Uint8Array>, headers: Record<string, string>, query = ''): Promise<Response> {
    // The same generated files again: meant (?allow_duplicate=true; the refusal is filebatch-repeats.test.ts's).
    return call('POST', `/api/filebatch${query ? `${query}&` : '?'}allow_duplicate=true`, { key: shop.secretKey, body, headers });
  }

  it('a large bad multipart upload: 400 naming the line, the body read to its end first', async () => {
    const { stream, seen } = trackedBody(join(filePart(), badCsv(8 * 1024 * 1024), closing));
    const response = await upload(stream, { 'Content-Type': MULTIPART });
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toBe('line 1: unknown column "nope"');
    expect(seen).toMatchObject({ ended: true, cancelled: false });
  });

  it('a large bad raw CSV upload: the same', async () => {
    const { stream, seen } = trackedBody(badCsv(8 * 1024 * 1024));
    const response = await upload(stream, { 'Content-Type': 'text/csv' }, '?file_name=bad.csv');
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toBe('line 1: unknown column "nope"');
    expect(seen).toMatchObject({ ended: true, cancelled: false });
  });

  it('a 32 MB body whose boundary comes late: 400 once 64 KiB have passed without the file part', async () => {
    const { stream, seen } = trackedBody(join('x'.repeat(32 * 1024 * 1024), '\r\n', filePart(), GOOD_CSV, closing));
    const response = await upload(stream, { 'Content-Type': MULTIPART });
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toBe('a part must begin within the first 65536 bytes of the form');
    expect(seen).toMatchObject({ ended: true, cancelled: false });
  });

  it('a boundary that never comes: 400, and the same for other fields filling the first 64 KiB', async () => {
    const never = trackedBody(encoder.encode('y'.repeat(2 * 1024 * 1024)));
    const response = await upload(never.stream, { 'Content-Type': MULTIPART });
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toBe('a part must begin within the first 65536 bytes of the form');
    expect(never.seen).toMatchObject({ ended: true, cancelled: false });

    const note = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\n${'n'.repeat(70 * 1024)}\r\n`;
    const crowded = trackedBody(join(note, filePart(), GOOD_CSV, closing));
    const refused = await upload(crowded.stream, { 'Content-Type': MULTIPART });
    expect(refused.status).toBe(400);
    expect(crowded.seen).toMatchObject({ ended: true, cancelled: false });
    // A short field before the file is fine.
    const short = trackedBody(join(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n`, filePart(), GOOD_CSV, closing));
    expect((await upload(short.stream, { 'Content-Type': MULTIPART })).status).toBe(200);
  });

  it('an accepted upload with more form after the file: 200, and the rest of the body read, not cut', async () => {
    const after = `\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="note"\r\n\r\n${'n'.repeat(300 * 1024)}`;
    const { stream, seen } = trackedBody(join(filePart(), GOOD_CSV, after, closing));
    const response = await upload(stream, { 'Content-Type': MULTIPART });
    expect(response.status).toBe(200);
    expect(seen).toMatchObject({ ended: true, cancelled: false });
  });

  describe('with a 4 KiB file limit (BATCH_MAX_BYTES), bodies without a Content-Length', () => {
    const small = { ...env, BATCH_MAX_BYTES: '4096' } as Env;
    async function send(body: ReadableStream<Uint8Array>, contentType: string, query = ''): Promise<Response> {
      const ctx = createExecutionContext();
      const request = new Request(`http://binbatch.test/api/filebatch${query}`, {
        method: 'POST',
        headers: { Authorization: shop.secretKey, 'Content-Type': contentType },
        body,
      });
      const response = await app.fetch(request, small, ctx);
      await waitOnExecutionContext(ctx);
      return response;
    }

    it('a raw CSV past the limit: 413, reading stopped at the limit (the rest is cut, not drained)', async () => {
      const { stream, seen } = trackedBody(encoder.encode(GOOD_CSV.repeat(20_000)));
      const response = await send(stream, 'text/csv', '?file_name=big.csv');
      expect(response.status).toBe(413);
      expect((await response.json<{ msg: string }>()).msg).toBe('the file exceeds the limit of 4096 bytes');
      expect(seen.pulled).toBeLessThanOrEqual(3 * 65_536);
      expect(seen.ended).toBe(false);
    });

    it('a form whose file part is over the limit: 413, the form around it counted too', async () => {
      const { stream, seen } = trackedBody(join(filePart(), GOOD_CSV.repeat(100), closing));
      const response = await send(stream, MULTIPART);
      expect(response.status).toBe(413);
      expect((await response.json<{ msg: string }>()).msg).toBe('the file exceeds the limit of 4096 bytes');
      // Within the body limit (file + 68 KiB of form), so read to its end before the answer.
      expect(seen).toMatchObject({ ended: true, cancelled: false });
    });
  });
});
