/**
 * A small streaming multipart/form-data reader (RFC 7578). `request.formData()` and the maintained
 * parsers we looked at (@remix-run/multipart-parser and form-data-parser) hold a whole file part in
 * memory; a 100 MB batch file must instead flow to R2 a few kilobytes at a time. This reader pulls
 * from the body only as fast as the caller consumes a part, holding at most one network chunk plus
 * a delimiter's worth of bytes. See docs/batch.md, "Why a hand-written multipart reader".
 */

const encoder = new TextEncoder();
const MAX_HEADER_BYTES = 16 * 1024;

export class MultipartError extends Error {
  override name = 'MultipartError';
}

export interface MultipartPart {
  name: string;
  filename: string | null;
  contentType: string | null;
}

/** The boundary parameter of a multipart/form-data Content-Type, or null. */
export function multipartBoundary(contentType: string): string | null {
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match ? (match[1] ?? match[2] ?? null) : null;
}

export class MultipartReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  /** "\r\n--boundary": the body is read as if it began with "\r\n", so the first delimiter is no special case. */
  readonly #delimiter: Uint8Array;
  #buffer: Uint8Array = encoder.encode('\r\n');
  #position = 0;
  #eof = false;
  #state: 'preamble' | 'body' | 'between' | 'done' = 'preamble';

  constructor(body: ReadableStream<Uint8Array>, boundary: string) {
    this.#reader = body.getReader();
    this.#delimiter = encoder.encode(`\r\n--${boundary}`);
  }

  /** Moves to the next part (skipping what is left of the current one); null after the last. */
  async nextPart(): Promise<MultipartPart | null> {
    if (this.#state === 'body') for await (const _ of this.body()) void _;
    if (this.#state === 'preamble') {
      const at = await this.#find(this.#delimiter, Number.POSITIVE_INFINITY);
      if (at < 0) throw new MultipartError('the multipart body has no boundary line');
      this.#position = at + this.#delimiter.length;
      this.#state = 'between';
    }
    if (this.#state === 'done') return null;
    // After a delimiter: "--" ends the body, "\r\n" starts a part's headers.
    while (this.#buffer.length - this.#position < 2) {
      if (!(await this.#fill())) throw new MultipartError('the multipart body ends after a boundary line');
    }
    const first = this.#buffer[this.#position];
    const second = this.#buffer[this.#position + 1];
    if (first === 0x2d && second === 0x2d) {
      this.#state = 'done';
      return null;
    }
    if (first !== 0x0d || second !== 0x0a) throw new MultipartError('malformed multipart boundary line');
    this.#position += 2;
    const end = await this.#find(encoder.encode('\r\n\r\n'), MAX_HEADER_BYTES);
    if (end < 0) throw new MultipartError('multipart part headers are missing or too long');
    const headers = new TextDecoder().decode(this.#buffer.subarray(this.#position, end));
    this.#position = end + 4;
    this.#state = 'body';
    return parsePartHeaders(headers);
  }

  /** The current part's bytes, pulled from the request as they are consumed. */
  async *body(): AsyncGenerator<Uint8Array> {
    if (this.#state !== 'body') return;
    const keep = this.#delimiter.length - 1;
    for (;;) {
      const at = indexOfSequence(this.#buffer, this.#delimiter, this.#position);
      if (at >= 0) {
        const last = this.#buffer.subarray(this.#position, at);
        this.#position = at + this.#delimiter.length;
        this.#state = 'between';
        if (last.length > 0) yield last;
        return;
      }
      // Everything but a possible delimiter prefix at the end is part data.
      const safe = this.#buffer.length - keep;
      if (safe > this.#position) {
        const data = this.#buffer.subarray(this.#position, safe);
        this.#position = safe;
        yield data;
      }
      if (!(await this.#fill())) throw new MultipartError('the multipart body ends inside a part');
    }
  }

  /** Stops reading the request body. */
  async cancel(): Promise<void> {
    await this.#reader.cancel();
  }

  /** Index of `needle` at or after the position, reading more as needed; -1 past `limit` bytes or at the end. */
  async #find(needle: Uint8Array, limit: number): Promise<number> {
    // Bytes after the position already known not to start a match (relative, so it survives #fill).
    let searched = 0;
    for (;;) {
      const at = indexOfSequence(this.#buffer, needle, this.#position + searched);
      if (at >= 0) return at;
      searched = Math.max(0, this.#buffer.length - this.#position - needle.length + 1);
      if (searched > limit) return -1;
      if (!(await this.#fill())) return -1;
    }
  }

  /** Appends the next network chunk to the unread bytes; false at the end of the body. */
  async #fill(): Promise<boolean> {
    if (this.#eof) return false;
    const { done, value } = await this.#reader.read();
    if (done) {
      this.#eof = true;
      return false;
    }
    const rest = this.#buffer.length - this.#position;
    const next = new Uint8Array(rest + value.length);
    next.set(this.#buffer.subarray(this.#position), 0);
    next.set(value, rest);
    this.#buffer = next;
    this.#position = 0;
    return true;
  }
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
