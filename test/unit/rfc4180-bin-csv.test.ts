import { describe, expect, it } from 'vitest';
import { detectBinFormat, expandRanges, parseBinRow, parseRangeRow, detectRangeFormat } from '../../src/services/bin-lookup/import-formats';
import { CsvParser, CsvTooLargeError, readCsv } from '../../src/lib/rfc4180-reader';

function streamOf(...parts: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(encoder.encode(part));
      controller.close();
    },
  });
}

async function records(stream: ReadableStream<Uint8Array>, maxBytes = 1_000_000) {
  const out = [];
  for await (const record of readCsv(stream, maxBytes)) out.push(record);
  return out;
}

describe('readCsv', () => {
  it('reads quoted commas, doubled quotes, CRLF and line breaks inside quotes, across chunk boundaries', async () => {
    const out = await records(streamOf('\uFEFFa,b\r\n"UNIBANCA, S', '.A","say ""hi"""\r', '\n"two\nlines",x\n', 'last,row'));
    expect(out).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['UNIBANCA, S.A', 'say "hi"'] },
      { line: 3, fields: ['two\nlines', 'x'] },
      { line: 5, fields: ['last', 'row'] },
    ]);
  });

  it('stops with CsvTooLargeError past the byte limit', async () => {
    await expect(records(streamOf('a,b\n', '1,2\n'), 5)).rejects.toBeInstanceOf(CsvTooLargeError);
  });

  it('parses incrementally', () => {
    const parser = new CsvParser();
    expect(parser.push('x,"y')).toEqual([]);
    expect(parser.push('"\n')).toEqual([{ line: 1, fields: ['x', 'y'] }]);
    expect(parser.end()).toEqual([]);
  });
});

describe('BIN CSV formats', () => {
  it('recognises the three formats by header', () => {
    const own = detectBinFormat(['bin', 'card_brand', 'country']);
    const binlist = detectBinFormat('BIN,Brand,Type,Category,Issuer,IssuerPhone,IssuerUrl,isoCode2,isoCode3,CountryName'.split(','));
    const openbiin = detectBinFormat('BIN6,Ranges,Issuer,Country,Brand,Type'.split(','));
    expect(own.ok && own.layout.format).toBe('binbatch');
    expect(binlist.ok && binlist.layout.format).toBe('binlist');
    expect(openbiin.ok && openbiin.layout.format).toBe('openbiin');
  });

  it('rejects an unknown header, naming what it expected', () => {
    const result = detectBinFormat(['prefix', 'scheme']);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain('unrecognised header');
    const extra = detectBinFormat(['bin', 'is_surchargeable']);
    expect(!extra.ok && extra.reason).toContain('is_surchargeable');
  });

  it('reads a binlist row: level and prepaid from Category, country from isoCode2, 5-digit BINs padded', () => {
    const header = detectBinFormat('BIN,Brand,Type,Category,Issuer,IssuerPhone,IssuerUrl,isoCode2,isoCode3,CountryName'.split(','));
    if (!header.ok) throw new Error(header.reason);
    const row = parseBinRow(header.layout, ['41234', 'VISA', 'DEBIT', 'PREPAID RELOADABLE', 'EXAMPLE BANK', '', '', 'us', 'USA', 'United States']);
    expect(row).toEqual({
      ok: true,
      records: [
        {
          prefix: '041234',
          payment_method_type: 'card',
          card_brand: 'visa',
          issuing_bank: 'EXAMPLE BANK',
          card_type: 'debit',
          card_level_generic: 'prepaid reloadable',
          country: 'US',
          prepaid: true,
          commercial: false,
          currency: null,
        },
      ],
    });
    const business = parseBinRow(header.layout, ['555500', 'MASTERCARD', 'CREDIT', 'BUSINESS', 'X', '', '', 'GB', 'GBR', 'UK']);
    expect(business.ok && business.records[0]?.commercial).toBe(true);
  });

  it('expands OpenBIIN ranges to 8-digit prefixes', () => {
    expect(expandRanges('457100', '00-99')).toEqual(['457100']);
    expect(expandRanges('457100', '00-02|40')).toEqual(['45710000', '45710001', '45710002', '45710040']);
    expect(() => expandRanges('457100', '5-9')).toThrow(/NN-NN/);
  });

  it('reports a bad row of the own format with the field and never echoes the digits', () => {
    const header = detectBinFormat(['bin', 'card_type', 'country']);
    if (!header.ok) throw new Error(header.reason);
    const pan = parseBinRow(header.layout, ['4111111111111111', 'credit', 'US']);
    expect(pan).toEqual({ ok: false, reason: 'bin must be 6 to 11 digits (got 16 characters)' });
    expect(parseBinRow(header.layout, ['411111', 'gold', 'US'])).toMatchObject({ ok: false, reason: expect.stringContaining('card_type') });
    expect(parseBinRow(header.layout, ['411111', 'credit', 'USA'])).toMatchObject({ ok: false, reason: expect.stringContaining('country') });
    expect(parseBinRow(header.layout, ['411111', 'credit'])).toEqual({ ok: false, reason: 'expected 3 fields, found 2' });
  });

  it('pads account range bounds to 19 digits and keeps a range inside one BIN', () => {
    const header = detectRangeFormat(['low', 'high', 'issuing_bank']);
    if (!header.ok) throw new Error(header.reason);
    const ok = parseRangeRow(header.layout, ['41111150', '41111159', 'Range Bank']);
    expect(ok.ok && ok.records[0]).toMatchObject({ low: '4111115000000000000', high: '4111115999999999999', issuing_bank: 'Range Bank' });
    expect(parseRangeRow(header.layout, ['411111', '411112', ''])).toMatchObject({ ok: false });
    expect(parseRangeRow(header.layout, ['41111159', '41111150', ''])).toMatchObject({ ok: false, reason: 'low must not be above high' });
  });
});
