/**
 * One rule per text kind at every door (schemas/text-fields.ts): an email address, free text and a
 * name refuse C0 and C1 controls, DEL, U+2028/U+2029, bidirectional overrides and isolates and
 * zero-width characters, the same in the native and FluidPay transaction bodies, batch rows, the
 * vault, the receipts' resend and the admin API, each with a 400 (or a row error) naming the field.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, call, createMerchant, type TestMerchant } from '../helpers/api';
import { csv, parseResult, QUEUE_TEST_TIMEOUT, uploadOk, waitForStatus } from '../helpers/batch';
import { emailAddressProblem, freeTextProblem } from '../../src/schemas/text-fields';

const BAD: [string, string][] = [
  ['NUL', '\u0000'],
  ['U+0001', '\u0001'],
  ['DEL', '\u007f'],
  ['NEL (C1)', '\u0085'],
  ['U+2028', '\u2028'],
  ['right-to-left override', '\u202e'],
  ['first strong isolate', '\u2068'],
  ['zero-width space', '\u200b'],
  ['byte order mark', '\ufeff'],
];

let shop: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Text Shop' });
});

const CARD = { cc_number: '4242424242424242', cc_expiration: '12/39' };

async function msgOf(response: Response): Promise<string> {
  return (await response.json<{ msg: string }>()).msg;
}

describe('the shared rules', () => {
  it.each(BAD)('refuse %s in an address and in free text; plain text passes', (_name, ch) => {
    expect(emailAddressProblem(`a${ch}b@example.com`)).toBe('must be a well-formed email address');
    expect(freeTextProblem(`Jane${ch}Doe`, 100)).toMatch(/must not contain control characters/);
    expect(emailAddressProblem('jane.o\'doe+x@example.co.uk')).toBeNull();
    expect(freeTextProblem('Café Zoë, 12 rue d’Arc — №5', 100)).toBeNull();
  });
});

describe('every door refuses them', () => {
  it.each(BAD)('POST /api/transaction, native body: %s in email_address, description and billing_first_name', async (_name, ch) => {
    for (const [field, value] of [['email_address', `a${ch}b@example.com`], ['description', `Claim${ch}prize`], ['billing_first_name', `Ja${ch}ne`]] as const) {
      const answer = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', amount: 100, ...CARD, [field]: value } });
      expect(answer.status, field).toBe(400);
      expect(await msgOf(answer)).toContain(`${field}: must`);
    }
  });

  it.each(BAD)('POST /api/transaction, FluidPay body: %s in email_address and billing_address.first_name', async (_name, ch) => {
    const base = { type: 'sale', amount: 100, payment_method: { card: { number: '4242424242424242', expiration_date: '12/39' } } };
    const email = await call('POST', '/api/transaction', { key: shop.secretKey, body: { ...base, email_address: `a${ch}b@example.com`, email_receipt: true } });
    expect(email.status).toBe(400);
    expect(await msgOf(email)).toContain('email_address: must be a well-formed email address');
    const name = await call('POST', '/api/transaction', { key: shop.secretKey, body: { ...base, billing_address: { first_name: `Ja${ch}ne` } } });
    expect(name.status).toBe(400);
    expect(await msgOf(name)).toMatch(/first_name: must not contain control characters/);
  });

  it.each(BAD)('the vault: %s in a customer email, description and address', async (_name, ch) => {
    for (const body of [{ email: `a${ch}b@example.com` }, { description: `V${ch}IP` }, { default_billing_address: { first_name: `Ja${ch}ne` } }]) {
      const answer = await call('POST', '/api/vault/customer', { key: shop.secretKey, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      await answer.body?.cancel();
    }
  });

  it.each(BAD)('the receipts resend and the admin API: %s', async (_name, ch) => {
    const sale = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', amount: 100, ...CARD } });
    const id = (await sale.json<{ data: { id: string } }>()).data.id;
    const resend = await call('POST', `/api/transaction/${id}/receipt`, { key: shop.secretKey, body: { email: `a${ch}b@example.com` } });
    expect(resend.status).toBe(400);
    expect(await msgOf(resend)).toContain('email: must be a well-formed email address');
    const merchant = await admin('POST', '/admin/merchants', { name: `Shop${ch}Name` });
    expect(merchant.status).toBe(400);
    expect(await msgOf(merchant)).toContain('name: must not contain control characters');
    const settings = await admin('PATCH', `/admin/merchants/${shop.id}`, { receipt_settings: { city: `Pa${ch}ris` } });
    expect(settings.status).toBe(400);
    await settings.body?.cancel();
  });

  it(
    'a batch row with such a character gets an error line naming the field',
    async () => {
      const header = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'email_address', 'description'];
      const id = await uploadOk(
        shop.secretKey,
        csv(header, [
          ['sale', '100', CARD.cc_number, CARD.cc_expiration, 'a\u202eb@example.com', ''],
          ['sale', '100', CARD.cc_number, CARD.cc_expiration, '', 'Claim\u0085your prize'],
          ['sale', '100', CARD.cc_number, CARD.cc_expiration, 'ok@example.com', 'Thanks'],
        ]),
      );
      await waitForStatus(shop.secretKey, id, 'completed');
      const rows = parseResult(await (await call('GET', `/api/filebatch/${id}/download`, { key: shop.secretKey })).text()).rows;
      expect(rows.map((row) => [row.response, row.processor_response_text])).toEqual([
        ['error', 'email_address: must be a well-formed email address'],
        ['error', 'description: must not contain control characters, line breaks, bidirectional overrides or zero-width characters'],
        ['approved', expect.any(String)],
      ]);
    },
    QUEUE_TEST_TIMEOUT,
  );
});
