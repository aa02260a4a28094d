/**
 * A small streaming multipart/form-data reader (RFC 7578). `request.formData()` and the maintained
 * parsers we looked at hold a whole file part in memory or cost more than linear time on input a
 * client chooses (docs/batch.md, "Why a hand-written multipart reader"); a 100 MB batch file must
 * flow to R2 a network chunk at a time. This reader pulls from the body only as fast as the caller
 * consumes a part.
 *
 * Linear time and bounded memory, whatever the body:
 * - the delimiter ("\r\n--boundary") is found with the native `indexOf` on its first byte, a
 *   carriage return that occurs nowhere else in it (the boundary may not hold one), so a partial
 *   match never overlaps the next candidate and no byte is compared twice over;
 * - network chunks are searched where they are: data is handed on as subarrays; only a possible
 *   delimiter prefix at a chunk's end (under 80 bytes) is copied, with the same number of bytes
 *   of the next chunk, to look across the seam;
 * - bytes before the wanted part (preamble, other parts, headers) are counted against
 *   `maxBytesBeforePart` and dropped as they stream, never gathered;
 * - part headers are gathered in a buffer that doubles, up to 16 KiB.
 *
 * Self-contained (no imports) so that scripts/multipart-cpu.mjs can load it with Node's type
 * stripping and measure it.
 */

const MAX_HEADER_BYTES = 16 * 1024;
const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const HEADER_END = new Uint8Array([CR, LF, CR, LF]);

export class MultipartError extends Error {
  override name = 'MultipartError';
}

export interface MultipartPart {
  name: string;
  filename: string | null;
  contentType: string | null;
}

/** Where the reader gets bytes: a request body (see BodyReader), chunk by chunk; null at its end. */
export interface ByteSource {
  read(): Promise<Uint8Array | null>;
}

export interface MultipartOptions {
  /** Bytes of the body allowed before a part's content starts (preamble, parts skipped, headers). */
  maxBytesBeforePart?: number;
}

/**
 * The boundary parameter of a multipart/form-data Content-Type, or null. RFC 2046's characters
 * only: in particular never a carriage return, which the delimiter search relies on.
 */
export function multipartBoundary(contentType: string): string | null {
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([0-9A-Za-z'()+_,./:=? -]{1,70})"|([0-9A-Za-z'()+_,./:=?-]{1,70}))(?:\s*;|\s*$)/i.exec(contentType);
  const boundary = match ? (match[1] ?? match[2] ?? null) : null;
  return boundary !== null && !boundary.endsWith(' ') ? boundary : null;
}

/** A stretch of a part (or preamble) up to the next delimiter; `delimiter` says whether one was reached. */
interface Segment {
  data: Uint8Array;
  delimiter: boolean;
}

export class MultipartReader {
  readonly #source: ByteSource;
  /** "\r\n--boundary": the body is read as if it began with "\r\n", so the first delimiter is no special case. */
  readonly #delimiter: Uint8Array;
  readonly #maxBytesBeforePart: number;
  #buffer: Uint8Array = new Uint8Array([CR, LF]);
  #position = 0;
  /** Offset in the body of `#buffer[0]` (the virtual "\r\n" starts at -2). */
  #bufferStart = -2;
  /** Bytes read from the source so far. */
  #bytesRead = 0;
  /** The end of the previous buffer that may begin a delimiter, kept to look across the seam. */
  #carry: Uint8Array | null = null;
  #eof = false;
  #state: 'preamble' | 'body' | 'between' | 'done' = 'preamble';

  constructor(body: ByteSource | ReadableStream<Uint8Array>, boundary: string, options: MultipartOptions = {}) {
    this.#source = body instanceof ReadableStream ? streamSource(body) : body;
    this.#delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
    this.#maxBytesBeforePart = options.maxBytesBeforePart ?? Number.POSITIVE_INFINITY;
  }

  /** Moves to the part named `name` (skipping the parts before it); null when the form has none. */
  async findPart(name: string): Promise<MultipartPart | null> {
    for (let part = await this.nextPart(); part !== null; part = await this.nextPart()) {
      if (part.name === name) return part;
    }
    return null;
  }

  /** Moves to the next part (skipping what is left of the current one); null after the last. */
  async nextPart(): Promise<MultipartPart | null> {
    if (this.#state === 'body' || this.#state === 'preamble') {
      const preamble = this.#state === 'preamble';
      for (;;) {
        const segment = await this.#segment();
        if (segment === null) {
          throw new MultipartError(preamble ? 'the multipart body has no boundary line' : 'the multipart body ends inside a part');
        }
        this.#checkHead();
        if (segment.delimiter) break;
      }
      this.#state = 'between';
    }
    if (this.#state === 'done') return null;
    // After a delimiter: "--" ends the body, "\r\n" starts a part's headers.
    const first = await this.#takeByte();
    const second = await this.#takeByte();
    if (first === DASH && second === DASH) {
      this.#state = 'done';
      return null;
    }
    if (first !== CR || second !== LF) throw new MultipartError('malformed multipart boundary line');
    const headers = await this.#readHeaders();
    this.#checkHead();
    this.#state = 'body';
    return parsePartHeaders(headers);
  }

  /** The current part's bytes, pulled from the request as they are consumed. */
  async *body(): AsyncGenerator<Uint8Array> {
    while (this.#state === 'body') {
      const segment = await this.#segment();
      if (segment === null) throw new MultipartError('the multipart body ends inside a part');
      if (segment.delimiter) this.#state = 'between';
      if (segment.data.length > 0) yield segment.data;
    }
  }

  #checkHead(): void {
    if (this.#bufferStart + this.#position > this.#maxBytesBeforePart) {
      throw new MultipartError(`a part must begin within the first ${this.#maxBytesBeforePart} bytes of the form`);
    }
  }

  /** The next chunk from the source, or null at its end. */
  async #read(): Promise<Uint8Array | null> {
    if (this.#eof) return null;
    const chunk = await this.#source.read();
    if (chunk === null) {
      this.#eof = true;
      return null;
    }
    this.#bytesRead += chunk.length;
    return chunk;
  }

  /** Takes `chunk` (which starts at body offset `start`) as the buffer to read from. */
  #adopt(chunk: Uint8Array, start: number): void {
    this.#buffer = chunk;
    this.#position = 0;
    this.#bufferStart = start;
  }

  /**
   * Data up to the next delimiter, or as much as is known not to be part of one; the delimiter
   * itself is consumed. Null at the end of the body (what remains in the carry is then data
   * that ran into the end, which every caller treats as an error).
   */
  async #segment(): Promise<Segment | null> {
    const delimiter = this.#delimiter;
    const size = delimiter.length;
    for (;;) {
      if (this.#carry === null) {
        const buffer = this.#buffer;
        const from = this.#position;
        const at = findDelimiter(buffer, from, delimiter);
        if (at >= 0) {
          this.#position = at + size;
          return { data: buffer.subarray(from, at), delimiter: true };
        }
        const tail = delimiterPrefixAt(buffer, Math.max(from, buffer.length - size + 1), delimiter);
        this.#position = buffer.length;
        if (tail < buffer.length) this.#carry = buffer.subarray(tail);
        if (tail > from) return { data: buffer.subarray(from, tail), delimiter: false };
      }
      const carryStart = this.#bufferStart + this.#buffer.length - (this.#carry?.length ?? 0);
      const next = await this.#read();
      if (next === null) return null;
      const nextStart = this.#bytesRead - next.length;
      const carry = this.#carry;
      this.#carry = null;
      if (carry === null) {
        this.#adopt(next, nextStart);
        continue;
      }
      // Across the seam: the carry and the first bytes of the next chunk, copied together.
      const head = next.subarray(0, size - 1);
      const seam = new Uint8Array(carry.length + head.length);
      seam.set(carry);
      seam.set(head, carry.length);
      if (head.length < next.length) {
        const at = findDelimiter(seam, 0, delimiter);
        if (at >= 0 && at < carry.length) {
          this.#adopt(next, nextStart);
          this.#position = at + size - carry.length;
          return { data: carry.subarray(0, at), delimiter: true };
        }
        // No delimiter starts in the carry: it is data; the chunk is searched where it is.
        this.#adopt(next, nextStart);
        return { data: carry, delimiter: false };
      }
      // A chunk shorter than the delimiter: the seam is all there is; search it as the buffer.
      this.#adopt(seam, carryStart);
    }
  }

  /** The byte at the position, consumed, reading the next chunk if needed; the carry is empty here. */
  async #takeByte(): Promise<number> {
    while (this.#position >= this.#buffer.length) {
      const next = await this.#read();
      if (next === null) throw new MultipartError('the multipart body ends after a boundary line');
      this.#adopt(next, this.#bytesRead - next.length);
    }
    return this.#buffer[this.#position++] as number;
  }

  /**
   * A part's header block (up to "\r\n\r\n", consumed), at most MAX_HEADER_BYTES. Found in place
   * when the block lies in one chunk; gathered (in a buffer that doubles) only when it spans several.
   */
  async #readHeaders(): Promise<string> {
    let gathered = new Uint8Array(0);
    let length = 0;
    for (;;) {
      const window = this.#buffer.subarray(this.#position, this.#position + MAX_HEADER_BYTES + 4 - length);
      if (length === 0) {
        const end = indexOfSequence(window, HEADER_END, 0);
        if (end >= 0) {
          this.#position += end + 4;
          return new TextDecoder().decode(window.subarray(0, end));
        }
      }
      if (length + window.length > gathered.length) {
        const bigger = new Uint8Array(Math.max(256, 2 * (length + window.length)));
        bigger.set(gathered.subarray(0, length));
        gathered = bigger;
      }
      gathered.set(window, length);
      const searchFrom = Math.max(0, length - 3);
      length += window.length;
      const end = length > window.length ? indexOfSequence(gathered.subarray(0, length), HEADER_END, searchFrom) : -1;
      if (end >= 0) {
        this.#position += end + 4 - (length - window.length);
        return new TextDecoder().decode(gathered.subarray(0, end));
      }
      this.#position += window.length;
      if (length > MAX_HEADER_BYTES) throw new MultipartError('multipart part headers are missing or too long');
      const next = await this.#read();
      if (next === null) throw new MultipartError('multipart part headers are missing or too long');
      this.#adopt(next, this.#bytesRead - next.length);
    }
  }
}

function streamSource(stream: ReadableStream<Uint8Array>): ByteSource {
  const reader = stream.getReader();
  return {
    async read() {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
  };
}

/**
 * Index of the delimiter at or after `from`, or -1. Candidates are found by the native indexOf of
 * its first byte (a carriage return); since the rest of the delimiter holds none, a failed
 * comparison never hides the start of the next candidate.
 */
function findDelimiter(haystack: Uint8Array, from: number, delimiter: Uint8Array): number {
  const last = haystack.length - delimiter.length;
  let i = haystack.indexOf(CR, from);
  while (i >= 0 && i <= last) {
    let j = 1;
    while (j < delimiter.length && haystack[i + j] === delimiter[j]) j++;
    if (j === delimiter.length) return i;
    i = haystack.indexOf(CR, i + j);
  }
  return -1;
}

/** The first index at or after `from` where the buffer's remaining bytes begin the delimiter, or the buffer's length. */
function delimiterPrefixAt(haystack: Uint8Array, from: number, delimiter: Uint8Array): number {
  let i = haystack.indexOf(CR, from);
  while (i >= 0) {
    let j = 1;
    while (i + j < haystack.length && haystack[i + j] === delimiter[j]) j++;
    if (i + j === haystack.length) return i;
    i = haystack.indexOf(CR, i + j);
  }
  return haystack.length;
}

function indexOfSequence(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0] as number;
  const last = haystack.length - needle.length;
  let i = haystack.indexOf(first, from);
  while (i >= 0 && i <= last) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
    i = haystack.indexOf(first, i + 1);
  }
  return -1;
}

function parsePartHeaders(text: string): MultipartPart {
  let name: string | null = null;
  let filename: string | null = null;
  let contentType: string | null = null;
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const header = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (header === 'content-type') contentType = value;
    if (header !== 'content-disposition') continue;
    name = /;\s*name="([^"]*)"/i.exec(value)?.[1] ?? /;\s*name=([^\s;]+)/i.exec(value)?.[1] ?? null;
    const extended = /;\s*filename\*=(?:UTF-8|utf-8)''([^\s;]+)/.exec(value)?.[1];
    if (extended !== undefined) {
      try {
        filename = decodeURIComponent(extended);
      } catch {
        filename = null;
      }
    }
    filename ??= /;\s*filename="([^"]*)"/i.exec(value)?.[1] ?? /;\s*filename=([^\s;]+)/i.exec(value)?.[1] ?? null;
  }
  if (name === null) throw new MultipartError('a multipart part has no Content-Disposition name');
  return { name, filename, contentType };
}
