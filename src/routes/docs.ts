/**
 * GET /openapi.json (the OpenAPI 3.1 document) and GET /docs (a page rendering it with Swagger UI,
 * whose files this Worker serves itself as static assets from public/docs/). No key needed.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { openApiDocument } from '../openapi/document';

/** Everything the page loads comes from this origin; no inline script, no third-party request. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>binbatch API reference</title>
<link rel="stylesheet" href="/docs/vendor/swagger-ui.css">
</head>
<body>
<main id="swagger-ui" aria-label="binbatch API reference"></main>
<noscript>This page needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<script src="/docs/vendor/swagger-ui-bundle.js"></script>
<script src="/docs/docs.js"></script>
</body>
</html>
`;

export const docs = new Hono<AppEnv>()
  .get('/openapi.json', (c) => c.json(openApiDocument()))
  .get('/docs', (c) => {
    c.header('Content-Security-Policy', DOCS_CSP);
    return c.html(DOCS_PAGE);
  });
