/**
 * Property tests over the JSON doors: whatever a client sends (any JSON value, wrong types, huge
 * strings, digits of other scripts, deep nesting, bytes that are not JSON), the answer is a 4xx
 * failed envelope whose msg names the problem, never a 500.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl } from '../../src/lib/webhook-url';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import {
  deeplyNested,
  expectFailedEnvelope,
  fuzzRuns,
  hostileString,
  nonString,
  notDigits,
  unicodeDigits,
} from '../helpers/fuzz';

const CARD = '4242424242424242';

let shop: TestMerchant;
let customerId: string;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Fuzzed Shop' });
  const response = await call('POST', '/api/vault/customer', { key: shop.secretKey, body: { id: 'fuzzcust' } });
  expect(response.status).toBe(201);
  customerId = 'fuzzcust';
});

/**
 * A JSON door: a valid body, and for each field that takes a strict format, the path the error
 * msg names when that field is wrong. `accepts` lists the success statuses a random body may hit.
 */
interface JsonDoor {
  name: string;
  method: string;
  path: () => string;
  key: () => string;
  valid: () => Record<string, unknown>;
  /** Field path in the body (dot-separated) → the name the msg must contain when the value is wrong. */
  strictFields: Record<string, string>;
  accepts: number[];
  /** Fields where null is a valid value (PATCH: null clears). */
  nullable?: string[];
  /** Non-string values the field takes (transaction amounts as JSON integers, flags as booleans). */
  takes?: (field: string, value: unknown) => boolean;
  /**
   * Fields where other scripts' digits must be refused, when their names do not say so (see
   * digitFieldsOf): path → what the refusal's msg must contain.
   */
  digitFields?: Record<string, string>;
}

/** Doors with no field that takes digits, so the unicode-digit property has nothing to send them, and why. */
const WITHOUT_DIGIT_FIELDS: Record<string, string> = {
  'POST /api/webhooks': 'its fields are a URL and event names',
};

/** Where a door takes digits (path → what a refusal's msg names): its strict fields named like a number, BIN, CVC or amount, or those it lists. */
function digitFieldsOf(door: JsonDoor): Record<string, string> {
  return door.digitFields ?? Object.fromEntries(Object.entries(door.strictFields).filter(([path]) => /number|bin|cvc|amount/.test(path)));
}

const doors: JsonDoor[] = [
  {
    name: 'POST /api/transaction',
    method: 'POST',
    path: () => '/api/transaction',
    key: () => shop.secretKey,
    valid: () => ({ transaction_type: 'sale', cc_number: CARD, cc_expiration: '12/39', cc_cvc: '123', amount: '1250' }),
    strictFields: { cc_number: 'cc_number', cc_cvc: 'cc_cvc', amount: 'amount' },
    accepts: [201],
    // docs/transactions.md: null means absent (then the field is missing, named all the same),
    // amounts may be JSON integers.
    nullable: [],
    takes: (field, value) =>
      (field === 'amount' && typeof value === 'number' && Number.isSafeInteger(value) && value > 0 && ![300, 301, 421].includes(value)),
  },
  {
    name: 'POST /api/lookup/bin/protected',
    method: 'POST',
    path: () => '/api/lookup/bin/protected',
    key: () => shop.secretKey,
    valid: () => ({ bin: '42424242', country: 'US', state: 'TX' }),
    strictFields: { bin: 'bin', customer_id: 'customer_id', temp_token: 'temp_token' },
    accepts: [200],
  },
  {
    name: 'POST /api/tokenizer/token',
    method: 'POST',
    path: () => '/api/tokenizer/token',
    key: () => shop.publicKey,
    valid: () => ({ cc_number: CARD, cc_expiration: '12/39', cc_cvc: '123' }),
    strictFields: { cc_number: 'cc_number', cc_cvc: 'cc_cvc' },
    accepts: [201],
  },
  {
    name: 'POST /api/vault/customer',
    method: 'POST',
    path: () => '/api/vault/customer',
    key: () => shop.secretKey,
    valid: () => ({ payment_method: { card: { number: CARD, expiration: '12/39' } } }),
    strictFields: { 'payment_method.card.number': 'payment_method.card.number', id: 'id' },
    accepts: [201, 409],
  },
  {
    name: 'POST /api/vault/customer/{id}/card',
    method: 'POST',
    path: () => `/api/vault/customer/${customerId}/card`,
    key: () => shop.secretKey,
    valid: () => ({ number: CARD, expiration: '12/39' }),
    strictFields: { number: 'number' },
    accepts: [201],
  },
  {
    name: 'POST /api/vault/customer/{id}/ach',
    method: 'POST',
    path: () => `/api/vault/customer/${customerId}/ach`,
    key: () => shop.secretKey,
    valid: () => ({ account_number: '000123456789', routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' }),
    strictFields: { account_number: 'account_number', routing_number: 'routing_number' },
    accepts: [201],
  },
  {
    name: 'PATCH /api/vault/customer/{id}',
    method: 'PATCH',
    path: () => `/api/vault/customer/${customerId}`,
    key: () => shop.secretKey,
    valid: () => ({ description: 'regular' }),
    strictFields: { default_payment_method_id: 'default_payment_method_id' },
    // An id of ASCII letters, digits and FluidPay's . - _ ^ (issue 34 widened it): other scripts'
    // digits are not digits there either. The format must refuse them: a well-formed unknown id is
    // also a 400 naming the field.
    digitFields: { default_payment_method_id: 'default_payment_method_id: must be 1 to 64 letters, digits, ".", "-", "_" or "^"' },
    accepts: [200],
    nullable: ['description', 'email'],
  },
  {
    name: 'POST /api/webhooks',
    method: 'POST',
    path: () => '/api/webhooks',
    key: () => shop.secretKey,
    valid: () => ({ url: 'https://hooks.example.test/fuzz', events: ['batch.failed'] }),
    strictFields: { url: 'url', events: 'events' },
    // Each accepted body adds an endpoint: after the 10th, the limit answers 409.
    accepts: [201, 409],
    takes: (field, value) => field === 'url' && typeof value === 'string' && checkWebhookUrl(value.trim(), false).ok,
  },
];

function send(door: JsonDoor, body: string, contentType = 'application/json'): Promise<Response> {
  return call(door.method, door.path(), { key: door.key(), body, headers: { 'Content-Type': contentType } });
}

function withField(body: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  const parts = path.split('.');
  let target: Record<string, unknown> = copy;
  for (const part of parts.slice(0, -1)) {
    const next = target[part];
    target[part] = typeof next === 'object' && next !== null ? next : {};
    target = target[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1] ?? '';
  target[last] = value;
  return copy;
}

describe.each(doors)('$name under hostile JSON', (door) => {
  it('the valid body is accepted (the properties below start from it)', async () => {
    const response = await send(door, JSON.stringify(door.valid()));
    expect(door.accepts).toContain(response.status);
    await response.body?.cancel();
  });

  it('any JSON value: a success or a 4xx envelope naming the problem, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (value) => {
        const response = await send(door, JSON.stringify(value));
        if (door.accepts.includes(response.status)) return void (await response.body?.cancel());
        expect([400, 404, 409, 413]).toContain(response.status);
        await expectFailedEnvelope(response);
      }),
      fuzzRuns(60),
    );
  });

  it('a wrong type in any known field: 400 naming that field', async () => {
    const fields = Object.keys(door.valid());
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...fields), nonString, async (field, value) => {
        if (value === null && door.nullable?.includes(field)) return;
        if (door.takes?.(field, value)) return;
        const response = await send(door, JSON.stringify({ ...door.valid(), [field]: value }));
        expect(response.status).toBe(400);
        const body = await expectFailedEnvelope(response);
        expect(body.msg).toContain(field);
      }),
      fuzzRuns(40),
    );
  });

  it('a strict-format field that is not ASCII digits or not the format (unicode digits included): 400 naming it', async () => {
    const paths = Object.keys(door.strictFields);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), fc.oneof(notDigits, hostileString), async (path, value) => {
        // A hostile string can, rarely, be a valid id; only values the format refuses count here.
        if (door.takes?.(path, value)) return;
        if (typeof value === 'string') {
          const digitField = /number|bin|cvc/.test(path);
          if (digitField ? /^[0-9]+$/.test(value) : /^[A-Za-z0-9_]{1,40}$/.test(value)) return;
        }
        const response = await send(door, JSON.stringify(withField(door.valid(), path, value)));
        expect(response.status).toBe(400);
        const body = await expectFailedEnvelope(response);
        expect(body.msg).toContain(door.strictFields[path]);
      }),
      fuzzRuns(40),
    );
  });

  const withoutDigits = WITHOUT_DIGIT_FIELDS[door.name];
  if (withoutDigits === undefined) {
    it('digits of other scripts (Arabic-Indic, Devanagari, fullwidth ...) never pass as digits: 400 naming the field', async () => {
      const named = digitFieldsOf(door);
      const digitFields = Object.keys(named);
      // A door with none must be listed in WITHOUT_DIGIT_FIELDS with its reason, not pass by sending nothing.
      expect(digitFields.length, 'fields that take digits').toBeGreaterThan(0);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...digitFields), unicodeDigits(3, 19), async (path, value) => {
          const response = await send(door, JSON.stringify(withField(door.valid(), path, value)));
          expect(response.status).toBe(400);
          expect((await expectFailedEnvelope(response)).msg).toContain(named[path]);
        }),
        fuzzRuns(30),
      );
      // The classic: a whole card number typed on an Arabic keyboard.
      const arabic = '٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢';
      const response = await send(door, JSON.stringify(withField(door.valid(), digitFields[0] ?? '', arabic)));
      expect(response.status).toBe(400);
      await response.body?.cancel();
    });
  } else {
    it(`has no field that takes digits (${withoutDigits}), so the unicode-digit property does not apply`, () => {
      expect(digitFieldsOf(door)).toEqual({});
    });
  }

  it('an unknown field with any value: 400 naming the field, never a 500 (every JSON body refuses unknown fields)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[a-z][a-z_]{2,20}$/).filter((name) => !(name in door.valid())),
        fc.jsonValue({ maxDepth: 3 }),
        async (name, value) => {
          const response = await send(door, JSON.stringify({ ...door.valid(), [name]: value }));
          expect(response.status).toBe(400);
          const body = await expectFailedEnvelope(response);
          expect(body.msg).toContain(name);
        },
      ),
      fuzzRuns(25),
    );
  });

  it('bytes that are not JSON: 400 "Malformed JSON", never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 300 }), async (bytes) => {
        const text = new TextDecoder().decode(bytes);
        let isJson = true;
        try {
          JSON.parse(text);
        } catch {
          isJson = false;
        }
        const response = await call(door.method, door.path(), {
          key: door.key(),
          body: new Blob([bytes]).stream(),
          headers: { 'Content-Type': 'application/json' },
        });
        if (isJson) return void (await response.body?.cancel());
        expect(response.status).toBe(400);
        const body = await expectFailedEnvelope(response);
        expect(body.msg).toMatch(/malformed json/i);
      }),
      fuzzRuns(40),
    );
  });

  it('huge strings: 400 naming the field under the body limit, 413 over it', async () => {
    const field = Object.keys(door.strictFields)[0] ?? '';
    for (const [length, status] of [
      [20_000, 400],
      [60_000, 400],
      [70_000, 413],
      [2_000_000, 413],
    ] as const) {
      const response = await send(door, JSON.stringify(withField(door.valid(), field, '9'.repeat(length))));
      expect(response.status, `string of ${length}`).toBe(status);
      const body = await expectFailedEnvelope(response);
      if (status === 400) expect(body.msg).toContain(door.strictFields[field]);
      else expect(body.msg).toMatch(/exceeds \d+ bytes|too large/);
    }
  });

  it('deep nesting and wide objects: a 4xx, never a 500', async () => {
    const field = Object.keys(door.valid())[0] ?? 'x';
    const wide = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`k${i}`, i]));
    for (const body of [
      deeplyNested(5_000),
      `{"${field}": ${deeplyNested(5_000)}}`,
      `{"${field}": ${deeplyNested(20_000)}}`,
      JSON.stringify(wide),
    ]) {
      const response = await send(door, body);
      expect([400, 413]).toContain(response.status);
      await expectFailedEnvelope(response);
    }
    const extra = await send(door, JSON.stringify({ ...door.valid(), extra: wide }));
    expect(extra.status).toBe(400);
    await extra.body?.cancel();
  });

  it('a body sent with another Content-Type is refused with 415 saying so', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const response = await send(door, JSON.stringify(door.valid()), type);
      expect(response.status).toBe(415);
      expect((await expectFailedEnvelope(response)).msg).toContain('Content-Type');
    }
  });
});

describe('Authorization header fuzzing', () => {
  it('any header value that is not a key: 401 with a failed envelope, never a 500', async () => {
    const headerValue = fc.oneof(
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 250, maxLength: 600 }),
      fc.constantFrom('Bearer', 'Bearer ', 'Basic YWRtaW46YWRtaW4=', 'api_', 'pub_', 'null', 'undefined'),
    );
    await fc.assert(
      fc.asyncProperty(headerValue, fc.constantFrom(...doors), async (value, door) => {
        const response = await call(door.method, door.path(), {
          body: JSON.stringify(door.valid()),
          headers: { 'Content-Type': 'application/json', Authorization: value },
        });
        expect(response.status).toBe(401);
        await expectFailedEnvelope(response);
      }),
      fuzzRuns(60),
    );
  });
});
