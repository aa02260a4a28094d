import { describe, expect, it } from 'vitest';
import { ContentNormalizer } from '../../src/lib/content-normalizer';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** The normalised text of `text` sent in chunks of `size` bytes. */
function normalised(text: string | Uint8Array, size: number): string {
  const bytes = typeof text === 'string' ? encoder.encode(text) : text;
  const normalizer = new ContentNormalizer();
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(normalizer.push(bytes.subarray(at, at + size)));
  parts.push(normalizer.finish());
  return parts.map((part) => decoder.decode(part, { stream: true })).join('') + decoder.decode();
}

const BOM = '\ufeff';
const rows = ['"transaction_type","amount"', '"sale","100"', '"sale","200"'];

describe('ContentNormalizer', () => {
  it('gives the same bytes for the same rows with CRLF or LF, with or without a BOM and a final newline, in any chunking', () => {
    const variants = [
      rows.join('\n') + '\n',
      rows.join('\n'),
      rows.join('\r\n') + '\r\n',
      rows.join('\r\n'),
      BOM + rows.join('\n') + '\n',
      BOM + rows.join('\r\n'),
    ];
    for (const size of [1, 2, 3, 5, 7, 1024]) {
      for (const variant of variants) expect(normalised(variant, size), `${JSON.stringify(variant)} in chunks of ${size}`).toBe(rows.join('\n'));
    }
  });

  it('keeps what differs: other rows, a lone CR, a blank line in the middle, a BOM that is not at the start', () => {
    expect(normalised(rows.join('\n').replace('200', '201'), 4)).not.toBe(rows.join('\n'));
    expect(normalised('a\rb\n', 1)).toBe('a\rb');
    expect(normalised('a\n\nb\n', 1)).toBe('a\n\nb');
    expect(normalised(`a${BOM}b`, 2)).toBe(`a${BOM}b`);
    expect(normalised('a\r', 1)).toBe('a');
    expect(normalised('ab', 1)).toBe('ab');
    expect(normalised('', 1)).toBe('');
  });
});
