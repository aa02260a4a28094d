import { healthSchema } from '../../schemas/envelope';
import { NO_AUTH, ok, type Registry } from './common';

export function registerService(registry: Registry): void {
  registry.registerPath({
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    tags: ['Service'],
    summary: 'Liveness',
    security: NO_AUTH,
    responses: { 200: ok('Up.', healthSchema, { status: 'ok' }) },
  });
  registry.registerPath({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapiDocument',
    tags: ['Service'],
    summary: 'This document (OpenAPI 3.1)',
    security: NO_AUTH,
    responses: { 200: { description: 'The OpenAPI document.', content: { 'application/json': { schema: { type: 'object' } } } } },
  });
  registry.registerPath({
    method: 'get',
    path: '/docs',
    operationId: 'docsPage',
    tags: ['Service'],
    summary: 'The documentation page rendering this document (served by this Worker, works offline)',
    security: NO_AUTH,
    responses: { 200: { description: 'HTML page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  });
}
