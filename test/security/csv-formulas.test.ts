/**
 * Result files are safe to open in a spreadsheet: any text cell a spreadsheet would run as a
 * formula comes back with a leading "'" (OWASP), for approved and refused rows alike, while the
 * numeric columns stay numbers. And the one value the service itself puts in every row, the
 * caller's address, must be an IP address.
 */
import { describe, expect, it } from 'vitest';
import { NUMERIC_RESULT_COLUMNS, RESULT_COLUMNS } from '../../src/schemas/transaction-columns';
import { call, createMerchant } from '../helpers/api';
import { createUnqueuedBatch, csv, deliver, parseResult, uploadMultipart } from '../helpers/batch';

const HEADER = [
  'transaction_type',
  'amount',
  'cc_number',
  'cc_expiration',
  'email_address',
  'billing_first_name',
  'billing_last_name',
  'billing_city',
  'shipping_company',
  'shipping_phone',
];
const FORMULAS = ['=cmd@example.com', '=HYPERLINK(http://evil.example/x)', '+SUM(1;2)', '@cmd', '-2+3', '+1 415 555 2671'];

describe('formula-safe result files', () => {
  it('neutralises formula cells in approved, declined and refused rows; numbers stay numbers', async () => {
    const merchant = await createMerchant();
    const { id, messages } = await createUnqueuedBatch(
      merchant.secretKey,
      csv(HEADER, [
        ['sale', '1000', '4111111111111111', '12/30', ...FORMULAS],
        ['credit', '1500', '4111111111111111', '12/30', ...FORMULAS],
        ['sale', '1000', '4000000000000002', '12/30', ...FORMULAS], // the sandbox's issuer decline
        ['sale', 'abc', '4111111111111111', '12/30', ...FORMULAS], // refused: amount
        ['sale', '1000', '4111111111111111', '12/30', '', '\t =1+1', '', '', '', ''], // trimmed like every field, then a formula
      ]),
    );
    await deliver('binbatch-chunks', messages);
    const response = await call('GET', `/api/filebatch/${id}/download`, { key: merchant.secretKey });
    expect(response.status).toBe(200);
    const { header, rows } = parseResult(await response.text());
    expect(header).toEqual([...RESULT_COLUMNS]);
    expect(rows.map((row) => row.response)).toEqual(['approved', 'approved', 'declined', 'error', 'approved']);

    for (const row of rows.slice(0, 3)) {
      expect(row.email_address).toBe("'=cmd@example.com");
      expect(row.billing_first_name).toBe("'=HYPERLINK(http://evil.example/x)");
      expect(row.billing_last_name).toBe("'+SUM(1;2)");
      expect(row.billing_city).toBe("'@cmd");
      expect(row.shipping_company).toBe("'-2+3");
      expect(row.shipping_phone).toBe("'+1 415 555 2671");
    }
    // A refused row echoes what it safely can: the same cells, neutralised the same way.
    expect(rows[3]).toMatchObject({ billing_first_name: "'=HYPERLINK(http://evil.example/x)", billing_city: "'@cmd", shipping_company: "'-2+3" });
    expect(rows[4]?.billing_first_name).toBe("'=1+1");

    // Numeric columns hold plain numbers (money in minor units, the response code), never a quote.
    expect(rows[0]).toMatchObject({ amount: '1000', amount_captured: '1000', response_code: '100', tip: '0' });
    expect(rows[1]).toMatchObject({ amount: '1500', response_code: '100' });
    expect(rows[3]).toMatchObject({ amount: '', response_code: '400' });
    for (const row of rows) {
      for (const column of NUMERIC_RESULT_COLUMNS) expect(row[column], column).toMatch(/^(-?[0-9]+)?$/);
      // No text cell of any row starts a formula.
      for (const [column, value] of Object.entries(row)) expect(value, column).not.toMatch(/^ *[=+\-@\t\r]/);
    }
  });
});

describe('ip_address: an IP address or nothing', () => {
  const sale = { transaction_type: 'sale', amount: 1250, cc_number: '4111111111111111', cc_expiration: '12/30' };

  it.each(['=HYPERLINK(http://evil.example)', '203.0.113.300', 'localhost', '203.0.113.7, 10.0.0.1'])(
    'POST /api/transaction refuses CF-Connecting-IP %j with a 400 naming the header',
    async (ip) => {
      const merchant = await createMerchant();
      const response = await call('POST', '/api/transaction', { key: merchant.secretKey, body: sale, headers: { 'CF-Connecting-IP': ip } });
      expect(response.status).toBe(400);
      expect((await response.json<{ msg: string }>()).msg).toBe('cf-connecting-ip: must be an IPv4 or IPv6 address');
    },
  );

  it('records an IPv4 or IPv6 address, and nothing when the header is absent', async () => {
    const merchant = await createMerchant();
    for (const [ip, recorded] of [
      ['203.0.113.7', '203.0.113.7'],
      ['2001:db8::42', '2001:db8::42'],
      [null, null],
    ] as const) {
      const response = await call('POST', '/api/transaction', {
        key: merchant.secretKey,
        body: sale,
        headers: ip === null ? {} : { 'CF-Connecting-IP': ip },
      });
      expect(response.status).toBe(201);
      expect((await response.json<{ data: { ip_address: string | null } }>()).data.ip_address).toBe(recorded);
    }
  });

  it('a batch upload from a malformed address is refused before anything is stored', async () => {
    const merchant = await createMerchant();
    const form = new FormData();
    form.append('file', new File([csv(['transaction_type', 'amount'], [['sale', '1']])], 'ip.csv'));
    const response = await call('POST', '/api/filebatch', { key: merchant.secretKey, body: form, headers: { 'CF-Connecting-IP': '@cmd' } });
    expect(response.status).toBe(400);
    expect((await response.json<{ msg: string }>()).msg).toBe('cf-connecting-ip: must be an IPv4 or IPv6 address');
    const listed = await call('GET', '/api/filebatch', { key: merchant.secretKey });
    expect((await listed.json<{ total_count: number }>()).total_count).toBe(0);
    expect((await uploadMultipart(merchant.secretKey, csv(['transaction_type', 'amount'], [['sale', '1']]))).status).toBe(200);
  });
});
