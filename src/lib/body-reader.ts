/**
 * A request body read chunk by chunk with every byte counted against a limit, whether or not the
 * client sent a Content-Length (a chunked body announces nothing), and finished in the way workerd
 * expects when the answer comes before the body's end.
 *
 * workerd lets a Worker answer before reading the body: an untouched body is drained by the
 * runtime. But once a Worker has started reading a body, answering while the rest is still
 * arriving (cancelled or merely left unread) loses the connection: under `wrangler dev` the
 * client sees a 500 "Network connection lost" instead of the 400 or 413 that was sent. So an
 * upload refused early reads what is left and drops it (`discardRest`) before answering, up to
 * the same limit; only a body larger than that is cut off.
 */

export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
  constructor(readonly limit: number) {
    super(`the request body exceeds ${limit} bytes`);
  }
}

/**
 * The request body broke off before its end: the client went away (closed the connection, aborted
 * the upload). workerd reports it as an Error "Network connection lost."; it is the client's doing,
 * logged as a client abort (errors.ts answers 499), never as a server error.
 */
export class ClientAbortError extends Error {
  override name = 'ClientAbortError';
  constructor(readonly bytesRead: number) {
    super('the client closed the connection before the request body ended');
  }
}

export class BodyReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #limit: number;
  #bytesRead = 0;
  #ended = false;

  constructor(body: ReadableStream<Uint8Array>, limit: number) {
    this.#reader = body.getReader();
    this.#limit = limit;
  }

  get bytesRead(): number {
    return this.#bytesRead;
  }

  /** The next chunk, or null at the end of the body. Throws BodyTooLargeError once past the limit. */
  async read(): Promise<Uint8Array | null> {
    if (this.#ended) return null;
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await this.#reader.read();
    } catch {
      // Only the request body is read here: its stream fails when the client's connection does.
      this.#ended = true;
      throw new ClientAbortError(this.#bytesRead);
    }
    const { done, value } = next;
    if (done) {
      this.#ended = true;
      return null;
    }
    this.#bytesRead += value.length;
    if (this.#bytesRead > this.#limit) throw new BodyTooLargeError(this.#limit);
    return value;
  }

  /** The chunks as an async iterable; stopping early leaves the rest for `discardRest`. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    for (let chunk = await this.read(); chunk !== null; chunk = await this.read()) yield chunk;
  }

  /**
   * Reads what is left of the body and drops it, so that the answer can follow. Past the limit
   * the rest is cancelled instead. Never throws: a client that went away has nothing to drain.
   */
  async discardRest(): Promise<void> {
    try {
      while (!this.#ended) {
        if (this.#bytesRead > this.#limit) {
          this.#ended = true;
          await this.#reader.cancel();
          return;
        }
        const { done, value } = await this.#reader.read();
        if (done) this.#ended = true;
        else this.#bytesRead += value.length;
      }
    } catch {
      this.#ended = true;
    }
  }
}
