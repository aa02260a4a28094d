/**
 * Building blocks for the operations of the OpenAPI document: the security requirements, JSON
 * content, and the error answers (the failed envelope) each status stands for.
 */
import type { OpenAPIRegistry, ResponseConfig, ZodContentObject } from '@asteasolutions/zod-to-openapi';
import type { z } from 'zod';
import { failedEnvelopeSchema } from '../../schemas/envelope';

export type Registry = OpenAPIRegistry;

/** Security requirement objects; the schemes are registered in document.ts. */
type Security = { [scheme: string]: string[] }[];
export const SECRET_KEY: Security = [{ secretKey: [] }];
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
  404: "Unknown resource, including another merchant's.",
  409: 'Conflict with the state of the resource.',
  410: 'Expired.',
  413: 'The request body is too large.',
  429: 'Rate limited: retry after `Retry-After` seconds.',
  500: 'Unexpected error: a generic message and the `request_id`; nothing from the request is echoed.',
};

const retryAfter = { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' as const } } };

/** The failed envelope for each status, with what it means here (`overrides` say it more precisely). */
export function errors(statuses: number[], overrides: Record<number, string> = {}): Record<number, ResponseConfig> {
  const responses: Record<number, ResponseConfig> = {};
  for (const status of [...statuses, 500]) {
    responses[status] = {
      description: overrides[status] ?? ERROR_MEANINGS[status] ?? 'Error.',
      content: json(failedEnvelopeSchema),
      ...(status === 429 ? { headers: retryAfter } : {}),
    };
  }
  return responses;
}
