/**
 * The API contract, enforced on every answer the tests receive: `call()` (test/helpers/api.ts), the
 * one door every integration and security test's requests go through, hands each response here.
 * Its status must be documented for that operation in the OpenAPI document, the headers a client
 * acts on (X-Request-Id, Retry-After, …) must be listed for that status, its Content-Type must be
 * one the document names for that status, and a JSON body must validate against the documented
 * schema (response schemas are strict, so an undocumented field fails too).
 *
 * Adding a route (webhooks, tokenizer pages, ...): register it in src/openapi/paths/<resource>.ts
 * (or a new file listed in RESOURCES in src/openapi/document.ts) with every status it answers;
 * nothing here changes. A route that cannot be described (none should) fails the route-walk test
 * in test/integration/openapi.test.ts, and any answer of it fails here.
 */
import { Validator, type Schema } from '@cfworker/json-schema';
import { inject } from 'vitest';
import { findOperation, matchesTemplate, type OpenAPIObject } from '../../src/openapi/document';
import { isPagePath } from '../../src/routes/pages';

type Json = Record<string, unknown>;

const validators = new Map<string, Validator>();

let documentCopy: OpenAPIObject | undefined;
/**
 * The document, as built once in Node by test/global-setup.ts and handed to this file: the same
 * code builds it as the Worker's (test/integration/openapi.test.ts compares the two), and each file
 * would otherwise spend a few hundred milliseconds building it again.
 */
export function contractDocument(): OpenAPIObject {
  documentCopy ??= JSON.parse(inject('openApiDocument')) as OpenAPIObject;
  return documentCopy;
}

/** Throws, naming the operation and what differs, when the answer is not the documented one. */
export async function assertDocumentedAnswer(method: string, url: string, response: Response): Promise<void> {
  const document = contractDocument();
  const parsed = new URL(url, 'http://binbatch.test');
  // `POST /api/filebatch?validate_only=true` is documented as the operation it is, POST /api/filebatch/validate.
  const path = parsed.pathname === '/api/filebatch' && parsed.searchParams.get('validate_only') === 'true' ? '/api/filebatch/validate' : parsed.pathname;
  const found = findOperation(document, method, path);
  const where = `${method} ${path}`;
  let responses: Json;
  let label: string;
  if (found) {
    responses = found.operation.responses as Json;
    label = `${method} ${found.template}`;
  } else {
    // Not an operation: the app's 404 (no route) or 405 (the path exists with other methods), or
    // the 401 of the key check that guards everything under /api and /admin before routing.
    const known = Object.keys(document.paths ?? {}).some((template) => matchesTemplate(template, path));
    const allowed = [401, known ? 405 : 404];
    if (!allowed.includes(response.status)) {
      throw new Error(`${where} is not in the OpenAPI document, yet answered ${response.status} (expected ${allowed.join(' or ')})`);
    }
    // The pages app (tokenizer, docs files) answers plain text; the API, the failed envelope.
    const failed = isPagePath(path)
      ? { content: { 'text/plain': { schema: { type: 'string' } } } }
      : { content: { 'application/json': { schema: { $ref: '#/components/schemas/FailedEnvelope' } } } };
    responses = Object.fromEntries(allowed.map((status) => [status, failed]));
    label = `${where} (unrouted)`;
  }
  const spec = (responses[String(response.status)] ?? responses.default) as Json | undefined;
  if (!spec) {
    throw new Error(`${label} answered ${response.status}, which the OpenAPI document does not list (listed: ${Object.keys(responses).join(', ')})`);
  }
  if (found) assertDocumentedHeaders(label, response, spec);
  const content = spec.content as Record<string, Json> | undefined;
  const type = (response.headers.get('Content-Type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!content) {
    const text = await response.clone().text();
    if (text !== '') throw new Error(`${label} ${response.status}: the document describes no body, but one was sent (${type})`);
    return;
  }
  const media = content[type];
  if (!media) throw new Error(`${label} ${response.status}: Content-Type ${type || '(none)'} is not documented (${Object.keys(content).join(', ')})`);
  if (type !== 'application/json') return;
  const text = await response.clone().text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${label} ${response.status}: the body is not JSON: ${text.slice(0, 200)}`);
  }
  const key = `${label} ${response.status}`;
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator(dereference(document, media.schema) as Schema, '2020-12', false);
    validators.set(key, validator);
  }
  const result = validator.validate(body);
  if (!result.valid) {
    const problems = result.errors
      .filter((error) => error.keyword !== 'properties' && error.keyword !== 'allOf' && error.keyword !== 'anyOf' && error.keyword !== '$ref')
      .slice(0, 8)
      .map((error) => `${error.instanceLocation}: ${error.error}`);
    throw new Error(`${label} ${response.status}: the body does not match the OpenAPI document:\n  ${problems.join('\n  ')}\nbody: ${text.slice(0, 500)}`);
  }
}

/**
 * Headers a client acts on: when an answer carries one, the document lists it for that status (a
 * client generated from the document can then read it). X-Request-Id (and X-Correlation-Id) is on every answer.
 */
const CLIENT_HEADERS = ['X-Request-Id', 'X-Correlation-Id', 'Retry-After', 'Idempotent-Replayed', 'Content-Disposition'];

function assertDocumentedHeaders(label: string, response: Response, spec: Json): void {
  const documented = new Set(Object.keys((spec.headers ?? {}) as Json).map((name) => name.toLowerCase()));
  for (const name of CLIENT_HEADERS) {
    if (response.headers.has(name) && !documented.has(name.toLowerCase())) {
      throw new Error(`${label} ${response.status}: the answer carries ${name}, which the OpenAPI document does not list for it`);
    }
  }
}

/** The schema with every `#/components/schemas/…` reference replaced by what it names (no cycles here). */
function dereference(document: OpenAPIObject, schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((item) => dereference(document, item));
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as Json).$ref;
  if (typeof ref === 'string') {
    const name = ref.replace('#/components/schemas/', '');
    const target = (document.components?.schemas as Json | undefined)?.[name];
    if (target === undefined) throw new Error(`unresolved reference ${ref}`);
    return dereference(document, target);
  }
  return Object.fromEntries(Object.entries(schema as Json).map(([k, v]) => [k, k === 'example' || k === 'examples' ? v : dereference(document, v)]));
}
