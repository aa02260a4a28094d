/**
 * The OpenAPI document against the app: every route the app serves is documented (and nothing
 * else is), the curl examples of the README and the docs pages are in it, and it and its docs page need no key.
 *
 * A new route passes the route walk once src/openapi/paths/<resource>.ts registers it (method
 * and path as Hono lists them, `:id` written `{id}`), with every status it can answer: the contract
 * check in test/helpers/contract.ts then holds each of its answers in every test to that entry.
 * A new curl example in the README or a docs page needs `npm run readme:examples` (the freshness test says so).
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { curlExamples, readmeExamplesModule, type ExamplePage } from '../../scripts/readme-curls.mjs';
import { app } from '../../src/app';
import { isPagePath, pages } from '../../src/routes/pages';
import { findOperation, openApiDocument } from '../../src/openapi/document';
import { call } from '../helpers/api';
import { contractDocument } from '../helpers/contract';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** "METHOD /path/{param}" of every handler the app registered (middleware is method ALL). */
function appRoutes(): string[] {
  // The API app and the pages app (the tokenizer's and the docs page's files), as index.ts dispatches.
  const routes = [...app.routes, ...pages.routes]
    .filter((route) => route.method !== 'ALL')
    .map((route) => `${route.method} ${route.path.replace(/:([^/]+)/g, '{$1}').replace(/(.)\/$/, '$1')}`);
  return [...new Set(routes)].sort();
}

function documentedRoutes(): string[] {
  const routes: string[] = [];
  for (const [path, item] of Object.entries(openApiDocument().paths ?? {})) {
    for (const method of METHODS) if ((item as Record<string, unknown>)[method]) routes.push(`${method.toUpperCase()} ${path}`);
  }
  return routes.sort();
}

describe('GET /openapi.json', () => {
  it('serves the OpenAPI 3.1 document without a key, with its five security schemes (three bearer keys, the stream token, the console cookie)', async () => {
    const response = await call('GET', '/openapi.json');
    expect(response.status).toBe(200);
    const document = await response.json<{ openapi: string; components: { securitySchemes: Record<string, unknown> } }>();
    expect(document.openapi).toBe('3.1.0');
    expect(document.components.securitySchemes).toEqual({
      secretKey: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'api_… (secret key)' }),
      publicKey: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'pub_… (public key)' }),
      adminToken: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'ADMIN_TOKEN' }),
      streamToken: expect.objectContaining({ type: 'apiKey', in: 'query', name: 'token' }),
      consoleSession: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: 'binbatch_console' }),
    });
  });

  it('is the document every answer of the tests is held to (the copy built once in Node is the one the Worker serves)', async () => {
    const served = await (await call('GET', '/openapi.json')).json();
    expect(contractDocument()).toEqual(served);
    expect(contractDocument()).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it('lists every route the app serves, and only those (walks app.routes)', () => {
    expect(documentedRoutes()).toEqual(appRoutes());
  });

  it('documents the failed envelope for every error status of every operation, and a 500', () => {
    for (const route of documentedRoutes()) {
      const [method = '', path = ''] = route.split(' ');
      const operation = findOperation(openApiDocument(), method, path.replace(/\{[^}]+\}/g, 'x'))?.operation;
      const responses = (operation?.responses ?? {}) as Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
      // Browser pages answer text, not the JSON API's envelope.
      if (isPagePath(path)) continue;
      for (const [status, response] of Object.entries(responses)) {
        if (Number(status) >= 400) expect(response.content?.['application/json']?.schema?.$ref, `${route} ${status}`).toBe('#/components/schemas/FailedEnvelope');
      }
      if (!['/healthz', '/openapi.json', '/docs'].includes(path)) expect(Object.keys(responses), route).toContain('500');
    }
  });

  it('describes the streamed upload as multipart with a file part, or text/csv', () => {
    const upload = findOperation(openApiDocument(), 'POST', '/api/filebatch')?.operation as { requestBody: { content: Record<string, { schema: { required?: string[] } }> } };
    expect(Object.keys(upload.requestBody.content).sort()).toEqual(['multipart/form-data', 'text/csv']);
    expect(upload.requestBody.content['multipart/form-data']?.schema.required).toEqual(['file']);
  });
});

describe('the curl examples of the README and the docs pages', () => {
  const pages = JSON.parse(env.TEST_EXAMPLE_PAGES ?? '[]') as ExamplePage[];

  it('are copied into the document as they are in the pages (npm run readme:examples)', async () => {
    const { README_EXAMPLES } = await import('../../src/openapi/readme-examples');
    const expected = readmeExamplesModule(pages);
    // Compare the data, not the file's formatting.
    expect(README_EXAMPLES).toEqual(JSON.parse(expected.slice(expected.indexOf('= [') + 2, expected.lastIndexOf(';'))));
  });

  it('each appears in the x-codeSamples of the operation it calls, literal JSON bodies answered with success as request examples', () => {
    const examples = curlExamples(pages);
    expect(examples.length).toBeGreaterThan(25);
    for (const example of examples) {
      const found = findOperation(openApiDocument(), example.method, example.path);
      expect(found, `${example.method} ${example.path}`).not.toBeNull();
      const samples = (found?.operation['x-codeSamples'] ?? []) as { source: string }[];
      expect(samples.map((sample) => sample.source)).toContain(example.source);
      if (example.body?.startsWith('{') && !example.body.includes('$')) {
        const media = (found?.operation.requestBody as { content: Record<string, { examples: Record<string, { value: unknown }> }> }).content['application/json'];
        const values = Object.values(media?.examples ?? {}).map((e) => e.value);
        // An example meant to fail (its documented answer is a 4xx) is a code sample only: a request
        // example is a body the operation takes.
        const answer = Number(/^# → (\d{3}) /m.exec(example.source)?.[1] ?? 200);
        if (answer >= 400) expect(values, example.source).not.toContainEqual(JSON.parse(example.body));
        else expect(values).toContainEqual(JSON.parse(example.body));
      }
    }
  });
});

describe('GET /docs', () => {
  it('serves a page that loads only same-origin files, under a strict Content-Security-Policy', async () => {
    const response = await call('GET', '/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('Content-Type')).toMatch(/^text\/html/);
    const csp = response.headers.get('Content-Security-Policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const html = await response.text();
    const references = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '');
    expect(references).toEqual(['/docs/vendor/swagger-ui.css', '/openapi.json', '/docs/vendor/swagger-ui-bundle.js', '/docs/docs.js']);
    expect(html).not.toMatch(/<script>(?!<\/script>)|https?:\/\//);
  });
});
