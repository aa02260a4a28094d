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

  it('finds delimiters split across chunk seams at every offset, with look-alikes on both sides', async () => {
    const csv = `a\r\n--${BOUNDARY.slice(0, 10)}\r\r\n-\r\n--${BOUNDARY.slice(0, -1)}x` + 'z'.repeat(300) + '\r';
    const body = form([{ name: 'file', filename: 'f.csv', body: csv }]);
    for (let size = 1; size <= 90; size++) {
      const reader = new MultipartReader(streamOf(body, size), BOUNDARY);
      expect(await reader.findPart('file')).toMatchObject({ name: 'file' });
      expect(await readAll(reader.body()), `read size ${size}`).toBe(csv);
      expect(await reader.nextPart()).toBeNull();
    }
  });

  it('refuses a form whose part starts past the limit, having read only about that much', async () => {
    const preamble = 'p'.repeat(32 * 1024 * 1024);
    let pulled = 0;
    const bytes = encoder.encode(`${preamble}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--${BOUNDARY}--\r\n`);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= bytes.length) return controller.close();
        controller.enqueue(bytes.subarray(pulled, pulled + 65_536));
        pulled += 65_536;
      },
    });
    const reader = new MultipartReader(stream, BOUNDARY, { maxBytesBeforePart: 65_536 });
    await expect(reader.findPart('file')).rejects.toThrow('a part must begin within the first 65536 bytes of the form');
    // The limit, the chunk that crossed it, and the one the stream had pulled ahead.
    expect(pulled).toBeLessThanOrEqual(65_536 + 3 * 65_536);
    // The same limit lets a form with a short preamble and another field through.
    const ok = new MultipartReader(streamOf(form([{ name: 'note', body: 'n'.repeat(1000) }, { name: 'file', filename: 'f.csv', body: 'data' }]), 4096), BOUNDARY, {
      maxBytesBeforePart: 65_536,
    });
    expect(await ok.findPart('file')).toMatchObject({ filename: 'f.csv' });
    expect(await readAll(ok.body())).toBe('data');
  });
});

/**
 * workerd's clock stands still during pure CPU work, so linear time is shown by counting work: the
 * bytes the reader copies (Uint8Array#set) and the bytes its native searches pass over
 * (Uint8Array#indexOf), for bodies of 1 MB and 32 MB. The old reader copied its whole unread
 * buffer on every network chunk while looking for a late boundary: quadratic, minutes for 32 MB.
 */
describe('MultipartReader work is linear in the body size', () => {
  const CHUNK = 65_536;

  function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
    let at = 0;
    return new ReadableStream({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(at, at + CHUNK));
        at += CHUNK;
      },
    });
  }

  /** Runs `work` with Uint8Array copies and searches counted (the built-ins wrapped, then restored). */
  async function counted(work: () => Promise<void>): Promise<{ copied: number; examined: number }> {
    const proto = Uint8Array.prototype;
    const { set, indexOf } = proto;
    const totals = { copied: 0, examined: 0 };
    proto.set = function (this: Uint8Array, source: ArrayLike<number>, offset?: number) {
      totals.copied += source.length;
      return set.call(this, source, offset);
    };
    proto.indexOf = function (this: Uint8Array, value: number, from = 0) {
      const found = indexOf.call(this, value, from);
      totals.examined += (found < 0 ? this.length : found + 1) - Math.max(0, from);
      return found;
    };
    try {
      await work();
    } finally {
      proto.set = set;
      proto.indexOf = indexOf;
    }
    return totals;
  }

  /** A file part of `size` bytes full of near-misses of the delimiter, so the search works hardest. */
  function nearMisses(size: number): Uint8Array {
    const unit = encoder.encode(`\r\n--${BOUNDARY.slice(0, -1)}X`);
    const out = new Uint8Array(size);
    for (let at = 0; at < size; at += unit.length) out.set(unit.subarray(0, size - at), at);
    return out;
  }

  function body(preambleBytes: number, file: Uint8Array): Uint8Array {
    const head = encoder.encode(`${'p'.repeat(preambleBytes)}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.csv"\r\n\r\n`);
    const tail = encoder.encode(`\r\n--${BOUNDARY}--\r\n`);
    const out = new Uint8Array(head.length + file.length + tail.length);
    out.set(head);
    out.set(file, head.length);
    out.set(tail, head.length + file.length);
    return out;
  }

  async function readFile(bytes: Uint8Array): Promise<number> {
    const reader = new MultipartReader(chunked(bytes), BOUNDARY);
    expect(await reader.nextPart()).toMatchObject({ filename: 'f.csv' });
    let total = 0;
    for await (const piece of reader.body()) total += piece.length;
    expect(await reader.nextPart()).toBeNull();
    return total;
  }

  it.each([1, 32])('a boundary %i MB late (no limit set): every byte examined about once, almost none copied', async (megabytes) => {
    const size = megabytes * 1024 * 1024;
    const bytes = body(size, encoder.encode('"transaction_type","amount"\n"sale","1"\n'));
    const work = await counted(async () => {
      expect(await readFile(bytes)).toBe(39);
    });
    expect(work.examined).toBeLessThanOrEqual(2 * bytes.length);
    expect(work.copied).toBeLessThanOrEqual(200 * (bytes.length / CHUNK + 10));
  }, 60_000);

  it.each([1, 32])('a %i MB file part of delimiter near-misses: linear search, seams copied only', async (megabytes) => {
    const file = nearMisses(megabytes * 1024 * 1024);
    const bytes = body(0, file);
    const work = await counted(async () => {
      expect(await readFile(bytes)).toBe(file.length);
    });
    expect(work.examined).toBeLessThanOrEqual(2 * bytes.length);
    expect(work.copied).toBeLessThanOrEqual(200 * (bytes.length / CHUNK + 10));
  }, 60_000);
});

