/**
 * How a ledger shard stores a transaction's current record (`states.record`) and an operation's
 * answer (`operations.answer`): raw DEFLATE, in a BLOB whose first byte names the encoding. A row
 * written before this is plain JSON text, and still reads: SQLite keeps a value's own type in a
 * column declared TEXT, so the value's type tells the encoding and no table changes.
 *
 * Why: these values are about 2 KB of JSON, more than a WITHOUT ROWID table keeps in its B-tree
 * cell (about 1 KB of a 4 KB page); the rest spilled into an overflow page of its own, mostly empty,
 * so a capture, void or refund cost about 5 KB of database. Compressed they are a few hundred bytes
 * and stay in the cell (docs/capacity.md, "One big merchant's day").
 *
 * Why synchronous codecs rather than the platform's CompressionStream: every reader of these rows
 * (an operation's claim and answer, a settlement run, a GET, the archive) reads them inside a
 * synchronous storage step that cannot await, and an answer is made inside that step from what it
 * read. Both ways use the runtime's native zlib (node:zlib: workerd turns Node compatibility on by
 * default from compatibility date 2026-08-04, and this Worker's is later, so no flag is set). A
 * JavaScript deflate (fflate, which wrote the first compressed rows) cost about 70 µs a record, most
 * of it fixed per call (its Huffman tables and about 170 KB of buffers), a fifth of a capture file's
 * CPU; the native one about 20 µs. Its raw DEFLATE is the same format, so those rows read as any
 * other. Raw DEFLATE rather than gzip: the same stream, less gzip's 18 bytes of header and trailer.
 *
 * A short value (an operation's answer kept as what differs from its page record, about 200 bytes)
 * is kept as its UTF-8 bytes, uncompressed: it fits in its cell either way, and deflating it saves
 * about 70 bytes for a cost per call that hardly depends on the input's length.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { utf8Bytes } from './pages';

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** The first byte of a stored value: the value's UTF-8 JSON as it is. */
const PLAIN = 0;
/** The first byte of a stored value: raw DEFLATE of the value's UTF-8 JSON. */
const DEFLATE_RAW = 1;
/**
 * Values of at most this many UTF-16 units (so at most three times as many UTF-8 bytes, 1,536, in
 * the worst case; JSON records are ASCII in practice) are kept PLAIN. A B-tree cell of a 4 KB page
 * holds about 1 KB of a WITHOUT ROWID row, so this keeps an ASCII value in its cell uncompressed.
 */
export const PLAIN_MAX_CHARS = 512;
/**
 * Level 6, zlib's default: at about 2 KB a value, higher levels save a few bytes for more CPU. A
 * 4 KB window (windowBits 12) and memLevel 5 rather than zlib's 32 KB and 8: a value is a few KB,
 * so it finds the same matches (the same bytes out, measured on packed records), and the smaller
 * tables it sets up and clears on every call cost about a quarter less CPU. Any raw DEFLATE stream
 * inflates with the default window, so rows written either way read the same.
 */
const DEFLATE_OPTIONS = { level: 6, windowBits: 12, memLevel: 5 } as const;

/**
 * A record awaiting settlement of at most this many UTF-8 bytes is stored as its JSON text, as rows
 * were before compression (decodeStored reads a string as itself): see encodeState.
 */
export const UNSETTLED_TEXT_MAX_BYTES = 800;

/**
 * A transaction's current record (`states.record`) as it is stored. Deflated (encodeStored), except
 * a record awaiting settlement (a capture's, most often) of at most UNSETTLED_TEXT_MAX_BYTES, kept
 * as its JSON text: the settlement run that settles it rewrites its state within a day, deflated,
 * so the text is held only until then, and each capture saves a zlib call (about 14 µs, the call
 * rather than the bytes: measured in workerd, whatever the level, window and memory level), a
 * sixth of a capture row's CPU in a batch file. It stays in its B-tree cell all the same: the rest
 * of a state row is about 130 bytes, and a WITHOUT ROWID row of a 4 KB page keeps about 1,000 in its
 * cell. A record at rest (settled, voided, refunded, declined) is always deflated: it is kept 548 days.
 */
export function encodeState(json: string, unsettled: boolean): string | ArrayBuffer {
  const text = unsettled && json.length <= UNSETTLED_TEXT_MAX_BYTES && utf8Bytes(json) <= UNSETTLED_TEXT_MAX_BYTES;
  return text ? json : encodeStored(json);
}

/** JSON text as it is stored: the encoding's byte, then the compressed bytes. */
export function encodeStored(json: string): ArrayBuffer {
  const short = json.length <= PLAIN_MAX_CHARS;
  if (short) {
    // ASCII (JSON records in practice) is as many bytes as characters: encoded in place after the
    // encoding's byte, one buffer and no copy; other text's UTF-8 is longer, so it does not all fit.
    const stored = new Uint8Array(json.length + 1);
    if (utf8.encodeInto(json, stored.subarray(1)).read === json.length) {
      stored[0] = PLAIN;
      return stored.buffer;
    }
  }
  const bytes = utf8.encode(json);
  const packed = short ? bytes : deflateRawSync(bytes, DEFLATE_OPTIONS);
  const stored = new Uint8Array(packed.length + 1);
  stored[0] = short ? PLAIN : DEFLATE_RAW;
  stored.set(packed, 1);
  return stored.buffer;
}

/** A stored value's JSON text: plain text as it was written before, or the BLOB encodeStored wrote. */
export function decodeStored(value: string | ArrayBuffer | Uint8Array): string {
  if (typeof value === 'string') return value;
  const bytes = value instanceof Uint8Array ? value : new Uint8Array(value);
  if (bytes[0] === PLAIN) return fromUtf8.decode(bytes.subarray(1));
  if (bytes[0] !== DEFLATE_RAW) throw new Error(`a stored record in an unknown encoding (${bytes[0] ?? 'empty'})`);
  return fromUtf8.decode(inflateRawSync(bytes.subarray(1)));
}

