/**
 * Building blocks for the operations of the OpenAPI document: the security requirements, JSON
 * content, and the error answers (the failed envelope) each status stands for.
 */
import type { OpenAPIRegistry, ResponseConfig, RouteConfig, ZodContentObject } from '@asteasolutions/zod-to-openapi';
import type { z } from 'zod';
import { failedEnvelopeSchema } from '../../schemas/envelope';

export type Registry = OpenAPIRegistry;

/** Security requirement objects; the schemes are registered in document.ts. */
type Security = { [scheme: string]: string[] }[];
export const SECRET_KEY: Security = [{ secretKey: [] }];
/** The progress stream: the secret key, or (from a browser's EventSource) a stream token in `?token=`. */
export const SECRET_KEY_OR_STREAM_TOKEN: Security = [{ secretKey: [] }, { streamToken: [] }];
export const ANY_KEY: Security = [{ secretKey: [] }, { publicKey: [] }];
export const ADMIN_TOKEN: Security = [{ adminToken: [] }];
export const NO_AUTH: Security = [];

export function json(schema: z.ZodType, example?: unknown): ZodContentObject {
  return { 'application/json': example === undefined ? { schema } : { schema, example } };
}

export function ok(description: string, schema: z.ZodType, example?: unknown): ResponseConfig {
  return { description, content: json(schema, example) };
}

/** What each error status means in this API (docs/api.md, "Conventions of the API"). */
const ERROR_MEANINGS: Record<number, string> = {
  400: 'Invalid input: the `msg` names the field (or the CSV line) and the problem; validation errors list every field in `errors`.',
  401: 'Missing, unknown, revoked or wrong-type key (or admin token).',
  402: 'Declined by the processor: `msg` says what it answered.',
  404: "Unknown resource, including another merchant's.",
  409: 'Conflict with the state of the resource.',
  410: 'Expired.',
  413: 'The request body is too large.',
  415: 'The body is of a media type this operation does not take (a JSON operation takes `application/json` or `+json` only); docs/api-decisions.md.',
  429: 'Rate limited: retry after `Retry-After` seconds.',
  500: 'Unexpected error: a generic message and the `request_id`; nothing from the request is echoed.',
};

const retryAfter = { 'Retry-After': { description: 'Seconds to wait before asking again.', schema: { type: 'integer' as const, minimum: 0 } } };
/** Statuses that may carry Retry-After: a rate limit, and a conflict that passes (a row still with the processor). */
const RETRY_STATUSES = new Set([409, 429]);

/** The failed envelope for each status, with what it means here (`overrides` say it more precisely). */
export function errors(statuses: number[], overrides: Record<number, string> = {}): Record<number, ResponseConfig> {
  const responses: Record<number, ResponseConfig> = {};
  for (const status of [...statuses, 500]) {
    responses[status] = {
      description: overrides[status] ?? ERROR_MEANINGS[status] ?? 'Error.',
      content: json(failedEnvelopeSchema),
      ...(RETRY_STATUSES.has(status) ? { headers: retryAfter } : {}),
    };
  }
  return responses;
}

/** What every answer of every operation carries (document.ts adds it to each response). */
export const REQUEST_ID_HEADER = {
  'X-Request-Id': {
    description: 'The id of this request in the logs; quote it when reporting a problem.',
    schema: { type: 'string' as const },
  },
  'X-Correlation-Id': {
    description: "The same id as X-Request-Id, under the name FluidPay's clients read (their SDKs quote it in errors).",
    schema: { type: 'string' as const },
  },
};

/**
 * What holds for every operation, added where it is registered (document.ts registers through
 * this), so a new route gets it without saying so: each answer documents `X-Request-Id`, and an
 * operation with a body documents the 415 a body of a media type it does not take gets.
 */
export function withHouseRules(route: RouteConfig): RouteConfig {
  const responses = { ...route.responses };
  const body = route.request?.body;
  if (body && !responses[415]) {
    responses[415] = { description: ERROR_MEANINGS[415] ?? 'Unsupported Media Type.', content: json(failedEnvelopeSchema) };
  }
  for (const [status, response] of Object.entries(responses)) {
    if ('$ref' in response) continue;
    responses[status] = { ...response, headers: { ...REQUEST_ID_HEADER, ...(response.headers as Record<string, unknown> | undefined) } as ResponseConfig['headers'] };
  }
  return { ...route, responses };
}
