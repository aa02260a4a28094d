/** One piece of a concatenated stream: bytes, a stream to copy through, or null when there is nothing more. */
export type StreamPiece = Uint8Array | ReadableStream<Uint8Array> | null;

/**
 * The pieces `nextPiece` gives, one after another, pulled only as the reader reads: at most one
 * piece is open at a time, so nothing is assembled in memory. `nextPiece` answering null ends the
 * stream; throwing errors it. Cancelling cancels the open piece.
 */
export function concatenatedStream(nextPiece: () => Promise<StreamPiece>): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (reader) {
          const { done, value } = await reader.read();
          if (!done) {
            controller.enqueue(value);
            return;
          }
          reader = null;
        }
        const piece = await nextPiece();
        if (piece === null) {
          controller.close();
          return;
        }
        if (piece instanceof Uint8Array) {
          controller.enqueue(piece);
          return;
        }
        reader = piece.getReader();
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}
