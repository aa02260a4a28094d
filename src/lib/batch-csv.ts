/**
 * The batch CSV format (docs/batch.md), at the byte level: every field wrapped in double quotes with no
 * quote inside, fields separated by commas, rows ended by "\n" ("\r\n" accepted), a UTF-8 BOM
 * tolerated. Because the format is this strict, a general CSV parser buys nothing and costs what we
 * need most: a scanner over raw bytes knows the byte offset of every row (chunk boundaries for R2
 * range reads) and checks the whole structure, UTF-8 included, in one pass without decoding the
 * file or holding more than the header. See docs/batch.md, "Why a hand-written scanner".
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
const BOM = [0xef, 0xbb, 0xbf];

/** A structural problem: the whole file is rejected with `line N: msg`. */
export interface CsvProblem {
  ok: false;
  /** 1-based line number (header = line 1); 0 when the problem is not on one line. */
  line: number;
  msg: string;
}

/** A run of consecutive data rows, addressed by byte range in the stored file. */
export interface CsvChunk {
  index: number;
  offset: number;
  length: number;
  firstLine: number;
  rows: number;
}

/** Where a chunk's rows are in the uploaded file: what a chunk message carries (never row data). */
export type ChunkLocation = Pick<CsvChunk, 'index' | 'offset' | 'length' | 'firstLine'>;

export interface CsvScanResult {
  ok: true;
  columns: string[];
  /** Data rows, header excluded. */
  rows: number;
  chunks: CsvChunk[];
}

export interface CsvScanOptions {
  /** Data rows per chunk. */
  chunkRows: number;
  /** Longest row accepted, in bytes, line end included. */
  maxRowBytes: number;
  /** Checks the header's column names; answers a message naming the problem, or null. */
  checkHeader: (columns: string[]) => string | null;
}

export function problemMessage(problem: CsvProblem): string {
  return problem.line > 0 ? `line ${problem.line}: ${problem.msg}` : problem.msg;
}

const enum State {
  FieldStart,
  InField,
  AfterField,
  ExpectLf,
}

/**
 * Streaming structure check. Feed the file's bytes in order with `push`, then call `finish`.
 * Either answers a problem as soon as one is seen; after a problem the scanner must not be fed.
 */
export class CsvScanner {
  readonly #options: CsvScanOptions;
  #state = State.FieldStart;
  /** Bytes seen so far: the offset of the next byte in the stored file. */
  #offset = 0;
  #bomChecked = false;
  #line = 1;
  #rowStart = 0;
  #fieldCount = 0;
  /** Header's field count, known once line 1 ends. */
  #expectedFields = 0;
  #columns: string[] | null = null;
  #headerBytes: number[] = [];
  /** A blank line is fine only at the very end of the file. */
  #blankLine = 0;
  /** UTF-8: continuation bytes still expected, and the allowed range of the next one. */
  #utfNeed = 0;
  #utfLo = 0x80;
  #utfHi = 0xbf;
  #rows = 0;
  #lastRowEnd = 0;
  #chunks: CsvChunk[] = [];

  constructor(options: CsvScanOptions) {
    this.#options = options;
  }

  /** Data rows completed so far. */
  get rows(): number {
    return this.#rows;
  }

  /** The header's column names, once its line has been read. */
  get columns(): readonly string[] | null {
    return this.#columns;
  }

  push(bytes: Uint8Array): CsvProblem | null {
    let i = 0;
    if (!this.#bomChecked) {
      // The BOM must arrive in the first push; a split BOM across pushes is not worth handling
      // (every stream we read delivers far more than 3 bytes first).
      this.#bomChecked = true;
      if (bytes.length >= 3 && bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2]) {
        i = 3;
        this.#rowStart = 3;
      }
    }
    const base = this.#offset;
    const n = bytes.length;
    const inHeader = this.#columns === null;
    for (; i < n; i++) {
      const b = bytes[i] as number;
      if (inHeader && this.#columns === null) this.#headerBytes.push(b);
      switch (this.#state) {
        case State.InField:
          if (b === QUOTE) {
            if (this.#utfNeed > 0) return this.#problem('not valid UTF-8');
            this.#fieldCount++;
            this.#state = State.AfterField;
          } else if (b === LF || b === CR) {
            return this.#problem(`field ${this.#fieldCount + 1} is not closed by a double quote`);
          } else if (b >= 0x80 || this.#utfNeed > 0) {
            if (!this.#utf8(b)) return this.#problem('not valid UTF-8');
          }
          break;
        case State.FieldStart:
          if (b === QUOTE) {
            if (this.#blankLine > 0) return { ok: false, line: this.#blankLine, msg: 'empty line' };
            this.#state = State.InField;
          } else if (this.#fieldCount === 0 && (b === LF || b === CR) && this.#columns !== null) {
            // A blank line: remembered, and an error only if a row follows it.
            if (b === CR) {
              this.#state = State.ExpectLf;
              break;
            }
            if (this.#blankLine === 0) this.#blankLine = this.#line;
            this.#line++;
            this.#rowStart = base + i + 1;
          } else {
            return this.#problem(`field ${this.#fieldCount + 1} is not wrapped in double quotes`);
          }
          break;
        case State.AfterField:
          if (b === COMMA) {
            this.#state = State.FieldStart;
          } else if (b === LF) {
            const problem = this.#endRow(base + i + 1);
            if (problem) return problem;
          } else if (b === CR) {
            this.#state = State.ExpectLf;
          } else {
            return this.#problem(`a double quote inside field ${this.#fieldCount}`);
          }
          break;
        case State.ExpectLf:
          if (b !== LF) return this.#problem('a carriage return not followed by a line feed');
          if (this.#fieldCount === 0) {
            // The "\r\n" of a blank line.
            if (this.#blankLine === 0) this.#blankLine = this.#line;
            this.#line++;
            this.#rowStart = base + i + 1;
            this.#state = State.FieldStart;
          } else {
            const problem = this.#endRow(base + i + 1);
            if (problem) return problem;
          }
          break;
      }
      if (base + i + 1 - this.#rowStart > this.#options.maxRowBytes) {
        return this.#problem(`row longer than ${this.#options.maxRowBytes} bytes`);
      }
    }
    this.#offset = base + n;
    return null;
  }

  finish(): CsvScanResult | CsvProblem {
    if (this.#state === State.InField) {
      return this.#problem(`field ${this.#fieldCount + 1} is not closed by a double quote`);
    }
    if (this.#state === State.ExpectLf) return this.#problem('a carriage return not followed by a line feed');
    if (this.#state === State.AfterField) {
      // The last row lacks its "\n": accepted, as spreadsheet exports often omit it.
      const problem = this.#endRow(this.#offset);
      if (problem) return problem;
    } else if (this.#fieldCount > 0) {
      return this.#problem(`field ${this.#fieldCount + 1} is not wrapped in double quotes`);
    }
    if (this.#columns === null) return { ok: false, line: 0, msg: 'the file is empty' };
    if (this.#rows === 0) return { ok: false, line: 0, msg: 'the file has a header but no data rows' };
    const last = this.#chunks[this.#chunks.length - 1];
    if (last) last.length = this.#lastRowEnd - last.offset;
    return { ok: true, columns: this.#columns, rows: this.#rows, chunks: this.#chunks };
  }

  #endRow(nextOffset: number): CsvProblem | null {
    if (this.#columns === null) {
      const problem = this.#readHeader();
      if (problem) return problem;
    } else {
      if (this.#fieldCount !== this.#expectedFields) {
        return this.#problem(`expected ${this.#expectedFields} fields, found ${this.#fieldCount}`);
      }
      if (this.#rows % this.#options.chunkRows === 0) {
        const previous = this.#chunks[this.#chunks.length - 1];
        if (previous) previous.length = this.#rowStart - previous.offset;
        this.#chunks.push({ index: this.#chunks.length, offset: this.#rowStart, length: 0, firstLine: this.#line, rows: 0 });
      }
      const current = this.#chunks[this.#chunks.length - 1];
      if (current) current.rows++;
      this.#rows++;
      this.#lastRowEnd = nextOffset;
    }
    this.#line++;
    this.#fieldCount = 0;
    this.#rowStart = nextOffset;
    this.#state = State.FieldStart;
    return null;
  }

  #readHeader(): CsvProblem | null {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(new Uint8Array(this.#headerBytes));
    } catch {
      return this.#problem('not valid UTF-8');
    }
    this.#headerBytes = [];
    const columns = splitQuotedLine(text.replace(/\r?\n$/, ''));
    const msg = this.#options.checkHeader(columns);
    if (msg !== null) return this.#problem(msg);
    this.#columns = columns;
    this.#expectedFields = columns.length;
    return null;
  }

  #utf8(b: number): boolean {
    if (this.#utfNeed > 0) {
      if (b < this.#utfLo || b > this.#utfHi) return false;
      this.#utfNeed--;
      this.#utfLo = 0x80;
      this.#utfHi = 0xbf;
      return true;
    }
    // Lead bytes per RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF.
    if (b >= 0xc2 && b <= 0xdf) this.#utfNeed = 1;
    else if (b === 0xe0) [this.#utfNeed, this.#utfLo] = [2, 0xa0];
    else if (b === 0xed) [this.#utfNeed, this.#utfHi] = [2, 0x9f];
    else if (b >= 0xe1 && b <= 0xef) this.#utfNeed = 2;
    else if (b === 0xf0) [this.#utfNeed, this.#utfLo] = [3, 0x90];
    else if (b === 0xf4) [this.#utfNeed, this.#utfHi] = [3, 0x8f];
    else if (b >= 0xf1 && b <= 0xf3) this.#utfNeed = 3;
    else return false;
    return true;
  }

  #problem(msg: string): CsvProblem {
    return { ok: false, line: this.#line, msg };
  }
}

/**
 * Splits one already-validated line (no line end) into its field values: the structure check has
 * guaranteed `"a","b"` form, so stripping the outer quotes and splitting on `","` is exact.
 */
export function splitQuotedLine(line: string): string[] {
  const text = line.charCodeAt(0) === 0xfeff ? line.slice(1) : line;
  if (text.length < 2) return [];
  return text.slice(1, -1).split('","');
}

export interface CsvRow {
  line: number;
  fields: string[];
}

/** The rows of a chunk read back from R2 (validated at upload), with their file line numbers. */
export function parseChunkRows(text: string, firstLine: number): CsvRow[] {
  const rows: CsvRow[] = [];
  let line = firstLine;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    let stop = end;
    if (stop > start && text.charCodeAt(stop - 1) === 13) stop--;
    if (stop > start) rows.push({ line, fields: splitQuotedLine(text.slice(start, stop)) });
    line++;
    start = end + 1;
  }
  return rows;
}

/**
 * Text a spreadsheet would run as a formula (OWASP "CSV injection"): a cell starting with "=", "+",
 * "-", "@", a tab or a carriage return, also after leading spaces. Such a cell gets a leading "'",
 * which spreadsheets show as plain text and never evaluate.
 */
const FORMULA_START = /^ *[=+\-@\t\r]/;
/** What a numeric column may hold unchanged: an integer or decimal, negative ones included. */
const NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;

/**
 * One result line: every field wrapped in double quotes like the input. A value holding a double
 * quote has it doubled (RFC 4180) and a line break becomes a space, so one row stays one line.
 * Every field is formula-safe: `numeric[i]` marks the columns that hold numbers, whose numbers
 * (negative amounts too) are written as they are; anything else that reads as a formula, in any
 * column, is neutralised with a leading "'".
 */
export function toCsvLine(
  values: readonly (string | number | boolean | null | undefined)[],
  numeric: readonly boolean[] = [],
): string {
  let out = '';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    let text = value === null || value === undefined ? '' : String(value);
    const isNumber = numeric[i] === true && (typeof value === 'number' ? Number.isFinite(value) : NUMBER.test(text));
    if (!isNumber && FORMULA_START.test(text)) text = `'${text}`;
    if (/["\r\n]/.test(text)) text = text.replace(/"/g, '""').replace(/\r\n|\r|\n/g, ' ');
    if (!isNumber && FORMULA_START.test(text)) text = `'${text}`;
    out += i === 0 ? `"${text}"` : `,"${text}"`;
  }
  return out + '\n';
}
