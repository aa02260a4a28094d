/**
 * The rows of a batch file as it streams (the header is line 1), one at a time, for checks that need field values
 * while the file is read (the structure itself is CsvScanner's: fed the same bytes first, it has
 * refused any row this could misread). Holds at most one row's bytes (rows are at most 64 KiB).
 */
import { splitQuotedLine, type CsvRow } from './batch-csv';

export class RowTap {
  #pending: Uint8Array[] = [];
  #line = 1;
  readonly #decoder = new TextDecoder('utf-8');

  constructor(readonly onRow: (row: CsvRow) => string | null) {}

  /** Feeds bytes; answers the first problem a row callback reported, or null. */
  push(bytes: Uint8Array): string | null {
    let start = 0;
    for (;;) {
      const end = bytes.indexOf(10, start);
      if (end === -1) {
        // Copied: the caller may reuse its buffer for the next bytes.
        if (start < bytes.length) this.#pending.push(bytes.slice(start));
        return null;
      }
      this.#pending.push(bytes.subarray(start, end));
      const problem = this.#endLine();
      if (problem) return problem;
      start = end + 1;
    }
  }

  /** The last row, when the file does not end with a line feed. */
  finish(): string | null {
    return this.#pending.length > 0 ? this.#endLine() : null;
  }

  #endLine(): string | null {
    const parts = this.#pending;
    this.#pending = [];
    const line = this.#line++;
    let size = 0;
    for (const part of parts) size += part.length;
    if (size === 0) return null;
    const joined = parts.length === 1 ? (parts[0] as Uint8Array) : concat(parts, size);
    let text = this.#decoder.decode(joined);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text === '') return null;
    return this.onRow({ line, fields: splitQuotedLine(text) });
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * A RowTap for the files whose header `wants` one: the bytes before the header is known are held
 * (the header is at most one 64 KiB row), and a file that does not want it is never decoded.
 */
export class GatedRowTap {
  #held: Uint8Array[] | null = [];
  #tap: RowTap | null = null;

  constructor(
    readonly wants: (columns: readonly string[]) => boolean,
    readonly onRow: (row: CsvRow) => string | null,
  ) {}

  /** `columns`: the header as read so far by the structure check (null until its line is). */
  push(bytes: Uint8Array, columns: readonly string[] | null): string | null {
    if (this.#held !== null) {
      if (columns === null) {
        this.#held.push(bytes.slice());
        return null;
      }
      const held = this.#held;
      this.#held = null;
      if (!this.wants(columns)) return null;
      this.#tap = new RowTap(this.onRow);
      for (const part of held) {
        const problem = this.#tap.push(part);
        if (problem) return problem;
      }
    }
    return this.#tap?.push(bytes) ?? null;
  }

  finish(): string | null {
    return this.#tap?.finish() ?? null;
  }
}
