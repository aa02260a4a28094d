/**
 * A streaming CSV reader (RFC 4180): quoted fields may hold commas, doubled quotes and line
 * breaks; lines end with LF or CRLF; a UTF-8 byte-order mark is dropped. Used for operator
 * imports, where datasets quote bank names such as "UNIBANCA, S.A".
 */

export interface CsvRecord {
  /** Line on which the record starts (1 = the first line). */
  line: number;
  fields: string[];
}

export class CsvTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
    this.name = 'CsvTooLargeError';
  }
}

/** Records of a byte stream, read as they arrive; throws CsvTooLargeError past maxBytes. */
export async function* readCsv(body: ReadableStream<Uint8Array>, maxBytes: number): AsyncGenerator<CsvRecord> {
  const decoder = new TextDecoder('utf-8');
  const parser = new CsvParser();
  let bytes = 0;
  let first = true;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) throw new CsvTooLargeError(maxBytes);
    let text = decoder.decode(chunk, { stream: true });
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    yield* parser.push(text);
  }
  yield* parser.push(decoder.decode());
  yield* parser.end();
}

/** Incremental parser state: push text as it comes, then end(). */
export class CsvParser {
  #field = '';
  #fields: string[] = [];
  #inQuotes = false;
  /** The last character was a quote inside a quoted field: a quote or the field's end follows. */
  #quotePending = false;
  #pendingCr = false;
  #line = 1;
  #recordLine = 1;
  #recordStarted = false;

  push(text: string): CsvRecord[] {
    const records: CsvRecord[] = [];
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (this.#pendingCr) {
        this.#pendingCr = false;
        if (ch === '\n') continue; // CRLF already ended the record
      }
      if (this.#inQuotes) {
        if (this.#quotePending) {
          this.#quotePending = false;
          if (ch === '"') {
            this.#field += '"';
            continue;
          }
          this.#inQuotes = false; // the quote closed the field; handle ch below
        } else if (ch === '"') {
          this.#quotePending = true;
          continue;
        } else {
          if (ch === '\n') this.#line++;
          this.#field += ch;
          continue;
        }
      }
      if (!this.#recordStarted) {
        this.#recordStarted = true;
        this.#recordLine = this.#line;
      }
      if (ch === ',') {
        this.#fields.push(this.#field);
        this.#field = '';
      } else if (ch === '\n' || ch === '\r') {
        records.push(this.#finishRecord());
        this.#line++;
        this.#pendingCr = ch === '\r';
      } else if (ch === '"' && this.#field === '') {
        this.#inQuotes = true;
      } else {
        this.#field += ch;
      }
    }
    return records;
  }

  end(): CsvRecord[] {
    if (this.#quotePending) {
      this.#quotePending = false;
      this.#inQuotes = false;
    }
    return this.#recordStarted || this.#field !== '' || this.#fields.length > 0 ? [this.#finishRecord()] : [];
  }

  #finishRecord(): CsvRecord {
    this.#fields.push(this.#field);
    const record = { line: this.#recordLine, fields: this.#fields };
    this.#field = '';
    this.#fields = [];
    this.#recordStarted = false;
    return record;
  }
}
