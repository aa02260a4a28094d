/**
 * Response headers over every endpoint and outcome: nothing may be MIME-sniffed or cached (bodies
 * carry card metadata and masked numbers), and no browser origin is ever granted access: the
 * secret-key API is server-to-server, so there is no CORS, preflight included.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call } from '../helpers/api';
import { buildWorld, endpoints, request, type Endpoint, type World } from '../helpers/endpoints';

let world: World;
beforeAll(async () => {
  world = await buildWorld();
});

const ORIGIN = 'https://evil.example';

function expectSafeHeaders(response: Response, what: string): void {
  expect(response.headers.get('X-Content-Type-Options'), what).toBe('nosniff');
  expect(response.headers.get('Cache-Control'), what).toBe('no-store');
  const cors = [...response.headers.keys()].filter((name) => name.toLowerCase().startsWith('access-control-'));
  expect(cors, what).toEqual([]);
}

function rightKey(endpoint: Endpoint): string | null {
  if (endpoint.auth === 'none') return null;
  if (endpoint.auth === 'admin') return ADMIN_TOKEN;
  return endpoint.auth === 'any' ? world.owner.publicKey : world.owner.secretKey;
}

describe.each(endpoints)('$route', (endpoint) => {
  it('success, refusal and bad-input answers carry nosniff and no-store, and no CORS header', async () => {
    const outcomes: [string, Response][] = [
      ['no key', await request(endpoint, world, null, { Origin: ORIGIN })],
      ['bad key', await request(endpoint, world, 'api_' + 'Z'.repeat(32), { Origin: ORIGIN })],
      ['right key', await request(endpoint, world, rightKey(endpoint), { Origin: ORIGIN })],
    ];
    if (endpoint.body) {
      const [method] = endpoint.route.split(' ');
      outcomes.push([
        'malformed body',
        await call(method ?? 'POST', endpoint.path(world), {
          key: rightKey(endpoint),
          body: '{"oops": ',
          headers: { 'Content-Type': 'application/json', Origin: ORIGIN },
        }),
      ]);
    }
    for (const [what, response] of outcomes) {
      expectSafeHeaders(response, `${endpoint.route}, ${what} (${response.status})`);
      // The docs page is the one HTML answer, the progress stream the one event stream; everything
      // else is JSON or a CSV download.
      const type =
        endpoint.route === 'GET /docs'
          ? /^text\/html/
          : what === 'right key' && endpoint.successType
            ? endpoint.successType
            : /^application\/json|^text\/csv/;
      if (response.status !== 204) expect(response.headers.get('Content-Type'), what).toMatch(type);
      await response.body?.cancel();
    }
  });

  it('a CORS preflight is not granted', async () => {
    const [method] = endpoint.route.split(' ');
    const response = await call('OPTIONS', endpoint.path(world), {
      headers: {
        Origin: ORIGIN,
        'Access-Control-Request-Method': method ?? 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type',
      },
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expectSafeHeaders(response, `OPTIONS ${endpoint.route}`);
    await response.body?.cancel();
  });
});

describe('answers outside the table', () => {
  it('404, 405 and 413 answers carry the same headers', async () => {
    const answers = [
      await call('GET', '/api/nothing-here', { headers: { Origin: ORIGIN } }),
      await call('PUT', '/api/tokenizer/token', { key: world.owner.publicKey, headers: { Origin: ORIGIN } }),
      await call('POST', '/api/tokenizer/token', {
        key: world.owner.publicKey,
        body: JSON.stringify({ cc_number: '4'.repeat(70_000) }),
        headers: { 'Content-Type': 'application/json', Origin: ORIGIN },
      }),
    ];
    expect(answers.map((r) => r.status)).toEqual([404, 405, 413]);
    for (const response of answers) {
      expectSafeHeaders(response, String(response.status));
      await response.body?.cancel();
    }
  });
});
