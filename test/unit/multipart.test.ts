import { describe, expect, it } from 'vitest';
import { MultipartError, MultipartReader, multipartBoundary } from '../../src/lib/multipart';

const encoder = new TextEncoder();

/** A body stream that delivers `text` in pieces of `size` bytes, like a network would. */
function streamOf(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = encoder.encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function readAll(parts: AsyncIterable<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let out = '';
  for await (const bytes of parts) out += decoder.decode(bytes, { stream: true });
  return out + decoder.decode();
}

const BOUNDARY = '----formboundary7MA4YWxk';
function form(parts: { name: string; filename?: string; body: string }[]): string {
  let text = 'preamble to ignore\r\n';
  for (const part of parts) {
    const file = part.filename === undefined ? '' : `; filename="${part.filename}"`;
    text += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"${file}\r\nContent-Type: text/csv\r\n\r\n${part.body}\r\n`;
  }
  return text + `--${BOUNDARY}--\r\n`;
}

describe('MultipartReader', () => {
  it('reads the boundary from the Content-Type, quoted or not', () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('text/csv')).toBeNull();
  });

  it('streams each part exactly, even with delimiter look-alikes and any read size', async () => {
    const csv = '"transaction_type","amount"\r\n"sale","100"\r\n--not-the-boundary\r\n-' + 'x'.repeat(5000);
    const body = form([
      { name: 'note', body: 'hello' },
      { name: 'file', filename: 'batch.csv', body: csv },
    ]);
    for (const size of [1, 2, 7, 64, 100_000]) {
      const reader = new MultipartReader(streamOf(body, size), BOUNDARY);
      const first = await reader.nextPart();
      expect(first).toEqual({ name: 'note', filename: null, contentType: 'text/csv' });
      const second = await reader.nextPart(); // skips the rest of "note"
      expect(second).toEqual({ name: 'file', filename: 'batch.csv', contentType: 'text/csv' });
      expect(await readAll(reader.body())).toBe(csv);
      expect(await reader.nextPart()).toBeNull();
    }
  });

  it('hands a large part over in pieces instead of gathering it', async () => {
    const big = 'y'.repeat(1_000_000);
    const reader = new MultipartReader(streamOf(form([{ name: 'file', filename: 'f.csv', body: big }]), 65_536), BOUNDARY);
    await reader.nextPart();
    let largest = 0;
    let total = 0;
    for await (const piece of reader.body()) {
      largest = Math.max(largest, piece.length);
      total += piece.length;
    }
    expect(total).toBe(big.length);
    expect(largest).toBeLessThanOrEqual(65_536 + 64);
  });

  it('throws a MultipartError on a body cut inside a part', async () => {
    const reader = new MultipartReader(streamOf(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc`, 4), BOUNDARY);
    await reader.nextPart();
    await expect(readAll(reader.body())).rejects.toBeInstanceOf(MultipartError);
  });

  it('throws a MultipartError when there is no boundary at all', async () => {
    const reader = new MultipartReader(streamOf('just text', 4), BOUNDARY);
    await expect(reader.nextPart()).rejects.toThrow('the multipart body has no boundary line');
  });
});
