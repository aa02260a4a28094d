/**
 * Every spelling of a card number (spaces, dashes, dots, next to other digits) is refused or masked
 * at every door that takes plain text: transaction fields, the Idempotency-Key, vault ids and
 * descriptions, batch rows, file names, CSV header names. Then nothing stored or said holds one.
 */
import { env } from 'cloudflare:workers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, createMerchant, type TestMerchant } from '../helpers/api';
import { csv, parseResult, uploadMultipart, waitForStatus, QUEUE_TEST_TIMEOUT } from '../helpers/batch';
import { CARD_SPELLINGS, SPELLED_CARD_NUMBERS } from '../helpers/card-spellings';
import { captureConsole, describeFindings, findSecrets, scanD1, scanR2, type Finding, type Secrets } from '../helpers/leak-scan';
import { batchShardName, shardEntryList } from '../helpers/ledger';

const SECRETS: Secrets = { cardNumbers: SPELLED_CARD_NUMBERS, cvcs: [] };
const NO_CARD = 'must not contain a card number';

describe('card numbers in any spelling, at every door', () => {
  let shop: TestMerchant;
  const said: string[] = [];
  let consoleCapture: ReturnType<typeof captureConsole>;
  beforeAll(async () => {
    shop = await createMerchant({ name: 'Spellings Shop' });
    consoleCapture = captureConsole();
    const customer = await call('POST', '/api/vault/customer', { key: shop.secretKey, body: { id: 'spelling' } });
    expect(customer.status).toBe(201);
  });
  afterAll(() => consoleCapture.restore());

  async function say(method: string, path: string, options: Parameters<typeof call>[2] = {}): Promise<Response> {
    const response = await call(method, path, options);
    said.push(await response.clone().text());
    return response;
  }

  async function msgOf(response: Response): Promise<string> {
    return (await response.json<{ msg: string }>()).msg;
  }

  const sale = { transaction_type: 'sale', amount: 1250, cc_number: '4242424242424242', cc_expiration: '12/39' };

  it.each(CARD_SPELLINGS)('POST /api/transaction refuses %j in free-text fields and in the Idempotency-Key', async (spelling) => {
    for (const field of ['description', 'billing_first_name', 'billing_phone', 'shipping_address_line_1', 'shipping_company']) {
      const response = await say('POST', '/api/transaction', { key: shop.secretKey, body: { ...sale, [field]: `note ${spelling}` } });
      expect(response.status, field).toBe(400);
      expect(await msgOf(response)).toBe(`${field}: ${NO_CARD}`);
    }
    const keyed = await say('POST', '/api/transaction', {
      key: shop.secretKey,
      body: sale,
      headers: { 'Idempotency-Key': `order-${spelling}` },
    });
    expect(keyed.status).toBe(400);
    // A key is printable ASCII without spaces; every spelling within that is refused as a card number.
    if (/^[\x21-\x7e]+$/.test(spelling)) expect(await msgOf(keyed)).toBe(`idempotency-key: ${NO_CARD}`);
  });

  it.each(CARD_SPELLINGS)('the vault refuses %j in descriptions and ids', async (spelling) => {
    const created = await say('POST', '/api/vault/customer', { key: shop.secretKey, body: { description: `card ${spelling}` } });
    expect(created.status).toBe(400);
    expect(await msgOf(created)).toBe(`description: ${NO_CARD}`);
    const patched = await say('PATCH', '/api/vault/customer/spelling', { key: shop.secretKey, body: { description: spelling } });
    expect(patched.status).toBe(400);
    expect(await msgOf(patched)).toBe(`description: ${NO_CARD}`);
    const read = await say('GET', `/api/vault/customer/${encodeURIComponent(spelling)}`, { key: shop.secretKey });
    expect(read.status).toBe(400);
  });

  it.each(CARD_SPELLINGS)('refuses %j in webhook URLs, merchant and processor names, tokenizer origins; quotes it in no message', async (spelling) => {
    const encoded = encodeURIComponent(spelling);
    for (const url of [`https://hooks.example.com/pay/${encoded}`, `https://hooks.example.com/h?card=${encoded}`, `https://hooks.example.com/h#${encoded}`, `https://hooks.example.com/${spelling}`]) {
      const hook = await say('POST', '/api/webhooks', { key: shop.secretKey, body: { url } });
      expect(hook.status, url).toBe(400);
    }
    const named = await say('POST', '/admin/merchants', { key: ADMIN_TOKEN, body: { name: `Shop ${spelling}` } });
    expect(named.status).toBe(400);
    expect(await msgOf(named)).toBe(`name: ${NO_CARD}`);
    const processor = await say('POST', `/admin/merchants/${shop.id}/processors`, { key: ADMIN_TOKEN, body: { name: `Acquirer ${spelling}` } });
    expect(processor.status).toBe(400);
    const origins = await say('PATCH', `/admin/merchants/${shop.id}`, { key: ADMIN_TOKEN, body: { tokenizer_origins: [`https://${spelling}.example`] } });
    expect(origins.status).toBe(400);
    const unknownKey = await say('POST', '/api/vault/customer', { key: shop.secretKey, body: { [spelling]: 'x' } });
    expect(unknownKey.status).toBe(400);
    expect(await msgOf(unknownKey)).toContain('(a card number)');
    const noRoute = await say('GET', `/api/nothing/${encoded}`, { key: shop.secretKey });
    expect(noRoute.status).toBe(404);
    if (/^[\x21-\x7e]+$/.test(spelling)) {
      // Header values are ASCII: the hosted frame's parent origin, quoted in the 403.
      const parent = await say('POST', '/api/tokenizer/token', {
        key: shop.publicKey,
        body: { cc_number: '4242424242424242', cc_expiration: '12/39' },
        headers: { Origin: 'http://binbatch.test', 'Tokenizer-Parent-Origin': `https://${spelling}.example` },
      });
      expect(parent.status).toBe(403);
    }
  });

  it(
    'batch rows with a card number in a plain column become error rows that do not echo it; file names and header names are masked',
    async () => {
      const header = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'billing_first_name', 'shipping_city', 'billing_phone'];
      const rows = CARD_SPELLINGS.flatMap((spelling) => [
        ['sale', '1000', '4242424242424242', '12/39', spelling, 'Lyon', ''],
        ['sale', '1000', '4242424242424242', '12/39', 'Ana', `cedex ${spelling}`, ''],
        ['sale', '1000', '4242424242424242', '12/39', 'Ana', 'Lyon', spelling],
      ]);
      const upload = await say('POST', '/api/filebatch', { key: shop.secretKey, body: form(csv(header, rows), `${CARD_SPELLINGS[4]}.csv`) });
      expect(upload.status).toBe(200);
      const { data } = await upload.clone().json<{ data: { id: string; file_name: string } }>();
      expect(data.file_name).toBe('12 411111******1111.csv');
      await waitForStatus(shop.secretKey, data.id, 'completed');
      const download = await say('GET', `/api/filebatch/${data.id}/download`, { key: shop.secretKey });
      const result = parseResult(await download.text());
      expect(result.rows).toHaveLength(rows.length);
      for (const row of result.rows) {
        expect(row.response).toBe('error');
        expect(row.processor_response_text).toMatch(new RegExp(`^(billing_first_name|shipping_city|billing_phone): ${NO_CARD}$`));
      }
      // Refused rows are not transactions: nothing of them reached the batch's ledger shard.
      expect(await shardEntryList(batchShardName(shop.id, data.id))).toEqual([]);

      const named: string[] = [];
      for (const spelling of CARD_SPELLINGS) {
        const upload = await say('POST', '/api/filebatch?allow_duplicate=true', { key: shop.secretKey, body: form(csv(['transaction_type', 'amount'], [['sale', '1']]), `pay ${spelling}.csv`) });
        expect(upload.status).toBe(200);
        const answered = await upload.clone().json<{ data: { id: string; file_name: string } }>();
        expect(answered.data.file_name).toMatch(/^pay .*\*{5}.*\.csv$/);
        named.push(answered.data.id);
        const badHeader = await say('POST', '/api/filebatch', { key: shop.secretKey, body: form(csv(['transaction_type', 'amount', spelling], [['sale', '1', 'x']])) });
        expect(badHeader.status).toBe(400);
        expect(await msgOf(badHeader)).toMatch(/^line 1: unknown column ".*\*{5}.*"$/);
      }
      // The named files run to their end inside the test, not after it (their row is refused: no amount-only sale).
      for (const id of named) await waitForStatus(shop.secretKey, id, 'completed');
    },
    QUEUE_TEST_TIMEOUT,
  );

  it('nothing stored, answered or logged holds any of the numbers', async () => {
    const findings: Finding[] = [
      ...(await scanD1(env.DB, SECRETS)),
      ...(await scanR2(env.FILES, SECRETS)),
      ...said.flatMap((text, i) => findSecrets(text, SECRETS, `response ${i}`)),
      ...consoleCapture.lines.flatMap((line, i) => findSecrets(line, SECRETS, `console line ${i}`)),
    ];
    expect(findings, describeFindings(findings)).toEqual([]);
    expect(said.length).toBeGreaterThan(CARD_SPELLINGS.length * 9);
  });
});

function form(text: string, fileName = 'spellings.csv'): FormData {
  const body = new FormData();
  body.append('file', new File([text], fileName, { type: 'text/csv' }));
  return body;
}
