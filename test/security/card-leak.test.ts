/**
 * Card data never leaks: known card numbers and CVCs go through every door (tokenizer, vault,
 * error paths including a 500), then everything the service stored or said is scanned: every D1
 * table, every KV value, every R2 object, every Durable Object, every queue message, every
 * response body and all console output. Sealed blobs are allowed: they decode to ciphertext.
 */
import { env } from 'cloudflare:workers';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seal } from '../../src/lib/card-crypto';
import { ADMIN_TOKEN, call, createMerchant, type CallOptions, type TestMerchant } from '../helpers/api';
import {
  captureConsole,
  d1Tables,
  describeFindings,
  findSecrets,
  recordQueue,
  scanD1,
  scanDurableObjects,
  scanKv,
  scanR2,
  type Finding,
  type Secrets,
} from '../helpers/leak-scan';

// Valid (Luhn) numbers of several brands and lengths, and CVCs no timestamp or id would hold alone.
const CARDS = {
  visa: '4539578763621486',
  mastercard: '5425233430109903',
  amex: '374245455400126',
  discover: '6011000990139424',
  visa19: '4000056655665556', // also the "spaces and dashes" door below
  luhnFailure: '4539578763621487',
} as const;
const CVCS = ['8317', '962', '4729'] as const;
const SECRETS: Secrets = { cardNumbers: Object.values(CARDS), cvcs: CVCS };

describe('the scanner itself', () => {
  it('finds a number in plain, spaced, dashed, JSON and base64 form, and a CVC standing alone', () => {
    const card = CARDS.visa;
    const spaced = card.replace(/(\d{4})(?=\d)/g, '$1 ');
    const dashed = card.replace(/(\d{4})(?=\d)/g, '$1-');
    for (const text of [card, spaced, dashed, JSON.stringify({ n: card }), btoa(JSON.stringify({ card })), `"cc_cvc":"8317"`, 'cvc 962.', 'request 2d2c571e-0000-4aa5-a5f0-f040518919ee, cvc 8317']) {
      expect(findSecrets(text, SECRETS, 'probe').length, text).toBeGreaterThan(0);
    }
  });

  it('passes masked numbers, sealed blobs, and ids or hashes that merely contain a CVC', async () => {
    const sealed = await seal(env.CARD_DATA_KEY, JSON.stringify({ number: CARDS.visa, cvc: '8317' }), 'm1');
    // A request id whose random hex has a CVC as one of its groups (it happened in a CI-like run).
    for (const text of ['453957******1486', sealed, 'a8317f0c', 'key_8317ab', '2026-11-21T05:40:00.000Z', 'x-request-id 2d2c571e-8317-4aa5-a5f0-f040518919ee']) {
      expect(findSecrets(text, SECRETS, 'probe'), text).toEqual([]);
    }
  });
});

describe('card data through every door', () => {
  let shop: TestMerchant;
  let other: TestMerchant;
  /** What the service said: [request line, answer headers and body]; only the answer is scanned. */
  const said: [string, string][] = [];
  let consoleCapture: ReturnType<typeof captureConsole>;
  let queue: ReturnType<typeof recordQueue>;

  beforeAll(async () => {
    shop = await createMerchant({ name: 'Leak Test Shop' });
    other = await createMerchant({ name: 'Leak Test Other' });
    consoleCapture = captureConsole();
    queue = recordQueue(env.BATCH_QUEUE);
  });
  afterAll(() => {
    consoleCapture.restore();
    queue.restore();
  });

  /** Every request of this test goes through here, so every answer (headers and body) is scanned. */
  async function say(method: string, path: string, options: CallOptions = {}): Promise<Response> {
    const response = await call(method, path, options);
    said.push([`${method} ${path.slice(0, 30)} → ${response.status}`, `${JSON.stringify([...response.headers])}\n${await response.clone().text()}`]);
    return response;
  }

  /** The status answer is the batch record itself (SPEC.md), not an envelope: wrap it like one. */
  async function unwrap(response: Response): Promise<Response> {
    return new Response(JSON.stringify({ data: await response.json() }), { status: response.status });
  }

  async function data<T>(response: Promise<Response>, status: number): Promise<T> {
    const answer = await response;
    expect(answer.status, await answer.clone().text()).toBe(status);
    return (await answer.json<{ data: T }>()).data;
  }

  it('tokenizer: valid cards with CVCs, spaced and dashed input, and refusals', async () => {
    const tokens: string[] = [];
    for (const [number, cvc] of [
      [CARDS.visa, CVCS[0]],
      [CARDS.amex, CVCS[2]],
      [CARDS.visa19.replace(/(\d{4})(?=\d)/g, '$1 '), CVCS[1]],
      [CARDS.mastercard.replace(/(\d{4})(?=\d)/g, '$1-'), CVCS[0]],
    ] as const) {
      const body = { cc_number: number, cc_expiration: '12/39', cc_cvc: cvc };
      tokens.push((await data<{ temp_token: string }>(say('POST', '/api/tokenizer/token', { key: shop.publicKey, body }), 201)).temp_token);
    }
    expect(tokens).toHaveLength(4);
    // Refusals quote nothing back: Luhn failure, expired card, a bad CVC next to a good number.
    for (const body of [
      { cc_number: CARDS.luhnFailure, cc_expiration: '12/39', cc_cvc: CVCS[0] },
      { cc_number: CARDS.discover, cc_expiration: '01/20', cc_cvc: CVCS[1] },
      { cc_number: CARDS.discover, cc_expiration: '12/39', cc_cvc: `${CVCS[2]}5` },
      { cc_number: `${CARDS.discover}0`, cc_expiration: '12/39', cc_cvc: CVCS[2] },
      { cc_number: Number(CARDS.discover), cc_expiration: '12/39', cc_cvc: Number(CVCS[2]) },
      { cc_number: CARDS.discover, cc_expiration: '12/39', cvv: CVCS[2] },
      // A form flattened wrongly: the number and CVC arrive as key names.
      { [CARDS.discover]: CVCS[2], cc_expiration: '12/39' },
    ]) {
      expect((await say('POST', '/api/tokenizer/token', { key: shop.publicKey, body })).status).toBe(400);
    }
    // Wrong keys, wrong type, malformed JSON with card data inside.
    const body = { cc_number: CARDS.visa, cc_expiration: '12/39', cc_cvc: CVCS[0] };
    expect((await say('POST', '/api/tokenizer/token', { body })).status).toBe(401);
    expect((await say('POST', '/api/tokenizer/token', { key: 'pub_nope', body })).status).toBe(401);
    const malformed = `{"cc_number": "${CARDS.visa}", "cc_cvc": "${CVCS[0]}"`;
    const broken = await say('POST', '/api/tokenizer/token', {
      key: shop.publicKey,
      body: malformed,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(broken.status).toBe(400);
    // Without a JSON Content-Type: 415 (docs/api-decisions.md), the body unread and unquoted.
    const asText = await say('POST', '/api/tokenizer/token', { key: shop.publicKey, body: JSON.stringify(body) });
    expect(asText.status).toBe(415);

    // The vault takes one of these tokens; another merchant cannot.
    await data(say('POST', '/api/vault/customer', { key: shop.secretKey, body: { id: 'fromtoken', payment_method: { card: { temp_token: tokens[0] } } } }), 201);
    expect((await say('POST', '/api/vault/customer', { key: other.secretKey, body: { payment_method: { card: { temp_token: tokens[1] } } } })).status).toBe(400);
  });

  it('vault: cards by number, ACH, reads, patches, refusals, deletion', async () => {
    await data(
      say('POST', '/api/vault/customer', {
        key: shop.secretKey,
        body: { id: 'leaky', email: 'ana@example.com', payment_method: { card: { number: CARDS.discover, expiration: '12/39' } } },
      }),
      201,
    );
    await data(say('POST', '/api/vault/customer/leaky/card', { key: shop.secretKey, body: { number: CARDS.visa19, expiration: '0740' } }), 201);
    await data(
      say('POST', '/api/vault/customer/leaky/ach', {
        key: shop.secretKey,
        body: { account_number: '000123456789', routing_number: '021000021', account_type: 'savings', sec_code: 'ppd' },
      }),
      201,
    );
    await data(say('GET', '/api/vault/customer/leaky', { key: shop.secretKey }), 200);
    await data(say('PATCH', '/api/vault/customer/leaky', { key: shop.secretKey, body: { description: 'repeat buyer' } }), 200);
    for (const body of [
      { number: CARDS.luhnFailure, expiration: '12/39' },
      { number: CARDS.amex, expiration: '12/19' },
      { number: CARDS.amex, expiration: '12/39', cvc: CVCS[2] },
      { number: CARDS.amex },
    ]) {
      expect((await say('POST', '/api/vault/customer/leaky/card', { key: shop.secretKey, body })).status).toBe(400);
    }
    // A card number pasted where plain text goes (an id in the path or body, a description, an
    // email) is refused, so it is neither stored in a plain column nor echoed in "not found".
    for (const [method, path, body, field] of [
      ['GET', `/api/vault/customer/${CARDS.mastercard}`, undefined, 'id'],
      ['POST', '/api/vault/customer', { id: `cust${CARDS.mastercard}` }, 'id'],
      ['POST', '/api/vault/customer', { description: `card ${CARDS.amex.replace(/(\d{4})(?=\d)/g, '$1 ')} exp 12/39` }, 'description'],
      ['POST', '/api/vault/customer', { email: `${CARDS.visa}@example.com` }, 'email'],
      ['PATCH', '/api/vault/customer/leaky', { description: CARDS.discover }, 'description'],
    ] as const) {
      const refused = await say(method, path, { key: shop.secretKey, ...(body ? { body } : {}) });
      expect(refused.status, `${method} ${field}`).toBe(400);
      expect((await refused.json<{ msg: string }>()).msg).toBe(`${field}: must not contain a card number`);
    }
    expect((await say('GET', '/api/vault/customer/leaky', { key: other.secretKey })).status).toBe(404);
    await data(say('POST', '/api/vault/customer', { key: shop.secretKey, body: { id: 'gone', payment_method: { card: { number: CARDS.amex, expiration: '12/39' } } } }), 201);
    await data(say('DELETE', '/api/vault/customer/gone', { key: shop.secretKey }), 200);
  });

  it('BIN lookup: full card numbers as bin, temp tokens, vault customers, and refusals', async () => {
    const lookup = (body: unknown, key = shop.secretKey) => say('POST', '/api/lookup/bin/protected', { key, body });
    for (const number of [CARDS.visa, CARDS.amex, CARDS.visa19, CARDS.luhnFailure]) {
      expect((await lookup({ bin: number, country: 'US', state: 'TX' })).status).toBe(200);
    }
    const token = await data<{ temp_token: string }>(
      say('POST', '/api/tokenizer/token', { key: shop.publicKey, body: { cc_number: CARDS.mastercard, cc_expiration: '12/39', cc_cvc: CVCS[1] } }),
      201,
    );
    expect((await lookup({ temp_token: token.temp_token, country: 'US', state: 'CO' })).status).toBe(200);
    expect((await lookup({ temp_token: token.temp_token }, other.secretKey)).status).toBe(400);
    expect((await lookup({ customer_id: 'leaky', country: 'CA', state: 'QC' })).status).toBe(200);
    expect((await lookup({ customer_id: 'leaky' }, other.secretKey)).status).toBe(400);
    // Refusals: spaced digits, a card number where a customer id or payment method id goes, two
    // sources. Each is a 400 naming the field it refused (the scan below checks nothing is quoted).
    for (const [body, field] of [
      [{ bin: CARDS.visa.replace(/(\d{4})(?=\d)/g, '$1 ') }, 'bin'],
      [{ bin: `${CARDS.visa}${CVCS[0]}` }, 'bin'],
      [{ customer_id: CARDS.discover }, 'customer_id'],
      [{ customer_id: 'leaky', payment_method_id: CARDS.discover }, 'payment_method_id'],
      [{ bin: CARDS.amex, temp_token: token.temp_token }, 'temp_token'],
    ] as const) {
      const refused = await lookup(body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect((await refused.json<{ msg: string }>()).msg, JSON.stringify(body)).toMatch(new RegExp(`^${field}: `));
    }
    // A CVC is not a lookup field: it is refused like any unknown field, named by its key, and the
    // CVC is neither stored nor echoed (the scan below).
    const withCvc = await lookup({ bin: CARDS.amex, cvc: CVCS[2] });
    expect(withCvc.status).toBe(400);
    expect((await withCvc.json<{ msg: string }>()).msg).toBe('cvc: unknown field');
    expect((await lookup({ bin: CARDS.visa }, shop.publicKey)).status).toBe(401);
  });

  it('BIN import: a card number in any column is a row error that does not quote it', async () => {
    const csv = [
      'bin,card_brand,card_type,country,currency,prepaid',
      `${CARDS.discover},discover,credit,US,USD,false`,
      `601100,discover,${CARDS.visa},US,USD,false`,
      `601101,discover,credit,${CARDS.amex},USD,false`,
      `601102,discover,credit,US,${CARDS.visa19.replace(/(\d{4})(?=\d)/g, '$1 ')},false`,
      `601103,discover,credit,US,USD,${CARDS.mastercard}`,
      '601104,discover,credit,US,USD,false',
    ].join('\n');
    const imported = await say('POST', '/admin/bins/import', { key: ADMIN_TOKEN, body: `${csv}\n`, headers: { 'Content-Type': 'text/csv' } });
    expect(imported.status).toBe(200);
    expect(await imported.json()).toMatchObject({ data: { imported: 1, skipped: 5 } });
    const openbiin = `BIN6,Ranges,Issuer,Country,Brand,Type\n${CARDS.discover},00-99,Bank,US,DISCOVER,CREDIT\n601105,${CARDS.amex},Bank,US,DISCOVER,CREDIT\n`;
    const second = await say('POST', '/admin/bins/import', { key: ADMIN_TOKEN, body: openbiin, headers: { 'Content-Type': 'text/csv' } });
    expect(await second.json()).toMatchObject({ data: { imported: 0, skipped: 2 } });
  });

  it('transactions: card sales with CVCs, declines, refusals, and card numbers in the wrong fields', async () => {
    const sale = (body: Record<string, unknown>, key = shop.secretKey) => say('POST', '/api/transaction', { key, body });
    const card = { transaction_type: 'sale', cc_expiration: '12/39', amount: 1250 };
    const ok = await data<{ id: string }>(sale({ ...card, cc_number: CARDS.visa, cc_cvc: CVCS[1], billing_postal_code: '10001' }), 201);
    await data(sale({ ...card, cc_number: CARDS.amex, cc_cvc: CVCS[0], transaction_type: 'authorize' }), 201);
    await data(sale({ ...card, cc_number: CARDS.visa19.replace(/(\d{4})(?=\d)/g, '$1-'), cc_cvc: CVCS[1], amount: 300 }), 201); // gateway decline
    await data(sale({ ...card, cc_number: '4000000000000002', cc_cvc: CVCS[1] }), 201); // issuer decline
    await data(sale({ transaction_type: 'sale', customer_id: 'leaky', amount: 700, cc_cvc: CVCS[1] }), 201);
    await data(say('GET', `/api/transaction/${ok.id}`, { key: shop.secretKey }), 200);
    // Refusals, including a card number typed into every plain-text field there is.
    for (const body of [
      { ...card, cc_number: CARDS.luhnFailure, cc_cvc: CVCS[0] },
      { ...card, cc_number: CARDS.visa, cc_cvc: `${CVCS[0]}9` },
      { ...card, cc_number: CARDS.mastercard, cc_expiration: '01/20', cc_cvc: CVCS[1] },
      { ...card, cc_number: CARDS.mastercard, amount: '12.50' },
      { ...card, customer_id: CARDS.discover },
      { transaction_type: 'sale', amount: 100, customer_id: 'leaky', payment_method_id: CARDS.discover },
      { ...card, cc_number: CARDS.visa, order_id: CARDS.discover },
      { ...card, cc_number: CARDS.visa, po_number: CARDS.discover },
      { ...card, cc_number: CARDS.visa, description: `card ${CARDS.discover} cvc ${CVCS[2]}` },
      { ...card, cc_number: CARDS.visa, billing_first_name: CARDS.discover },
      { ...card, cc_number: CARDS.visa, shipping_address_line_1: `${CARDS.discover.replace(/(\d{4})(?=\d)/g, '$1 ')}` },
      { ...card, cc_number: CARDS.visa, email_address: `${CARDS.discover}@example.com` },
      { ...card, cc_number: CARDS.visa, [CARDS.discover]: CVCS[2] },
    ]) {
      const response = await sale(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    // The card number as the idempotency key (stored and answered as given).
    const keyed = await say('POST', '/api/transaction', {
      key: shop.secretKey,
      body: { ...card, cc_number: CARDS.visa },
      headers: { 'Idempotency-Key': `order-${CARDS.visa}` },
    });
    expect(keyed.status).toBe(400);
    expect((await sale({ ...card, cc_number: CARDS.visa }, shop.publicKey)).status).toBe(401);
  });

  it('batch files: card rows with CVCs, row errors, card numbers in plain fields and in the file name', async () => {
    const header = ['transaction_type', 'amount', 'cc_number', 'cc_expiration', 'cc_cvc', 'order_id', 'description', 'billing_first_name'];
    const rows = [
      ['sale', '100', CARDS.visa, '12/39', CVCS[1], 'ord1', 'fine', 'Ana'],
      ['authorize', '200', CARDS.amex, '12/39', CVCS[0], 'ord2', '', ''],
      ['sale', '300', CARDS.mastercard, '12/39', CVCS[2], 'ord3', '', ''],
      ['sale', '100', CARDS.luhnFailure, '12/39', CVCS[1], 'ord4', '', ''],
      ['sale', '100', CARDS.discover, '01/20', CVCS[1], 'ord5', '', ''],
      ['sale', '100', CARDS.visa19, '12/39', `${CVCS[1]}7`, 'ord6', '', ''],
      ['sale', '100', CARDS.visa, '12/39', CVCS[1], CARDS.discover, '', ''],
      ['sale', '100', CARDS.visa, '12/39', CVCS[1], 'ord8', `pan ${CARDS.discover}`, ''],
      ['sale', '100', CARDS.visa, '12/39', CVCS[1], 'ord9', '', CARDS.discover],
      ['refund', '100', CARDS.visa, '12/39', CVCS[1], 'ord10', '', ''],
    ];
    const text = [header, ...rows].map((fields) => fields.map((f) => `"${f}"`).join(',')).join('\n') + '\n';
    const form = new FormData();
    form.append('file', new File([text], `${CARDS.amex}.csv`, { type: 'text/csv' }));
    const uploaded = await data<{ id: string }>(say('POST', '/api/filebatch', { key: shop.secretKey, body: form }), 200);
    // The real queue, consumer and object run it; every status answer is scanned too.
    await vi.waitFor(
      async () => {
        const live = await data<{ status: string }>(say('GET', `/api/filebatch/${uploaded.id}`, { key: shop.secretKey }).then(unwrap), 200);
        if (live.status !== 'completed') throw new Error(`batch is ${live.status}`);
      },
      { timeout: 15_000, interval: 20 },
    );
    const download = await say('GET', `/api/filebatch/${uploaded.id}/download`, { key: shop.secretKey });
    expect(download.status).toBe(200);
    const lines = (await download.text()).trim().split('\n');
    expect(lines).toHaveLength(rows.length + 1);
    await data(say('GET', '/api/filebatch', { key: shop.secretKey }), 200);

    // A file rejected for its structure, with card data on the bad line.
    const bad = new FormData();
    bad.append('file', new File([`"transaction_type","amount","cc_number"\n"sale","1"00","${CARDS.visa}"\n"sale",${CARDS.amex},"${CVCS[2]}"\n`], 'bad.csv'));
    expect((await say('POST', '/api/filebatch', { key: shop.secretKey, body: bad })).status).toBe(400);
    expect(queue.messages.length).toBeGreaterThan(0);
  });

  it('a server fault while storing a token: a generic 500, and the log line redacts digits', async () => {
    const put = vi
      .spyOn(env.TOKENS, 'put')
      .mockRejectedValueOnce(new Error(`KV put failed for card ${CARDS.amex} cvc ${CVCS[2]}`));
    try {
      const response = await say('POST', '/api/tokenizer/token', {
        key: shop.secretKey,
        body: { cc_number: CARDS.amex, cc_expiration: '12/39', cc_cvc: CVCS[2] },
      });
      expect(response.status).toBe(500);
    } finally {
      put.mockRestore();
    }
    expect(consoleCapture.lines.some((line) => line.includes('KV put failed'))).toBe(true);
  });

  it('nothing stored or said holds a full card number or a CVC', async () => {
    const findings: Finding[] = [
      ...(await scanD1(env.DB, SECRETS)),
      ...(await scanKv(env.TOKENS, 'TOKENS', SECRETS)),
      ...(await scanKv(env.BIN_CACHE, 'BIN_CACHE', SECRETS)),
      ...(await scanR2(env.FILES, SECRETS)),
      ...(await scanDurableObjects(env.BATCH_PROGRESS, 'BATCH_PROGRESS', SECRETS)),
      ...queue.messages.flatMap((message, i) => findSecrets(JSON.stringify(message), SECRETS, `queue message ${i}`)),
      ...said.flatMap(([request, answer], i) => findSecrets(answer, SECRETS, `response ${i} to ${request}`)),
      ...consoleCapture.lines.flatMap((line, i) => findSecrets(line, SECRETS, `console line ${i}`)),
    ];
    expect(findings, describeFindings(findings)).toEqual([]);

    // The scan was not vacuous: the stores it read hold this test's data.
    expect(await d1Tables(env.DB)).toEqual(expect.arrayContaining(['merchants', 'api_keys', 'vault_customers', 'vault_payment_methods']));
    expect((await env.TOKENS.list()).keys.length).toBeGreaterThanOrEqual(4);
    expect(said.length).toBeGreaterThan(25);
  });
});
