import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { importBins } from '../../src/services/bin-lookup/import';
import { readDataVersion } from '../../src/storage/bins';
import { ADMIN_TOKEN, call, createMerchant, type TestMerchant } from '../helpers/api';
import { importCsv, lookupOk } from '../helpers/bins';

let merchant: TestMerchant;

beforeAll(async () => {
  merchant = await createMerchant();
});

function streamOf(text: string): ReadableStream<Uint8Array> {
  return new Response(text).body as ReadableStream<Uint8Array>;
}

describe('POST /admin/bins/import', () => {
  it("imports this service's own format, columns in any order, brand names normalised", async () => {
    const answer = await importCsv(
      ['country,bin,card_brand,card_type,issuing_bank,card_level_generic,prepaid,currency', 'US,370000,American Express,charge,Own Bank,platinum,false,usd'].join('\n'),
    );
    expect(answer).toEqual({ imported: 1, skipped: 0, errors: [] });
    expect(await lookupOk(merchant.secretKey, { bin: '370000' })).toEqual({
      bin: '370000',
      card_brand: 'amex',
      issuing_bank: 'Own Bank',
      card_type: 'charge',
      card_level_generic: 'platinum',
      country: 'US',
      payment_method_type: 'card',
      // The file had prepaid and currency (upper-cased), no commercial column: that flag is absent.
      is_prepaid: false,
      issuer_currency: 'USD',
    });
  });

  it('imports the binlist format: level from Category, country from isoCode2', async () => {
    const csv = [
      'BIN,Brand,Type,Category,Issuer,IssuerPhone,IssuerUrl,isoCode2,isoCode3,CountryName',
      '510000,MASTERCARD,CREDIT,WORLD ELITE,"BANK OF EXAMPLE, N.A.",,,US,USA,United States',
      '41000,VISA,DEBIT,CLASSIC,PADDED BANK,,,BR,BRA,Brazil',
    ].join('\r\n');
    expect(await importCsv(csv)).toEqual({ imported: 2, skipped: 0, errors: [] });
    expect(await lookupOk(merchant.secretKey, { bin: '510000' })).toMatchObject({
      card_brand: 'mastercard',
      issuing_bank: 'BANK OF EXAMPLE, N.A.',
      card_type: 'credit',
      card_level_generic: 'world elite',
      country: 'US',
    });
    expect(await lookupOk(merchant.secretKey, { bin: '041000' })).toMatchObject({ issuing_bank: 'PADDED BANK', country: 'BR' });
  });

  it('imports the OpenBIIN format, expanding Ranges into 8-digit prefixes', async () => {
    const csv = [
      'BIN6,Ranges,Issuer,Country,Brand,Type',
      '457100,00-10,Norway Bank,NO,visa,debit',
      '457100,40-45|51,Other Bank,DK,visa,debit',
      '360000,00-99,"Diners, Inc",US,diners club international,credit',
      '520000,00-99,,,mastercard,visa',
    ].join('\n');
    expect(await importCsv(csv)).toEqual({ imported: 4, skipped: 0, errors: [] });
    expect(await lookupOk(merchant.secretKey, { bin: '45710005' })).toMatchObject({ issuing_bank: 'Norway Bank', country: 'NO' });
    expect(await lookupOk(merchant.secretKey, { bin: '45710051' })).toMatchObject({ issuing_bank: 'Other Bank', country: 'DK' });
    // Digits 7-8 outside every block: no 6-digit record exists, the brand comes from the IIN ranges.
    expect(await lookupOk(merchant.secretKey, { bin: '45710020' })).toEqual({ bin: '45710020', card_brand: 'visa' });
    expect(await lookupOk(merchant.secretKey, { bin: '360000' })).toMatchObject({ card_brand: 'diners', issuing_bank: 'Diners, Inc', card_type: 'credit' });
    // A Type that is really a brand leaves the card type unknown.
    expect(await lookupOk(merchant.secretKey, { bin: '520000' })).toEqual({ bin: '520000', card_brand: 'mastercard', payment_method_type: 'card' });
  });

  it('reports bad rows with their line and imports the rest', async () => {
    const csv = ['bin,card_type,country', '600001,credit,US', '12345,credit,US', '600002,gold,US', '', '600003,debit', '600004,debit,CA'].join('\n');
    const answer = await importCsv(csv);
    expect(answer).toEqual({
      imported: 2,
      skipped: 3,
      errors: [
        { line: 3, msg: 'bin must be 6 to 11 digits (got 5 characters)' },
        { line: 4, msg: 'card_type must be one of credit, debit, charge, deferred_debit, prepaid (got "gold")' },
        { line: 6, msg: 'expected 3 fields, found 2' },
      ],
    });
    expect(await lookupOk(merchant.secretKey, { bin: '600004' })).toMatchObject({ country: 'CA' });
  });

  it('upserts: a later row for the same prefix replaces the whole record', async () => {
    await importCsv('bin,issuing_bank,card_level_generic,country\n650100,First Bank,gold,US');
    await importCsv('bin,issuing_bank,card_type,country\n650100,Second Bank,credit,MX');
    expect(await lookupOk(merchant.secretKey, { bin: '650100' })).toEqual({
      bin: '650100',
      card_brand: 'discover',
      issuing_bank: 'Second Bank',
      card_type: 'credit',
      country: 'MX',
      payment_method_type: 'card',
    });
  });

  it('bumps the data version on every import', async () => {
    const before = await readDataVersion(env.DB);
    await importCsv('bin,country\n650200,US');
    await importCsv('bin,country\n650201,US');
    expect(await readDataVersion(env.DB)).toBe(before + 2);
  });

  it('takes 50,000 rows in one request', async () => {
    const lines = ['bin,card_brand,issuing_bank,card_type,country'];
    for (let i = 0; i < 50_000; i++) lines.push(`${String(80_000_000 + i)},uatp,Bulk Bank ${i},credit,US`);
    expect(await importCsv(lines.join('\n'))).toEqual({ imported: 50_000, skipped: 0, errors: [] });
    expect(await lookupOk(merchant.secretKey, { bin: '80049999' })).toMatchObject({ issuing_bank: 'Bulk Bank 49999', card_brand: 'uatp' });
  });

  it('answers 400 for an unrecognised header or an empty body, 415 for the wrong Content-Type', async () => {
    const header = await call('POST', '/admin/bins/import', { key: ADMIN_TOKEN, body: 'prefix,scheme\n411111,visa', headers: { 'Content-Type': 'text/csv' } });
    expect(header.status).toBe(400);
    expect((await header.json<{ msg: string }>()).msg).toMatch(/^line 1: unrecognised header/);
    const type = await call('POST', '/admin/bins/import', { key: ADMIN_TOKEN, body: 'bin\n411111', headers: { 'Content-Type': 'application/json' } });
    expect(type.status).toBe(415);
    expect(await type.json()).toMatchObject({ msg: 'Content-Type must be text/csv' });
    const empty = await call('POST', '/admin/bins/import', { key: ADMIN_TOKEN, body: '', headers: { 'Content-Type': 'text/csv' } });
    expect(empty.status).toBe(400);
  });

  it('answers 401 without the admin token', async () => {
    const response = await call('POST', '/admin/bins/import', { key: merchant.secretKey, body: 'bin\n411111', headers: { 'Content-Type': 'text/csv' } });
    expect(response.status).toBe(401);
  });

  it('stops at its row and byte limits, saying what was imported', async () => {
    const csv = 'bin,country\n650301,US\n650302,US\n650303,US\n';
    const rows = await importBins(env, streamOf(csv), () => new Date(), { maxBytes: 1_000_000, maxRows: 2 });
    expect(rows.imported).toBe(2);
    expect(rows.errors[0]).toMatchObject({ line: 4, msg: expect.stringContaining('more than 2 rows') });
    await expect(importBins(env, streamOf(csv), () => new Date(), { maxBytes: 10, maxRows: 10 })).rejects.toMatchObject({ code: 'payload_too_large' });
  });
});

describe('POST /admin/bins/ranges/import', () => {
  it('imports account ranges and reports bad ones', async () => {
    const csv = ['low,high,issuing_bank,country', '4000001000,4000001999,Range One,US', '400000,410000,Across BINs,US'].join('\n');
    const answer = await importCsv(csv, '/admin/bins/ranges/import');
    expect(answer).toEqual({
      imported: 1,
      skipped: 1,
      errors: [{ line: 3, msg: 'low and high must share their first 6 digits (one BIN per range)' }],
    });
    const row = await env.DB.prepare('SELECT low, high, bin6 FROM bin_account_ranges').first();
    expect(row).toEqual({ low: '4000001000000000000', high: '4000001999999999999', bin6: '400000' });
  });
});
