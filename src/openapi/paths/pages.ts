/**
 * The browser pages this Worker serves beside the API (src/routes/pages.ts): the hosted tokenizer's
 * script, frame and frame files, and the docs page's files. Not JSON: described by media type.
 */
import type { ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { NO_AUTH, type Registry } from './common';

const tags = ['Tokenizer'];

function file(description: string, mediaType: string): Record<number, ResponseConfig> {
  return {
    200: { description, content: { [mediaType]: { schema: z.string() } } },
    304: { description: 'Not modified (If-None-Match matched the ETag).' },
    404: { description: 'No such file.', content: { 'text/plain': { schema: z.string() } } },
  };
}

/** Each file with the operationId and tag it is listed under: the tokenizer's, the docs page's, the console's. */
const FILES: [path: string, operationId: string, tag: string, summary: string, mediaType: string][] = [
  ['/tokenizer/v1/tokenizer.js', 'tokenizerScript', 'Tokenizer', "The script for the merchant's checkout page (BinbatchTokenizer); cached a year", 'text/javascript'],
  ['/tokenizer/v1/frame.js', 'tokenizerFrameScript', 'Tokenizer', "The card frame's script; revalidated on every load", 'text/javascript'],
  ['/tokenizer/v1/card-checks.js', 'tokenizerCardChecksScript', 'Tokenizer', "The card frame's Luhn, brand and expiry checks; revalidated on every load", 'text/javascript'],
  ['/tokenizer/v1/frame.css', 'tokenizerFrameStyles', 'Tokenizer', "The card frame's styles; revalidated on every load", 'text/css'],
  ['/docs/vendor/swagger-ui-bundle.js', 'docsSwaggerUiScript', 'Service', 'Swagger UI, for the docs page', 'text/javascript'],
  ['/docs/vendor/swagger-ui.css', 'docsSwaggerUiStyles', 'Service', "Swagger UI's styles, for the docs page", 'text/css'],
  ['/docs/docs.js', 'docsScript', 'Service', 'The docs page script: renders /openapi.json', 'text/javascript'],
  ['/console/assets/session.js', 'consoleSessionScript', 'Console', "The console pages' shared requests and sign-out; revalidated on every load", 'text/javascript'],
  ['/console/assets/console.js', 'consoleScript', 'Console', "The batch console's script; revalidated on every load", 'text/javascript'],
  ['/console/assets/console.css', 'consoleStyles', 'Console', "The batch console's styles; revalidated on every load", 'text/css'],
  ['/console/assets/transactions.js', 'consoleTransactionsScript', 'Console', "The console's Transactions page script; revalidated on every load", 'text/javascript'],
];

export function registerPages(registry: Registry): void {
  for (const [path, operationId, tag, summary, mediaType] of FILES) {
    registry.registerPath({
      method: 'get',
      path,
      operationId,
      tags: [tag],
      summary,
      security: NO_AUTH,
      responses: file(summary, mediaType),
    });
  }
  registry.registerPath({
    method: 'get',
    path: '/console',
    operationId: 'consolePage',
    tags: ['Console'],
    summary: 'The batch console: sign in with the secret key, upload a file, watch it, read its summary, download its results',
    description:
      'A page of this origin only: strict CSP (no inline script, nothing from another origin, `frame-ancestors \'none\'`), ' +
      '`Cache-Control: no-store`. Its requests go to the /console routes with the session cookie.',
    security: NO_AUTH,
    responses: { 200: { description: 'The console page.', content: { 'text/html': { schema: z.string() } } } },
  });
  registry.registerPath({
    method: 'get',
    path: '/console/transactions',
    operationId: 'consoleTransactionsPage',
    tags: ['Console'],
    summary: "The console's Transactions page: search with the common filters, pages of results, a transaction's lifecycle, exports",
    description: 'The same page rules as GET /console (its origin only, strict CSP, no-store); it signs in through GET /console.',
    security: NO_AUTH,
    responses: { 200: { description: 'The Transactions page.', content: { 'text/html': { schema: z.string() } } } },
  });
  registry.registerPath({
    method: 'get',
    path: '/tokenizer/v1/frame',
    operationId: 'tokenizerFrame',
    tags,
    summary: "The card frame (iframe) for a merchant's public key",
    description:
      "Served with `Content-Security-Policy: frame-ancestors` set to the merchant's `tokenizer_origins`, " +
      '`Cache-Control: no-store` and no `X-Frame-Options`. Refusals are plain text that no page may frame.',
    security: NO_AUTH,
    request: { query: z.object({ key: z.string().meta({ description: "The merchant's public key (pub_…)." }) }) },
    responses: {
      200: { description: 'The frame page.', content: { 'text/html': { schema: z.string() } } },
      400: { description: 'No key, or not a public key.', content: { 'text/plain': { schema: z.string() } } },
      401: { description: 'Unknown or revoked public key.', content: { 'text/plain': { schema: z.string() } } },
      403: { description: 'The merchant lists no tokenizer origin.', content: { 'text/plain': { schema: z.string() } } },
    },
  });
}
