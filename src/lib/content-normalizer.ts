/**
 * The bytes a batch file's duplicate fingerprint is computed over: the file as sent, with a leading
 * UTF-8 byte order mark dropped, CRLF line endings written as LF, and the final line ending dropped.
 * So the same rows saved by another editor (Windows line endings, a BOM, no newline at the end) are
 * the same file to the duplicate guard, which exists to stop a file from being charged twice by
 * accident. A lone CR (no LF after it) is kept as it is. Streaming: each chunk is turned into its
 * normalised bytes as it arrives, holding back at most a CR and an LF (and the first 3 bytes, for
 * the BOM), so the file is never held whole.
 */
const CR = 0x0d;
const LF = 0x0a;
const BOM = [0xef, 0xbb, 0xbf] as const;
const EMPTY = new Uint8Array(0);

export class ContentNormalizer {
  /** The file's first bytes while fewer than a BOM's length have arrived. */
  #head: Uint8Array | null = new Uint8Array(0);
  /** The last chunk ended with a CR: whether it is a CRLF's depends on the next byte. */
  #carryCR = false;
  /** An LF held back: dropped if it turns out to be the file's last byte. */
  #heldLF = false;

  /** The normalised bytes of `chunk` (what can be decided of them so far). */
  push(chunk: Uint8Array): Uint8Array {
    let bytes = chunk;
    if (this.#head !== null) {
      const head = new Uint8Array(this.#head.length + bytes.length);
      head.set(this.#head);
      head.set(bytes, this.#head.length);
      if (head.length < BOM.length) {
        this.#head = head;
        return EMPTY;
      }
      this.#head = null;
      bytes = BOM.every((b, i) => head[i] === b) ? head.subarray(BOM.length) : head;
    }
    return this.#holdFinalLF(this.#crlfToLF(bytes));
  }

  /** What is left once the file has ended: the final line ending is dropped. */
  finish(): Uint8Array {
    if (this.#head !== null) {
      const head = this.#head;
      this.#head = null;
      // Under 3 bytes: only a BOM prefix of them would be odd; they are content.
      const out = this.#holdFinalLF(this.#crlfToLF(head));
      return this.#finishTail(out);
    }
    return this.#finishTail(EMPTY);
  }

  #finishTail(before: Uint8Array): Uint8Array {
    // A file ending in a lone CR ends with a line ending too: dropped like a final LF, after an LF held before it.
    const tail = this.#carryCR && this.#heldLF ? Uint8Array.of(LF) : EMPTY;
    this.#carryCR = false;
    this.#heldLF = false;
    if (before.length === 0) return tail;
    const out = new Uint8Array(before.length + tail.length);
    out.set(before);
    out.set(tail, before.length);
    return out;
  }

  #crlfToLF(bytes: Uint8Array): Uint8Array {
    if (bytes.length === 0) return bytes;
    // The common file (LF endings): nothing to rewrite, nothing copied.
    if (!this.#carryCR && bytes.indexOf(CR) === -1) return bytes;
    const out = new Uint8Array(bytes.length + 1);
    let n = 0;
    if (this.#carryCR) {
      this.#carryCR = false;
      if (bytes[0] !== LF) out[n++] = CR;
    }
    let start = 0;
    for (let cr = bytes.indexOf(CR); cr !== -1; cr = bytes.indexOf(CR, cr + 1)) {
      if (cr === bytes.length - 1) {
        out.set(bytes.subarray(start, cr), n);
        n += cr - start;
        this.#carryCR = true;
        return out.subarray(0, n);
      }
      if (bytes[cr + 1] === LF) {
        out.set(bytes.subarray(start, cr), n);
        n += cr - start;
        start = cr + 1;
      }
    }
    out.set(bytes.subarray(start), n);
    n += bytes.length - start;
    return out.subarray(0, n);
  }

  #holdFinalLF(bytes: Uint8Array): Uint8Array {
    if (bytes.length === 0) return bytes;
    const endsWithLF = bytes[bytes.length - 1] === LF;
    const body = endsWithLF ? bytes.subarray(0, bytes.length - 1) : bytes;
    let out = body;
    if (this.#heldLF) {
      out = new Uint8Array(body.length + 1);
      out[0] = LF;
      out.set(body, 1);
    }
    this.#heldLF = endsWithLF;
    return out;
  }
}
