/**
 * Every door, walked from the OpenAPI document (issue 21): for each endpoint, a card number
 * (the 26 spellings in turn) in every string field of its JSON body, as a JSON key, in each path
 * parameter and in the headers the service reads (Idempotency-Key, Tokenizer-Parent-Origin,
 * X-CSRF-Token). Whatever the answer, it must not say the number back, and afterwards no D1
 * table, KV namespace, R2 object or console line holds it.
 */
import { env, exports } from 'cloudflare:workers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument, findOperation } from '../../src/openapi/document';
import { ADMIN_TOKEN } from '../helpers/api';
import { CARD_SPELLINGS, SPELLED_CARD_NUMBERS } from '../helpers/card-spellings';
import { buildWorld, endpoints, type Endpoint, type World } from '../helpers/endpoints';
import { captureConsole, describeFindings, findSecrets, scanD1, scanKv, scanR2, type Finding, type Secrets } from '../helpers/leak-scan';

const SECRETS: Secrets = { cardNumbers: SPELLED_CARD_NUMBERS, cvcs: [] };
const ASCII_SPELLINGS = CARD_SPELLINGS.filter((spelling) => /^[\x21-\x7e]+$/.test(spelling));
type Schema = Record<string, unknown>;
/** Fixed documents: their examples show test card numbers on purpose. */
const DOCUMENTS = new Set(['GET /openapi.json', 'GET /docs']);

let turn = 0;
/** The spellings in turn, so that the walk sends each of them through many doors. */
const nextSpelling = () => CARD_SPELLINGS[turn++ % CARD_SPELLINGS.length] as string;

function keyFor(endpoint: Endpoint, world: World): string | null {
  if (endpoint.auth === 'admin') return ADMIN_TOKEN;
  if (endpoint.auth === 'none') return null;
  return world.owner.secretKey;
}

function resolve(schema: Schema | undefined, document: Schema): Schema | undefined {
  const ref = schema?.$ref;
  if (typeof ref !== 'string') return schema;
  return ref.split('/').slice(1).reduce<unknown>((node, part) => (node as Schema)[part], document) as Schema;
}

/** Whether a JSON-schema node accepts a string, or a list of strings (then the value is a list). */
function stringShape(schema: Schema | undefined, document: Schema): 'string' | 'list' | null {
  const node = resolve(schema, document);
  if (!node) return null;
  const types = ([] as unknown[]).concat(node.type ?? []);
  if (types.includes('string')) return 'string';
  if (types.includes('array') && stringShape(node.items as Schema, document) === 'string') return 'list';
  for (const option of [...((node.anyOf as Schema[]) ?? []), ...((node.oneOf as Schema[]) ?? [])]) {
    const shape = stringShape(option, document);
    if (shape) return shape;
  }
  return null;
}

/** The string fields of the endpoint's JSON body, as the OpenAPI document declares them. */
function stringFields(endpoint: Endpoint, world: World): [string, 'string' | 'list'][] {
  const document = openApiDocument() as unknown as Schema;
  const [method = 'GET'] = endpoint.route.split(' ');
  const found = findOperation(openApiDocument(), method, endpoint.path(world).split('?')[0] ?? '');
  const content = (found?.operation.requestBody as Schema | undefined)?.content as Record<string, Schema> | undefined;
  const schema = resolve(content?.['application/json']?.schema as Schema | undefined, document);
  // A body that comes in one of several shapes (POST /api/transaction: the flat columns or FluidPay's):
  // the string fields of every shape.
  const shapes = [schema, ...(((schema?.anyOf ?? schema?.oneOf ?? []) as Schema[]).map((option) => resolve(option, document)))];
  const properties = Object.assign({}, ...shapes.map((shape) => shape?.properties ?? {})) as Record<string, Schema>;
  return Object.entries(properties).flatMap(([name, property]) => {
    const shape = stringShape(property, document);
    return shape ? [[name, shape] as [string, 'string' | 'list']] : [];
  });
}

describe('a card number at every door the OpenAPI document lists', () => {
  let world: World;
  const said: string[] = [];
  const statuses: number[] = [];
  let consoleCapture: ReturnType<typeof captureConsole>;
  beforeAll(async () => {
    world = await buildWorld();
    consoleCapture = captureConsole();
  }, 60_000);
  afterAll(() => consoleCapture.restore());

  async function send(endpoint: Endpoint, path: string, body: unknown, headers: Record<string, string> = {}): Promise<void> {
    const [method = 'GET'] = endpoint.route.split(' ');
    const init: RequestInit = { method, headers: { ...endpoint.headers, ...headers } };
    const key = keyFor(endpoint, world);
    if (key) (init.headers as Record<string, string>).Authorization = key;
    if (body !== undefined) {
      init.body = body instanceof FormData || typeof body === 'string' ? body : JSON.stringify(body);
      if (!(body instanceof FormData) && !(init.headers as Record<string, string>)['Content-Type']) {
        (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
      }
    }
    const response = await exports.default.fetch(new Request(`http://binbatch.test${path}`, init));
    statuses.push(response.status);
    const answer = `${response.status} ${[...response.headers].map(([name, value]) => `${name}: ${value}`).join('; ')} ${await response.text()}`;
    // The documents quote the examples' test cards in their examples, whatever was asked.
    if (!DOCUMENTS.has(endpoint.route)) said.push(answer);
  }

  it('in every string field of every JSON body', async () => {
    let fields = 0;
    for (const endpoint of endpoints) {
      const base = endpoint.body?.(world);
      if (base === undefined || base instanceof FormData || typeof base !== 'object' || base === null) continue;
      for (const [field, shape] of stringFields(endpoint, world)) {
        const spelling = nextSpelling();
        await send(endpoint, endpoint.path(world), { ...base, [field]: shape === 'list' ? [spelling] : spelling });
        fields++;
      }
    }
    // Transactions, vault customers and payment methods, webhooks, merchants, processors, tokens...
    expect(fields).toBeGreaterThan(80);
  }, 120_000);

  it('as a JSON key, in each path parameter, and in the headers the service reads', async () => {
    const before = statuses.length;
    let sent = 0;
    for (const endpoint of endpoints) {
      const base = endpoint.body?.(world);
      const spelling = nextSpelling();
      if (base !== undefined && typeof base === 'object' && base !== null && !(base instanceof FormData)) {
        await send(endpoint, endpoint.path(world), { ...base, [spelling]: 'x' });
        sent++;
      }
      const [, route = ''] = endpoint.route.split(' ');
      if (route.includes(':')) {
        sent++;
        const path = route.replace(/:[a-z_]+/gi, encodeURIComponent(nextSpelling()));
        await send(endpoint, path, base instanceof FormData ? undefined : base);
      }
      const ascii = ASCII_SPELLINGS[turn++ % ASCII_SPELLINGS.length] as string;
      await send(endpoint, endpoint.path(world), base instanceof FormData ? undefined : base, {
        'Idempotency-Key': ascii,
        'Tokenizer-Parent-Origin': `https://${ascii}.example`,
        Origin: 'http://binbatch.test',
        'X-CSRF-Token': ascii,
      });
      sent++;
    }
    // Every door answered (what it said is scanned below), and none with a server error.
    const answered = statuses.slice(before);
    expect(answered).toHaveLength(sent);
    expect(sent).toBeGreaterThan(endpoints.length);
    expect(answered.filter((status) => status >= 500)).toEqual([]);
  }, 120_000);

  it('nothing stored, answered or logged holds any of the numbers', async () => {
    const findings: Finding[] = [
      ...(await scanD1(env.DB, SECRETS)),
      ...(await scanKv(env.BIN_CACHE, 'BIN_CACHE', SECRETS)),
      ...(await scanKv(env.TOKENS, 'TOKENS', SECRETS)),
      ...(await scanR2(env.FILES, SECRETS)),
      ...said.flatMap((text, i) => findSecrets(text, SECRETS, `answer ${i}`)),
      ...consoleCapture.lines.flatMap((line, i) => findSecrets(line, SECRETS, `console line ${i}`)),
    ];
    expect(findings, describeFindings(findings)).toEqual([]);
    expect(turn).toBeGreaterThan(CARD_SPELLINGS.length * 4);
  });
});
